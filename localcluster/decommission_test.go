package localcluster_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/localcluster"
)

const decomBlock = 1 << 20

// pattern is file i's bytes.
func pattern(i, n int) []byte {
	b := make([]byte, n)
	for j := range b {
		b[j] = byte(j*7 + i)
	}
	return b
}

// adminOf returns datanode id's row of the cluster status the client's
// namenode answers.
func adminOf(ctx context.Context, t *testing.T, cl *client.Client, id string) *api.DatanodeInfo {
	t.Helper()
	cs, err := cl.ClusterStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range cs.Datanodes {
		if d.Id == id {
			return d
		}
	}
	t.Fatalf("datanode %s not in the cluster status", id)
	return nil
}

// waitAdmin polls until cond holds for datanode id's row, failing at
// ctx's deadline with the last row seen.
func waitAdmin(ctx context.Context, t *testing.T, cl *client.Client, id string, cond func(*api.DatanodeInfo) bool) *api.DatanodeInfo {
	t.Helper()
	deadline, _ := ctx.Deadline()
	for {
		d := adminOf(ctx, t, cl, id)
		if cond(d) {
			return d
		}
		if time.Until(deadline) < 5*time.Second {
			t.Fatalf("datanode %s never got there: %+v", id, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// lastPipeline returns the datanodes of the last block of open file p
// (its pipeline, as the namenode answers for hflushed bytes).
func lastPipeline(ctx context.Context, t *testing.T, cl *client.Client, p string) []string {
	t.Helper()
	locs, err := cl.GetBlockLocations(ctx, p, 0, 0)
	if err != nil || len(locs.Blocks) == 0 {
		t.Fatalf("%s: %v %v", p, locs, err)
	}
	var out []string
	for _, d := range locs.Blocks[len(locs.Blocks)-1].Locations {
		out = append(out, d.Id)
	}
	return out
}

// replicatedWithout checks that every block of every file has at least
// repl replicas on datanodes other than x, and returns a description of
// the first that has not ("" if none).
func replicatedWithout(ctx context.Context, t *testing.T, cl *client.Client, files []string, x string, repl int) string {
	t.Helper()
	for _, p := range files {
		locs, err := cl.GetBlockLocations(ctx, p, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range locs.Blocks {
			k := 0
			for _, d := range b.Locations {
				if d.Id != x {
					k++
				}
			}
			if k < repl {
				return fmt.Sprintf("%s block %d: %d replicas off %s", p, b.Block.Id, k, x)
			}
		}
	}
	return ""
}

// reader reads every file over and over until stopped, counting reads and
// failures: a complete file must read whole, an open one a prefix of its
// bytes at least as long as what was hflushed when the read began.
type reader struct {
	cl      *client.Client
	mu      sync.Mutex
	want    map[string][]byte
	flushed map[string]int
	reads   atomic.Int64
	fails   atomic.Int64
	first   atomic.Value // the first failure
}

func (r *reader) set(p string, data []byte, flushed int) {
	r.mu.Lock()
	r.want[p], r.flushed[p] = data, flushed
	r.mu.Unlock()
}

func (r *reader) run(ctx context.Context, done <-chan struct{}) {
	for {
		r.mu.Lock()
		paths := make([]string, 0, len(r.want))
		for p := range r.want {
			paths = append(paths, p)
		}
		r.mu.Unlock()
		slices.Sort(paths)
		for _, p := range paths {
			select {
			case <-done:
				return
			default:
			}
			r.mu.Lock()
			want, min := r.want[p], r.flushed[p]
			r.mu.Unlock()
			got, err := r.cl.ReadFile(ctx, p)
			r.reads.Add(1)
			if err == nil && (len(got) < min || len(got) > len(want) || !bytes.Equal(got, want[:len(got)])) {
				err = fmt.Errorf("%s: read %d bytes, at least %d hflushed, not the bytes written", p, len(got), min)
			}
			if err != nil {
				if r.fails.Add(1) == 1 {
					r.first.Store(err.Error())
				}
			}
		}
	}
}

// TestDecommissionWaitsForOpenFiles (issue 22, HDFS-17658): a datanode
// decommissioned while a writer is mid-block through it and another file
// is hflushed and open with its last block on it stays Decommissioning
// while those blocks are short, however long the rest takes; once the
// writers close it becomes Decommissioned, and only then every block of
// every file, those two included, has its full replication on other
// datanodes. A reader reads every file throughout and no read fails.
func TestDecommissionWaitsForOpenFiles(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Config{Namenodes: 1, Datanodes: 5, Racks: 2, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	rd := &reader{cl: cl, want: map[string][]byte{}, flushed: map[string]int{}}
	var files []string
	for i := range 6 {
		p := fmt.Sprintf("/done%d", i)
		data := pattern(i, decomBlock+decomBlock/2)
		if err := cl.WriteFile(ctx, p, data, client.CreateOptions{BlockSize: decomBlock, Replication: 3}); err != nil {
			t.Fatal(err)
		}
		rd.set(p, data, len(data))
		files = append(files, p)
	}
	// A writer mid-block (1.5 blocks written, the second block's bytes
	// hflushed so that readers and this test see its pipeline), and a
	// file hflushed and open.
	mid, open := pattern(10, 3*decomBlock), pattern(11, decomBlock/3)
	wMid, err := cl.Create(ctx, "/mid", client.CreateOptions{BlockSize: decomBlock, Replication: 3})
	if err != nil {
		t.Fatal(err)
	}
	wOpen, err := cl.Create(ctx, "/open", client.CreateOptions{BlockSize: decomBlock, Replication: 3})
	if err != nil {
		t.Fatal(err)
	}
	half := decomBlock + decomBlock/2
	if _, err := wMid.Write(mid[:half]); err != nil {
		t.Fatal(err)
	}
	if _, err := wOpen.Write(open); err != nil {
		t.Fatal(err)
	}
	if err := wMid.Hflush(); err != nil {
		t.Fatal(err)
	}
	if err := wOpen.Hflush(); err != nil {
		t.Fatal(err)
	}
	rd.set("/mid", mid, half)
	rd.set("/open", open, len(open))
	files = append(files, "/mid", "/open")
	// Two pipelines of three among five datanodes share one at least.
	var x string
	pm, po := lastPipeline(ctx, t, cl, "/mid"), lastPipeline(ctx, t, cl, "/open")
	for _, id := range pm {
		if slices.Contains(po, id) {
			x = id
		}
	}
	if x == "" {
		t.Fatalf("pipelines %v and %v share no datanode", pm, po)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); rd.run(ctx, done) }()

	if _, err := cl.Decommission(ctx, []string{x}); err != nil {
		t.Fatal(err)
	}
	// The complete files' blocks get copied; the open files' blocks (a
	// block of an open file is under construction until the file closes)
	// hold it.
	d := waitAdmin(ctx, t, cl, x, func(d *api.DatanodeInfo) bool {
		return d.AdminState == "DECOMMISSION_INPROGRESS" && d.OpenFilesBlocking == 2 &&
			replicatedWithout(ctx, t, cl, files[:6], x, 3) == ""
	})
	if d.BlocksLeft < 2 {
		t.Fatalf("the two open blocks are not counted: %+v", d)
	}
	t.Logf("waiting on open files: %+v", d)
	for range 20 { // many monitor rounds (100 ms each): still not done
		time.Sleep(100 * time.Millisecond)
		if d := adminOf(ctx, t, cl, x); d.AdminState != "DECOMMISSION_INPROGRESS" {
			t.Fatalf("%s left while its open files' blocks are short: %+v", x, d)
		}
	}
	// The writers finish: the mid-block writer writes on into a third
	// block, and both close.
	if _, err := wMid.Write(mid[half:]); err != nil {
		t.Fatal(err)
	}
	if err := wMid.Close(); err != nil {
		t.Fatal(err)
	}
	if err := wOpen.Close(); err != nil {
		t.Fatal(err)
	}
	rd.set("/mid", mid, len(mid))
	waitAdmin(ctx, t, cl, x, func(d *api.DatanodeInfo) bool { return d.AdminState == "DECOMMISSIONED" })
	if s := replicatedWithout(ctx, t, cl, files, x, 3); s != "" {
		t.Fatalf("decommissioned with a block short: %s", s)
	}
	// Readers still get its replicas, last, with its state.
	for _, p := range files {
		locs, err := cl.GetBlockLocations(ctx, p, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range locs.Blocks {
			for i, d := range b.Locations {
				if d.Id == x && (i != len(b.Locations)-1 || d.AdminState != "DECOMMISSIONED") {
					t.Fatalf("%s block %d: %s at %d of %d, state %q", p, b.Block.Id, x, i, len(b.Locations), d.AdminState)
				}
			}
		}
	}
	close(done)
	wg.Wait()
	if n := rd.fails.Load(); n != 0 {
		t.Fatalf("%d of %d reads failed; first: %v", n, rd.reads.Load(), rd.first.Load())
	}
	t.Logf("%d reads, none failed", rd.reads.Load())
}

// TestDecommissionNewLeader: a decommission held back by an open file
// survives the leader's loss: the new leader carries it on from the
// replicated state and marks the datanode Decommissioned once the file
// closes and its block is copied.
func TestDecommissionNewLeader(t *testing.T) {
	// No goleak here: a stopped namenode's raft.NetworkTransport leaves its
	// inbound connection handlers until the peers hang up.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Config{Namenodes: 3, Datanodes: 5, Racks: 2, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.WriteFile(ctx, "/done", pattern(1, 2*decomBlock), client.CreateOptions{BlockSize: decomBlock, Replication: 3}); err != nil {
		t.Fatal(err)
	}
	w, err := cl.Create(ctx, "/open", client.CreateOptions{BlockSize: decomBlock, Replication: 3})
	if err != nil {
		t.Fatal(err)
	}
	data := pattern(2, decomBlock/2)
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Hflush(); err != nil {
		t.Fatal(err)
	}
	x := lastPipeline(ctx, t, cl, "/open")[0]
	if _, err := cl.Decommission(ctx, []string{x}); err != nil {
		t.Fatal(err)
	}
	waitAdmin(ctx, t, cl, x, func(d *api.DatanodeInfo) bool {
		return d.AdminState == "DECOMMISSION_INPROGRESS" && d.OpenFilesBlocking == 1 && d.BlocksLeft == 1
	})
	old, err := c.WaitLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.StopNamenode(old); err != nil {
		t.Fatal(err)
	}
	now, err := c.WaitLeader(ctx)
	if err != nil || now == old {
		t.Fatalf("new leader %d (old %d): %v", now, old, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	waitAdmin(ctx, t, cl, x, func(d *api.DatanodeInfo) bool { return d.AdminState == "DECOMMISSIONED" })
	if !c.Namenode(now).IsLeader() {
		t.Skip("leadership moved again; the carry-on was not the new leader's alone")
	}
	if s := replicatedWithout(ctx, t, cl, []string{"/done", "/open"}, x, 3); s != "" {
		t.Fatalf("decommissioned with a block short: %s", s)
	}
	got, err := cl.ReadFile(ctx, "/open")
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back: %d bytes, %v", len(got), err)
	}
}
