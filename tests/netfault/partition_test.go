package netfault

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/internal/testutil/nodeproc"
	"github.com/blockfs/blockfs/tests/robustness"
)

var (
	binDir            string
	setupErr, skipWhy error
)

func TestMain(m *testing.M) {
	if skipWhy = Supported(); skipWhy == nil {
		dir, err := os.MkdirTemp("", "blockfs-netfault-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		binDir = dir
		setupErr = nodeproc.Build(dir)
	}
	code := m.Run()
	os.RemoveAll(binDir)
	os.Exit(code)
}

// start starts a cluster for t, or skips t loudly where namespaces cannot
// be made.
func start(t *testing.T, datanodes int) (*Cluster, []api.ClientServiceClient, []*grpc.ClientConn) {
	t.Helper()
	if skipWhy != nil {
		t.Skipf("SKIPPING the network fault harness: %v", skipWhy)
	}
	if setupErr != nil {
		t.Fatalf("building the binaries: %v", setupErr)
	}
	dir := t.TempDir()
	c, err := StartCluster(t.Context(), binDir, dir, datanodes)
	if err != nil {
		t.Fatalf("starting the cluster: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range append(append([]*nodeproc.Proc(nil), c.NNs...), c.DNs...) {
				t.Logf("--- %s log tail:\n%s", p.Name, p.LogTail(3000))
			}
		}
		if err := c.Close(); err != nil {
			t.Errorf("removing the namespaces: %v", err)
		}
	})
	var nns []api.ClientServiceClient
	var conns []*grpc.ClientConn
	for _, a := range c.NNAddrs() {
		conn, err := c.Dial(a)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		nns, conns = append(nns, api.NewClientServiceClient(conn)), append(conns, conn)
	}
	return c, nns, conns
}

// waitLeader waits until a majority names one leader.
func waitLeader(t *testing.T, c *Cluster, nns []api.ClientServiceClient, not int) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if l := c.Leader(t.Context(), nns); l >= 0 && l != not {
			return l
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no leader (other than %d) within 30s", not)
	return -1
}

const opTimeout = 2 * time.Second

// workload is the namespace workload of tests/robustness, over the client
// host's connections, recorded for porcupine.
type workload struct {
	nns   []api.ClientServiceClient
	conns []*grpc.ClientConn // nns's, to skip one known down
	root  string
	hist  *robustness.History
	acks  [2]int // acknowledged writes before the fault, during it
	mu    sync.Mutex
	in    bool // the fault is on
}

// down reports whether target's connection is failing or still being
// made (a client would not send there, and a write that cannot be
// delivered only adds an indeterminate operation to the history, each of
// which makes porcupine's search longer; a killed namenode's connection
// cycles between the two until it is back).
func (w *workload) down(target int) bool {
	if w.conns == nil {
		return false
	}
	st := w.conns[target].GetState()
	return st == connectivity.TransientFailure || st == connectivity.Connecting
}

