package localcluster_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/localcluster"
	"github.com/blockfs/blockfs/namenode"
)

// TestHDFSSnapshot (issue 23): files written, a snapshot taken, the live
// files appended to, overwritten, renamed and deleted; the snapshot reads
// back byte for byte, the deleted files' replicas stay on the datanodes
// while the namenodes delete those of a file no snapshot holds, and all
// of it survives a restart of every namenode (from a Raft snapshot and
// the log). Deleting the snapshot then releases the blocks only it held:
// their replicas go from every datanode, and the live files still read.
func TestHDFSSnapshot(t *testing.T) {
	const bs = 64 << 10
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Config{Namenodes: 3, Datanodes: 3, Dir: t.TempDir(),
		Namenode: func(_ int, nc *namenode.Config) { nc.Raft.SnapshotEvery = 16 }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	opts := client.CreateOptions{Replication: 2, BlockSize: bs}
	random := func(n int) []byte {
		b := make([]byte, n)
		rand.Read(b)
		return b
	}
	files := map[string][]byte{
		"/proj/a":     random(3*bs + 1000), // appended to
		"/proj/b":     random(2 * bs),      // overwritten
		"/proj/c":     random(bs + 7),      // deleted
		"/proj/sub/d": random(100),         // renamed away, then deleted
		"/proj/e":     random(bs / 2),      // unchanged
	}
	for p, data := range files {
		if err := cl.WriteFile(ctx, p, data, opts); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.AllowSnapshot(ctx, "/proj"); err != nil {
		t.Fatal(err)
	}
	sp, err := cl.CreateSnapshot(ctx, "/proj", "s1")
	if err != nil || sp != "/proj/.snapshot/s1" {
		t.Fatalf("CreateSnapshot: %q %v", sp, err)
	}
	snapBlocks := blockIDs(ctx, t, cl, "/proj/.snapshot/s1/c", "/proj/.snapshot/s1/sub/d", "/proj/.snapshot/s1/b")

	// Change the live files.
	w, err := cl.Append(ctx, "/proj/a")
	if err != nil {
		t.Fatal(err)
	}
	more := random(bs)
	if _, err := w.Write(more); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	newB := random(bs + 3)
	if err := cl.WriteFile(ctx, "/proj/b", newB, client.CreateOptions{Replication: 2, BlockSize: bs, Overwrite: true}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/proj/c"} {
		if err := cl.Delete(ctx, p, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.Rename(ctx, "/proj/sub/d", "/d2"); err != nil {
		t.Fatal(err)
	}
	if err := cl.Delete(ctx, "/d2", false); err != nil {
		t.Fatal(err)
	}
	if err := cl.Delete(ctx, "/proj", true); !errs.Is(err, errs.Precondition) {
		t.Fatalf("deleting the snapshotted directory: %v", err)
	}
	// A file no snapshot holds: once its replicas are gone, the namenodes
	// have done their deletion work, and the snapshot's must still be there.
	junk := random(bs)
	if err := cl.WriteFile(ctx, "/junk", junk, opts); err != nil {
		t.Fatal(err)
	}
	junkBlocks := blockIDs(ctx, t, cl, "/junk")
	if err := cl.Delete(ctx, "/junk", false); err != nil {
		t.Fatal(err)
	}
	waitReplicasGone(ctx, t, c, junkBlocks)
	for _, id := range snapBlocks {
		if replicasOf(c, id) == 0 {
			t.Fatalf("block %d of a snapshot file lost its replicas", id)
		}
	}

	check := func(stage string) {
		t.Helper()
		for p, want := range files {
			got, err := cl.ReadFile(ctx, "/proj/.snapshot/s1"+p[len("/proj"):])
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s: snapshot of %s: %d bytes, %v; want the %d written", stage, p, len(got), err, len(want))
			}
		}
		if got, err := cl.ReadFile(ctx, "/proj/a"); err != nil || !bytes.Equal(got, append(append([]byte(nil), files["/proj/a"]...), more...)) {
			t.Fatalf("%s: live /proj/a: %d bytes, %v", stage, len(got), err)
		}
		if got, err := cl.ReadFile(ctx, "/proj/b"); err != nil || !bytes.Equal(got, newB) {
			t.Fatalf("%s: live /proj/b: %d bytes, %v", stage, len(got), err)
		}
		if _, err := cl.Stat(ctx, "/proj/c"); !errs.Is(err, errs.NotFound) {
			t.Fatalf("%s: live /proj/c: %v", stage, err)
		}
		st, err := cl.Stat(ctx, "/proj/.snapshot/s1/a")
		if err != nil || st.Length != uint64(len(files["/proj/a"])) {
			t.Fatalf("%s: snapshot length of /proj/a: %v %v", stage, st, err)
		}
	}
	check("before the restart")

	// Every namenode restarts from its Raft snapshot and log.
	for i := range 3 {
		if err := c.StopNamenode(i); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		if err := c.RestartNamenode(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	check("after the restart")

	// The snapshot goes: the blocks only it held lose their replicas; the
	// live files keep theirs.
	if err := cl.DeleteSnapshot(ctx, "/proj", "s1"); err != nil {
		t.Fatal(err)
	}
	waitReplicasGone(ctx, t, c, snapBlocks)
	if got, err := cl.ReadFile(ctx, "/proj/a"); err != nil || len(got) != len(files["/proj/a"])+len(more) {
		t.Fatalf("live /proj/a after the snapshot went: %d bytes, %v", len(got), err)
	}
	if got, err := cl.ReadFile(ctx, "/proj/e"); err != nil || !bytes.Equal(got, files["/proj/e"]) {
		t.Fatalf("live /proj/e after the snapshot went: %v", err)
	}
	if err := cl.DisallowSnapshot(ctx, "/proj"); err != nil {
		t.Fatal(err)
	}
	if err := cl.Delete(ctx, "/proj", true); err != nil {
		t.Fatal(err)
	}
}

// blockIDs returns the block ids of the files at ps.
func blockIDs(ctx context.Context, t *testing.T, cl *client.Client, ps ...string) []uint64 {
	t.Helper()
	var out []uint64
	for _, p := range ps {
		r, err := cl.GetBlockLocations(ctx, p, 0, 0)
		if err != nil {
			t.Fatalf("locations of %s: %v", p, err)
		}
		for _, lb := range r.Blocks {
			out = append(out, lb.Block.Id)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no blocks in %v", ps)
	}
	return out
}

// replicasOf counts the datanodes that store block id.
func replicasOf(c *localcluster.Cluster, id uint64) int {
	n := 0
	for _, d := range c.Datanodes() {
		if d == nil {
			continue
		}
		if _, ok := d.Store().Stat(id); ok {
			n++
		}
	}
	return n
}

// waitReplicasGone waits until no datanode stores any of the blocks.
func waitReplicasGone(ctx context.Context, t *testing.T, c *localcluster.Cluster, ids []uint64) {
	t.Helper()
	for _, id := range ids {
		for replicasOf(c, id) > 0 {
			select {
			case <-ctx.Done():
				t.Fatalf("block %d still has %d replicas", id, replicasOf(c, id))
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}
