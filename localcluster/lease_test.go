package localcluster_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/testutil/promsum"
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
			nc.Leases.SoftLimit, nc.Leases.HardLimit = softLimit, hardLimit
			nc.Leases.CheckInterval, nc.Leases.RecoveryTimeout = 100*time.Millisecond, 3*time.Second
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
func checkReplicas(t *testing.T, c *localcluster.Cluster, cl *client.Client, p string, want []byte, n int, avoid ...string) {
	t.Helper()
	locs := waitReplicas(t, cl, p, n, avoid...)
	for _, lb := range locs.Blocks {
		part := want[lb.Offset : lb.Offset+lb.Block.Length]
		reps := replicaBytes(t, c, lb.Block)
		if len(reps) < n {
			t.Fatalf("block %d: %d replicas under generation %d, want %d (listed: %s)", lb.Block.Id, len(reps), lb.Block.GenStamp, n, describe(locs))
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

// TestWriterDiesAfterHflush: a writer that stops (no renewal, no close)
// after hflush is recovered by the leader after the hard limit: the file
// is closed with every hflushed byte, byte-identical on every replica.
// In the second case a datanode of its pipeline died first, so blocks the
// writer finished on two datanodes get their third replica back.
func TestWriterDiesAfterHflush(t *testing.T) {
	for _, tc := range []struct {
		unflushed int
		killDN    bool
	}{{0, false}, {300, true}} {
		t.Run(fmt.Sprintf("unflushed=%d,datanode-died=%v", tc.unflushed, tc.killDN), func(t *testing.T) {
			c, cl := startLeaseCluster(t)
			writer := clientAs(t, c, "alice")
			data := randBytes(3*blockSize + 777)
			w := create(t, writer, "/shared/dead")
			cut := blockSize / 2
			mustWrite(t, w, data[:cut])
			if err := w.Hflush(); err != nil {
				t.Fatal(err)
			}
			var avoid []string
			if tc.killDN {
				locs, err := cl.GetBlockLocations(ctxT(t), "/shared/dead", 0, 0)
				if err != nil || len(locs.Blocks) == 0 || len(locs.Blocks[0].Locations) == 0 {
					t.Fatalf("locations while writing: %v %v", locs, err)
				}
				avoid = []string{locs.Blocks[0].Locations[1].Id}
				stopDatanode(t, c, avoid[0])
			}
			mustWrite(t, w, data[cut:])
			if err := w.Hflush(); err != nil {
				t.Fatal(err)
			}
			mustWrite(t, w, randBytes(tc.unflushed))
			w.Abort() // the process is gone: nothing renews its lease
			ctx, cancel := context.WithTimeout(context.Background(), 20*hardLimit)
			defer cancel()
			if err := cl.WaitClosed(ctx, "/shared/dead"); err != nil {
				t.Fatal(err)
			}
			st, err := cl.Stat(ctxT(t), "/shared/dead")
			if err != nil || st.Length < uint64(len(data)) || st.Length > uint64(len(data)+tc.unflushed) {
				t.Fatalf("recovered file: %+v %v; want %d..%d bytes", st, err, len(data), len(data)+tc.unflushed)
			}
			got, err := cl.ReadFile(ctxT(t), "/shared/dead")
			if err != nil || !bytes.Equal(got[:len(data)], data) {
				t.Fatalf("read back: %d bytes, %v", len(got), err)
			}
			checkReplicas(t, c, cl, "/shared/dead", got, 3, avoid...)
			// The dead writer's later calls are refused: its lease is gone.
			if err := writer.RenewLease(ctxT(t)); errs.KindOf(err) != errs.Precondition || !strings.Contains(err.Error(), "LeaseExpired") {
				t.Fatalf("renew after recovery: %v", err)
			}
		})
	}
}

// TestRecoverLeaseTakeover: another client may take a file over only
// after the holder's soft limit: before it, recoverLease, create and
// append are AlreadyBeingCreated; after it, recoverLease closes the file
// and the new client appends to it.
func TestRecoverLeaseTakeover(t *testing.T) {
	c, cl := startLeaseCluster(t)
	alice, bob := clientAs(t, c, "alice"), clientAs(t, c, "bob")
	data := randBytes(blockSize + 100)
	w := create(t, alice, "/shared/f")
	mustWrite(t, w, data)
	if err := w.Hflush(); err != nil {
		t.Fatal(err)
	}
	// Alice keeps writing and renewing: bob is refused.
	refused := func(what string, err error) {
		t.Helper()
		if errs.KindOf(err) != errs.Precondition || !strings.Contains(err.Error(), "AlreadyBeingCreated") {
			t.Fatalf("%s while alice holds the lease: %v", what, err)
		}
	}
	_, err := bob.RecoverLease(ctxT(t), "/shared/f")
	refused("recoverLease", err)
	_, err = bob.Append(ctxT(t), "/shared/f")
	refused("append", err)
	_, err = bob.Create(ctxT(t), "/shared/f", client.CreateOptions{Overwrite: true, BlockSize: blockSize})
	refused("create", err)
	w.Abort()
	time.Sleep(softLimit + 200*time.Millisecond)
	closed, err := bob.RecoverLease(ctxT(t), "/shared/f")
	if err != nil {
		t.Fatalf("recoverLease after the soft limit: %v", err)
	}
	if !closed {
		if err := bob.WaitClosed(ctxT(t), "/shared/f"); err != nil {
			t.Fatal(err)
		}
	}
	readBack(t, cl, "/shared/f", data)
	var committed float64
	for _, d := range c.Datanodes() {
		committed += metricValue(t, d.Registry(), "blockfs_datanode_block_recoveries_total", "result", "committed")
	}
	if committed != 1 {
		t.Fatalf("datanodes count %v committed block recoveries, want 1", committed)
	}
	more := randBytes(500)
	bw, err := bob.Append(ctxT(t), "/shared/f")
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, bw, more)
	if err := bw.Close(); err != nil {
		t.Fatal(err)
	}
	all := append(append([]byte{}, data...), more...)
	readBack(t, cl, "/shared/f", all)
	checkReplicas(t, c, cl, "/shared/f", all, 3)
	// A closed file has no lease to recover.
	if _, err := bob.RecoverLease(ctxT(t), "/shared/f"); errs.KindOf(err) != errs.Precondition || !strings.Contains(err.Error(), "not under construction") {
		t.Fatalf("recoverLease of a closed file: %v", err)
	}
}

// TestDatanodeDiesMidBlock: a datanode of the pipeline stops in the middle
// of a block; the writer rebuilds the pipeline from the others and goes
// on, the file reads back identical, and re-replication brings every
// block back to 3 replicas.
func TestDatanodeDiesMidBlock(t *testing.T) {
	for _, victim := range []int{0, 1, 2} { // first, middle, last of the pipeline
		t.Run(fmt.Sprintf("pipeline[%d]", victim), func(t *testing.T) {
			c, cl := startLeaseCluster(t)
			data := randBytes(4*blockSize + 321)
			w := create(t, cl, "/shared/put")
			cut := blockSize + blockSize/2
			mustWrite(t, w, data[:cut])
			if err := w.Hflush(); err != nil {
				t.Fatal(err)
			}
			locs, err := cl.GetBlockLocations(ctxT(t), "/shared/put", 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			last := locs.Blocks[len(locs.Blocks)-1]
			if len(last.Locations) != 3 {
				t.Fatalf("the block being written lists %d datanodes, want its pipeline of 3", len(last.Locations))
			}
			dead := last.Locations[victim].Id
			stopDatanode(t, c, dead)
			mustWrite(t, w, data[cut:])
			if err := w.Close(); err != nil {
				t.Fatalf("close after losing a datanode: %v", err)
			}
			readBack(t, cl, "/shared/put", data)
			checkReplicas(t, c, cl, "/shared/put", data, 3, dead)
		})
	}
}

func stopDatanode(t *testing.T, c *localcluster.Cluster, id string) {
	t.Helper()
	for i := range c.Datanodes() {
		if c.DatanodeID(i) == id {
			if err := c.StopDatanode(i); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no datanode %s", id)
}

// TestAppendManyTimes: a file appended to many times, by several clients
// in turn (each closing), reads back whole after every append, while a
// reader holds it open; one append runs across a leader change.
func TestAppendManyTimes(t *testing.T) {
	c, cl := startLeaseCluster(t)
	writers := []*client.Client{cl, clientAs(t, c, "root"), clientAs(t, c, "root")}
	var all []byte
	for i := range 12 {
		part := randBytes(97 + 61*i)
		w, err := writers[i%len(writers)].Append(ctxT(t), "/shared/many")
		if i == 0 {
			w, err = cl.Create(ctxT(t), "/shared/many", client.CreateOptions{Replication: 3, BlockSize: blockSize, Perm: 0o666})
		}
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		mustWrite(t, w, part[:len(part)/2])
		if i == 6 {
			// The leader changes between the two halves of this append.
			li := c.Leader()
			if err := c.StopNamenode(li); err != nil {
				t.Fatal(err)
			}
			if _, err := c.WaitLeader(ctxT(t)); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.RestartNamenode(context.Background(), li) })
		}
		mustWrite(t, w, part[len(part)/2:])
		if err := w.Close(); err != nil {
			t.Fatalf("close of append %d: %v", i, err)
		}
		all = append(all, part...)
		readBack(t, cl, "/shared/many", all)
	}
	locs, err := cl.GetBlockLocations(ctxT(t), "/shared/many", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, lb := range locs.Blocks[:len(locs.Blocks)-1] {
		if lb.Block.Length != blockSize {
			t.Fatalf("block %d holds %d bytes: appends should fill the last block before starting another", i, lb.Block.Length)
		}
	}
}

// TestLeasesAgreeAfterRestart: with files open and hflushed, every
// namenode restarted from its snapshot and log holds the same namespace
// and lease table (the namespace hash covers both), and the writers go on.
func TestLeasesAgreeAfterRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Config{
		Namenodes: 3, Datanodes: 3, Dir: t.TempDir(),
		Namenode: func(i int, nc *namenode.Config) {
			nc.Raft.SnapshotEvery = 8 // snapshots happen while the files are open
			nc.Leases.SoftLimit, nc.Leases.HardLimit = time.Minute, time.Hour
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl := clientAs(t, c, "root")
	var ws []*client.Writer
	for i := range 3 {
		w, err := cl.Create(ctx, fmt.Sprintf("/open%d", i), client.CreateOptions{Replication: 3, BlockSize: blockSize})
		if err != nil {
			t.Fatal(err)
		}
		mustWrite(t, w, randBytes(300))
		if err := w.Hflush(); err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	for i := range 20 { // enough entries for snapshots
		writeFile(t, cl, fmt.Sprintf("/closed%d", i), randBytes(10))
	}
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	before := c.Namenode(c.Leader()).NamespaceHash()
	for i := range 3 {
		if err := c.StopNamenode(i); err != nil {
			t.Fatal(err)
		}
		if err := c.RestartNamenode(ctx, i); err != nil {
			t.Fatal(err)
		}
		if err := c.WaitConverged(ctx); err != nil {
			t.Fatalf("after restarting namenode %d: %v", i, err)
		}
	}
	for i, n := range c.Namenodes() {
		if n.NamespaceHash() != before {
			t.Fatalf("namenode %d: namespace and lease hash changed across restarts", i)
		}
	}
	for _, w := range ws {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRecoveryOutlivesFailures: a recovery survives the death of the
// leader that started it (the next leader sends it again) and of any
// datanode of the pipeline, the primary included (after the recovery
// timeout it starts again with another primary and a newer stamp).
func TestRecoveryOutlivesFailures(t *testing.T) {
	for _, victim := range []string{"leader", "pipeline[0]", "pipeline[1]", "pipeline[2]"} {
		t.Run(victim, func(t *testing.T) {
			c, cl := startLeaseCluster(t)
			writer := clientAs(t, c, "alice")
			data := randBytes(blockSize + 400)
			w := create(t, writer, "/shared/r")
			mustWrite(t, w, data)
			if err := w.Hflush(); err != nil {
				t.Fatal(err)
			}
			locs, err := cl.GetBlockLocations(ctxT(t), "/shared/r", 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			pipeline := locs.Blocks[len(locs.Blocks)-1].Locations
			w.Abort()
			closed, err := cl.RecoverLease(ctxT(t), "/shared/r")
			if err != nil || closed {
				t.Fatalf("recoverLease: closed=%v %v", closed, err)
			}
			var avoid []string
			if victim == "leader" {
				li := c.Leader()
				if err := c.StopNamenode(li); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = c.RestartNamenode(context.Background(), li) })
			} else {
				id := pipeline[victim[len("pipeline[")]-'0'].Id
				stopDatanode(t, c, id)
				avoid = []string{id}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := cl.WaitClosed(ctx, "/shared/r"); err != nil {
				t.Fatal(err)
			}
			readBack(t, cl, "/shared/r", data)
			checkReplicas(t, c, cl, "/shared/r", data, 3, avoid...)
		})
	}
}

// metricValue is the value of the series of name whose label is value, in
// reg (0 when there is none).
func metricValue(t *testing.T, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	return promsum.Sum(t, []prometheus.Gatherer{reg}, name, label, func(v string) bool { return v == value })
}

// TestStaleReplicaAfterAppend: a datanode that was down while an append
// reopened a block comes back with the block under its old stamp; that
// stale replica is deleted (or replaced by a re-replication), and every
// replica left is the current one.
func TestStaleReplicaAfterAppend(t *testing.T) {
	c, cl := startLeaseCluster(t)
	first := randBytes(blockSize + 200)
	w := create(t, cl, "/shared/stale")
	mustWrite(t, w, first)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	locs := waitReplicas(t, cl, "/shared/stale", 3)
	last := locs.Blocks[len(locs.Blocks)-1]
	down := last.Locations[0].Id
	var idx int
	for i := range c.Datanodes() {
		if c.DatanodeID(i) == down {
			idx = i
		}
	}
	if err := c.StopDatanode(idx); err != nil {
		t.Fatal(err)
	}
	aw, err := cl.Append(ctxT(t), "/shared/stale")
	if err != nil {
		t.Fatal(err)
	}
	more := randBytes(300)
	mustWrite(t, aw, more)
	if err := aw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.RestartDatanode(ctxT(t), idx); err != nil {
		t.Fatal(err)
	}
	all := append(append([]byte{}, first...), more...)
	deadline := time.Now().Add(30 * time.Second)
	for {
		locs = waitReplicas(t, cl, "/shared/stale", 3)
		cur := locs.Blocks[len(locs.Blocks)-1].Block
		stale := 0
		for _, d := range c.Datanodes() {
			if info, ok := d.Store().Stat(cur.Id); ok && info.GenStamp != cur.GenStamp {
				stale++
			}
		}
		if stale == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d replicas of block %d still under an older stamp than %d", stale, cur.Id, cur.GenStamp)
		}
		time.Sleep(100 * time.Millisecond)
	}
	readBack(t, cl, "/shared/stale", all)
	checkReplicas(t, c, cl, "/shared/stale", all, 3)
}