// worker runs operations until ctx ends, recording them; acked and
// attempted, if set, count what it attempts and what is acknowledged.
func (w *workload) worker(ctx context.Context, id int, rng *rand.Rand, acked *ackCounter, attempted *atomic.Int64) {
	target := id % len(w.nns)
	for ctx.Err() == nil {
		if w.down(target) {
			target = (target + 1) % len(w.nns)
			time.Sleep(5 * time.Millisecond)
			continue
		}
		in := robustness.RandomOp(rng)
		cctx, cancel := context.WithTimeout(AsRoot(context.Background()), opTimeout)
		call := w.hist.Now()
		out, _, valid := robustness.Exec(cctx, w.nns[target], w.root, in, nil)
		ret := w.hist.Now()
		cancel()
		if attempted != nil {
			attempted.Add(1)
		}
		if valid {
			w.hist.Add(id, in, call, out, ret)
		}
		if valid && !out.Unknown {
			if acked != nil {
				acked.Add(1)
			}
			if in.Kind.IsWrite() {
				w.mu.Lock()
				w.acks[b2i(w.in)]++
				w.mu.Unlock()
			}
		}
		if !valid || out.Unknown {
			target = (target + 1) % len(w.nns) // as a client fails over
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
}

// fault is one fault of TestFaults: inject cuts or stops something
// around the current leader, heal undoes it.
type fault struct {
	name string
	// majority: the namenodes other than the old leader elect a new one
	// while the fault lasts, and writes are acknowledged meanwhile.
	majority bool
	inject   func(ctx context.Context, c *Cluster, leader int) error
	heal     func(ctx context.Context, c *Cluster, leader int) error
}

func othersThan(hs []*Host, i int) []*Host { return without(hs, hs[i:i+1]) }

var faults = []fault{
	{name: "leader-cut-from-peers", majority: true, // clients and datanodes still reach it
		inject: func(ctx context.Context, c *Cluster, l int) error {
			return c.Net.Partition(ctx, []*Host{c.NNHosts[l]}, othersThan(c.NNHosts, l))
		}},
	{name: "leader-isolated", majority: true, // from everything: peers, datanodes, the client
		inject: func(ctx context.Context, c *Cluster, l int) error {
			rest := append(append(othersThan(c.NNHosts, l), c.DNHosts...), c.Client)
			return c.Net.Partition(ctx, []*Host{c.NNHosts[l]}, rest)
		}},
	{name: "leader-deaf", majority: true, // one way: it sends to its peers, hears nothing back
		inject: func(ctx context.Context, c *Cluster, l int) error {
			for _, h := range othersThan(c.NNHosts, l) {
				if err := c.Net.Drop(ctx, h, c.NNHosts[l]); err != nil {
					return err
				}
			}
			return nil
		}},
	{name: "bridge", majority: false, // the leader and one follower cut apart; the third sees both
		inject: func(ctx context.Context, c *Cluster, l int) error {
			return c.Net.Partition(ctx, []*Host{c.NNHosts[l]}, []*Host{c.NNHosts[(l+1)%3]})
		}},
	{name: "leader-paused", majority: true, // SIGSTOP, longer than the election timeout
		inject: func(ctx context.Context, c *Cluster, l int) error { c.NNs[l].Pause(); return nil },
		heal:   func(ctx context.Context, c *Cluster, l int) error { c.NNs[l].Resume(); return nil }},
}

// TestFaults runs the namespace workload through each fault in turn on
// one cluster, the fault injected around the current leader and held for
// some seconds, then healed. After each: the history (every client's view,
// through whichever namenode it used) is linearizable, no acknowledged
// write is lost, the namenodes converge, and where the fault leaves a
// majority of namenodes together, it elected a leader of its own and
// acknowledged writes meanwhile.
func TestFaults(t *testing.T) {
	c, nns, conns := start(t, 3)
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) { runFault(t, c, nns, conns, f) })
		if t.Failed() {
			return
		}
	}
}

func runFault(t *testing.T, c *Cluster, nns []api.ClientServiceClient, conns []*grpc.ClientConn, f fault) {
	ctx := t.Context()
	old := waitLeader(t, c, nns, -1)
	w := &workload{nns: nns, conns: conns, root: "/" + f.name, hist: robustness.NewHistory()}
	setup(t, nns, w.root)

	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for id := range 4 {
		rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(id)))
		wg.Go(func() { w.worker(wctx, id, rng, nil, nil) })
	}
	time.Sleep(1500 * time.Millisecond)
	t.Logf("%s around leader %s", f.name, c.NNs[old].Name)
	w.mu.Lock()
	w.in = true
	w.mu.Unlock()
	if err := f.inject(ctx, c, old); err != nil {
		t.Fatal(err)
	}
	var rest []api.ClientServiceClient
	for i, nn := range nns {
		if i != old {
			rest = append(rest, nn)
		}
	}
	newLeader := -1
	for deadline := time.Now().Add(10 * time.Second); f.majority && time.Now().Before(deadline) && newLeader < 0; {
		if l := c.Leader(ctx, rest); l >= 0 && l != old {
			newLeader = l
		}
		time.Sleep(100 * time.Millisecond)
	}
	if f.majority && newLeader < 0 {
		t.Error("the namenodes left together elected no new leader during the fault")
	}
	time.Sleep(3 * time.Second)
	heal := f.heal
	if heal == nil {
		heal = func(ctx context.Context, c *Cluster, _ int) error { return c.Net.Heal(ctx) }
	}
	if err := heal(ctx, c, old); err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	w.in = false
	w.mu.Unlock()
	time.Sleep(2 * time.Second)
	stop()
	wg.Wait()

	converged(t, conns)
	final := robustness.State{}
	for _, p := range robustness.OpPaths {
		out := finalRead(t, w, robustness.Input{Kind: robustness.OpStat, Path: p})
		if out.Stat != "none" {
			final[p] = out.Stat
		}
	}
	for _, d := range robustness.ListDirs {
		finalRead(t, w, robustness.Input{Kind: robustness.OpList, Path: d})
	}
	ops := w.hist.Ops()
	all, writes, unknown := robustness.Stats(ops)
	res, _ := robustness.Check(ops, 60*time.Second)
	t.Logf("%d ops (%d writes, %d indeterminate; %d acknowledged before the fault, %d during it): %s",
		all, writes, unknown, w.acks[0], w.acks[1], res)
	if res != porcupine.Ok {
		t.Errorf("history is %s, not linearizable", res)
	}
	if f.majority && w.acks[1] == 0 {
		t.Error("no write was acknowledged during the fault: the majority did not serve")
	}
	for _, l := range robustness.LostWrites(ops, final, robustness.OpPaths) {
		t.Errorf("lost acknowledged write: %s", l)
	}
}

