package localcluster_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/localcluster"
	"github.com/blockfs/blockfs/namenode"
)

// Leases, lease recovery and hflush (issue 11), on a 3-namenode,
// 5-datanode cluster under mTLS whose lease limits are short.

const (
	softLimit = 700 * time.Millisecond
	hardLimit = 2 * time.Second
)

func startLeaseCluster(t *testing.T) (*localcluster.Cluster, *client.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Config{
		Namenodes: 3, Datanodes: 5, Dir: t.TempDir(), MTLS: true,
		Namenode: func(i int, nc *namenode.Config) {
			nc.LeaseSoftLimit, nc.LeaseHardLimit = softLimit, hardLimit
			nc.LeaseCheckInterval, nc.RecoveryTimeout = 100*time.Millisecond, 3*time.Second
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	cl := clientAs(t, c, "root")
	if err := cl.Mkdirs(ctxT(t), "/shared", 0o777, true); err != nil {
		t.Fatal(err)
	}
	if err := cl.SetPermission(ctxT(t), "/shared", 0o777); err != nil {
		t.Fatal(err)
	}
	return c, cl
}

func clientAs(t *testing.T, c *localcluster.Cluster, user string) *client.Client {
	t.Helper()
	cl, err := c.ClientAs(user)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// create opens p for writing with the test's block size and 3 replicas.
func create(t *testing.T, cl *client.Client, p string) *client.Writer {
	t.Helper()
	w, err := cl.Create(ctxT(t), p, client.CreateOptions{Replication: 3, BlockSize: blockSize, Perm: 0o666})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func mustWrite(t *testing.T, w *client.Writer, b []byte) {
	t.Helper()
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
}

// replicaBytes reads block b from every datanode that holds it (straight
// from the store, so each replica is checked on its own).
func replicaBytes(t *testing.T, c *localcluster.Cluster, b *api.Block) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, d := range c.Datanodes() {
		if d == nil {
			continue
		}
		info, ok := d.Store().Stat(b.Id)
		if !ok || info.GenStamp != b.GenStamp {
			continue
		}
		cr, err := d.Store().ReadChunks(ctxT(t), b.Id, 0, 0, nil)
		if err != nil {
			t.Fatalf("replica of %d on %s: %v", b.Id, d.ID(), err)
		}
		out[d.ID()] = cr.Data
	}
	return out
}

// checkReplicas checks that every block of p has n replicas whose bytes
// are the file's.
func checkReplicas(t *testing.T, c *localcluster.Cluster, cl *client.Client, p string, want []byte, n int) {
	t.Helper()
	locs := waitReplicas(t, cl, p, n)
	for _, lb := range locs.Blocks {
		part := want[lb.Offset : lb.Offset+lb.Block.Length]
		reps := replicaBytes(t, c, lb.Block)
		if len(reps) < n {
			t.Fatalf("block %d: %d replicas under generation %d, want %d", lb.Block.Id, len(reps), lb.Block.GenStamp, n)
		}
		for dn, got := range reps {
			if !bytes.Equal(got, part) {
				t.Fatalf("block %d on %s: %d bytes differ from the file's %d", lb.Block.Id, dn, len(got), len(part))
			}
		}
	}
}

// TestHflushVisibleWhileWriting: bytes hflushed are read by another
// client while the writer goes on; the file is under construction with
// exactly those bytes, inside a block and across a block boundary.
func TestHflushVisibleWhileWriting(t *testing.T) {
	c, cl := startLeaseCluster(t)
	reader := clientAs(t, c, "bob")
	data := randBytes(3*blockSize + 700)
	w := create(t, cl, "/shared/log")
	var flushed int
	for _, cut := range []int{100, 613, blockSize + 1, 2*blockSize + 512, len(data)} {
		mustWrite(t, w, data[flushed:cut])
		sync := w.Hflush
		if cut%2 == 1 {
			sync = w.Hsync
		}
		if err := sync(); err != nil {
			t.Fatalf("flush at %d: %v", cut, err)
		}
		flushed = cut
		st, err := reader.Stat(ctxT(t), "/shared/log")
		if err != nil || !st.UnderConstruction || st.Length != uint64(cut) {
			t.Fatalf("after flush at %d: %+v %v", cut, st, err)
		}
		got, err := reader.ReadFile(ctxT(t), "/shared/log")
		if err != nil || !bytes.Equal(got, data[:cut]) {
			t.Fatalf("read after flush at %d: %d bytes, %v", cut, len(got), err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	readBack(t, cl, "/shared/log", data)
}