// setup makes the workload's directory, retrying until a leader takes it.
func setup(t *testing.T, nns []api.ClientServiceClient, dir string) {
	t.Helper()
	for attempt := 0; ; attempt++ {
		cctx, cancel := context.WithTimeout(AsRoot(t.Context()), opTimeout)
		_, err := nns[attempt%len(nns)].Mkdirs(cctx, &api.MkdirsRequest{Path: dir, Mode: 0o755, Parents: true})
		cancel()
		if err == nil {
			return
		}
		if attempt > 100 {
			t.Fatalf("mkdir %s: %v", dir, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// finalRead is a linearizable read that joins the history, retried on
// every namenode until one answers.
func finalRead(t *testing.T, w *workload, in robustness.Input) robustness.Output {
	t.Helper()
	for attempt := 0; attempt < 60; attempt++ {
		cctx, cancel := context.WithTimeout(AsRoot(t.Context()), opTimeout)
		call := w.hist.Now()
		out, _, valid := robustness.Exec(cctx, w.nns[attempt%len(w.nns)], w.root, in, nil)
		ret := w.hist.Now()
		cancel()
		if valid && !out.Unknown {
			w.hist.Add(100, in, call, out, ret)
			return out
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("final %v: no namenode answered", in)
	return robustness.Output{}
}

// converged waits until every namenode answers one applied index and
// returns it; at one index the namespace hashes must be equal, or the
// namenodes have diverged.
func converged(t *testing.T, conns []*grpc.ClientConn) uint64 {
	t.Helper()
	var why string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		var rs []*api.NamespaceHashResponse
		for _, conn := range conns {
			cctx, cancel := context.WithTimeout(AsRoot(t.Context()), opTimeout)
			r, err := api.NewAdminClient(conn).NamespaceHash(cctx, &api.NamespaceHashRequest{}, grpc.WaitForReady(false))
			cancel()
			if err != nil {
				why = err.Error()
				break
			}
			rs = append(rs, r)
		}
		if len(rs) < len(conns) {
			continue
		}
		same := true
		for _, r := range rs[1:] {
			if r.AppliedIndex != rs[0].AppliedIndex {
				same = false
			} else if !bytes.Equal(r.Hash, rs[0].Hash) {
				t.Fatalf("namenodes DIVERGED: at applied index %d %s has namespace hash %x, %s %x", r.AppliedIndex, rs[0].ServedBy, rs[0].Hash, r.ServedBy, r.Hash)
			}
		}
		if same {
			t.Logf("namenodes agree at applied index %d: namespace hash %x", rs[0].AppliedIndex, rs[0].Hash[:8])
			return rs[0].AppliedIndex
		}
		why = fmt.Sprintf("applied indexes %d, %d, %d", rs[0].AppliedIndex, rs[1].AppliedIndex, rs[2].AppliedIndex)
	}
	t.Fatalf("namenodes did not converge: %s", why)
	return 0
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
