package robustness

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/testutil/leaktest"
	"github.com/blockfs/blockfs/localcluster"
	"github.com/blockfs/blockfs/namenode"
)

func TestMain(m *testing.M) { leaktest.VerifyTestMain(m) }

// The model's paths: operations touch only these (renames into a
// directory can make others, which the model tracks).
var (
	opPaths  = []string{"/a", "/b", "/a/x", "/b/x"}
	listDirs = []string{"/", "/a", "/b"}
)

const (
	workers       = 4
	opTimeout     = 1500 * time.Millisecond
	snapshotEvery = 16 // Raft SnapshotThreshold and TrailingLogs of the suite's cluster
)

type suite struct {
	t     *testing.T
	c     *localcluster.Cluster
	conns []*grpc.ClientConn
	nns   []api.ClientServiceClient
	stale bool
	seed  uint64

	incarnation []atomic.Int64 // bumped around every stop and restart of a namenode

	mu        sync.Mutex
	leaders   map[uint64]string // term -> the node that acted as its leader
	termErrs  []string
	snapshots map[string]int // InstallSnapshot RPCs sent, by target
	faults    int
}

func rounds() int {
	if n, err := strconv.Atoi(os.Getenv("BLOCKFS_FAULT_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return 1
}

func seed(t *testing.T) uint64 {
	s := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("BLOCKFS_SEED"), 10, 64); err == nil {
		s = v
	}
	t.Logf("seed %d (BLOCKFS_SEED=%d reproduces the workload, not the timing)", s, s)
	return s
}

func newSuite(t *testing.T, stale bool) *suite {
	s := &suite{t: t, stale: stale, seed: seed(t), leaders: map[uint64]string{}, snapshots: map[string]int{}}
	s.incarnation = make([]atomic.Int64, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Config{
		Namenodes: 3, Dir: t.TempDir(), InmemRaft: true, RaftObserver: s.observe,
		Namenode: func(i int, c *namenode.Config) {
			c.Raft.SnapshotEvery = snapshotEvery
			c.Raft.ApplyTimeout = 3 * time.Second
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	s.c = c
	for _, addr := range c.NamenodeAddrs() {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{
				BaseDelay: 20 * time.Millisecond, Multiplier: 1.6, MaxDelay: 300 * time.Millisecond,
			}, MinConnectTimeout: time.Second}))
		if err != nil {
			t.Fatal(err)
		}
		s.conns = append(s.conns, conn)
		s.nns = append(s.nns, api.NewClientServiceClient(conn))
	}
	t.Cleanup(func() {
		for _, conn := range s.conns {
			conn.Close()
		}
		c.Close()
	})
	return s
}

// observe records which node acted as leader in which term.
func (s *suite) observe(ev localcluster.RaftEvent) {
	if ev.Kind == "vote" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if ev.Kind == "snapshot" {
		s.snapshots[ev.To]++
	}
	if cur, ok := s.leaders[ev.Term]; !ok {
		s.leaders[ev.Term] = ev.From
	} else if cur != ev.From {
		s.termErrs = append(s.termErrs, fmt.Sprintf("term %d has two leaders: %s and %s", ev.Term, cur, ev.From))
	}
}

func root(ctx context.Context) context.Context {
	return metadata.AppendToOutgoingContext(ctx, namenode.UserKey, "root")
}

type fault struct {
	name string
	// inject runs while the workload does; it must leave every node
	// running and every link healed when it returns.
	inject func(ctx context.Context, s *suite, r *rand.Rand)
}

var faults = []fault{
	{"kill-leader", func(ctx context.Context, s *suite, r *rand.Rand) {
		l := s.leader(ctx)
		s.stop(l)
		s.hold(ctx)
		s.restart(ctx, l)
	}},
	{"kill-follower", func(ctx context.Context, s *suite, r *rand.Rand) {
		f := s.follower(ctx, r)
		s.stop(f)
		s.hold(ctx)
		s.restart(ctx, f)
	}},
	{"partition-leader", func(ctx context.Context, s *suite, r *rand.Rand) {
		l := s.leader(ctx)
		s.count()
		s.c.Isolate(l)
		s.hold(ctx)
		s.c.Heal()
	}},
	{"partition-follower", func(ctx context.Context, s *suite, r *rand.Rand) {
		f := s.follower(ctx, r)
		s.count()
		s.c.Isolate(f)
		s.hold(ctx)
		s.c.Heal()
	}},
	{"restart-node", func(ctx context.Context, s *suite, r *rand.Rand) {
		for range 2 {
			i := r.IntN(3)
			s.stop(i)
			s.restart(ctx, i)
			sleep(ctx, holdTime()/2)
		}
	}},
	{"snapshot-catch-up", func(ctx context.Context, s *suite, r *rand.Rand) {
		f := s.follower(ctx, r)
		id := fmt.Sprintf("nn%d", f+1)
		s.mu.Lock()
		before := s.snapshots[id]
		s.mu.Unlock()
		s.count()
		s.c.Isolate(f)
		// Let the leader get well past the follower, then compact its log.
		behind := s.c.Namenode(f).AppliedIndex()
		deadline := time.Now().Add(15 * time.Second)
		for ctx.Err() == nil && time.Now().Before(deadline) {
			if l := s.c.Leader(); l >= 0 && l != f && s.c.Namenode(l).AppliedIndex() > behind+4*snapshotEvery {
				break
			}
			sleep(ctx, 20*time.Millisecond)
		}
		l := s.leader(ctx)
		sctx, cancel := context.WithTimeout(root(ctx), 10*time.Second)
		resp, err := api.NewAdminClient(s.conns[l]).Snapshot(sctx, &api.SnapshotRequest{})
		cancel()
		if err != nil {
			s.t.Errorf("snapshot on leader nn%d: %v", l+1, err)
		} else {
			s.t.Logf("leader nn%d snapshot at index %d; nn%d isolated at %d", l+1, resp.Index, f+1, behind)
		}
		s.c.Heal()
		deadline = time.Now().Add(20 * time.Second)
		for {
			s.mu.Lock()
			got := s.snapshots[id]
			s.mu.Unlock()
			if got > before {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				s.t.Errorf("nn%d was never sent a snapshot after falling %d+ entries behind a compacted log", f+1, 4*snapshotEvery)
				break
			}
			sleep(ctx, 20*time.Millisecond)
		}
	}},
}

func holdTime() time.Duration {
	if testing.Short() {
		return 700 * time.Millisecond
	}
	return 1500 * time.Millisecond
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func (s *suite) hold(ctx context.Context) { sleep(ctx, holdTime()) }

func (s *suite) count() {
	s.mu.Lock()
	s.faults++
	s.mu.Unlock()
}

func (s *suite) leader(ctx context.Context) int {
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	l, err := s.c.WaitLeader(wctx)
	if err != nil {
		s.t.Fatalf("no leader: %v", err)
	}
	return l
}

func (s *suite) follower(ctx context.Context, r *rand.Rand) int {
	l := s.leader(ctx)
	return (l + 1 + r.IntN(2)) % 3
}

func (s *suite) stop(i int) {
	s.count()
	s.incarnation[i].Add(1)
	if err := s.c.StopNamenode(i); err != nil {
		s.t.Logf("stop nn%d: %v", i+1, err)
	}
}

func (s *suite) restart(ctx context.Context, i int) {
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := s.c.RestartNamenode(rctx, i); err != nil {
		s.t.Fatalf("restart nn%d: %v", i+1, err)
	}
	s.incarnation[i].Add(1)
}

// staleRead is one stale read's header, for the monotonicity check.
type staleRead struct {
	call, ret int64
	idx       uint64
	inc       int64 // the namenode's incarnation
}

type run struct {
	s       *suite
	root    string
	hist    *History
	mu      sync.Mutex
	reads   [][]staleRead // per namenode
	rywErrs []string
	ryw     atomic.Int64
}

// setup creates the run's root directories, with retries, before the
// history starts.
func (s *suite) setup(ctx context.Context, dirs ...string) {
	for _, d := range dirs {
		for attempt := 0; ; attempt++ {
			cctx, cancel := context.WithTimeout(root(ctx), opTimeout)
			_, err := s.nns[attempt%3].Mkdirs(cctx, &api.MkdirsRequest{Path: d, Mode: 0o755, Parents: true})
			cancel()
			if err == nil {
				break
			}
			if attempt > 100 {
				s.t.Fatalf("mkdir %s: %v", d, err)
			}
			sleep(ctx, 50*time.Millisecond)
		}
	}
}

func (r *run) worker(ctx context.Context, id int, rng *rand.Rand) {
	s := r.s
	target := id % 3
	var ro *api.ReadOptions
	if s.stale {
		ro = &api.ReadOptions{Consistency: api.ReadConsistency_READ_CONSISTENCY_STALE}
	}
	n := 0
	backoff := 20 * time.Millisecond
	for ctx.Err() == nil {
		n++
		if s.stale && n%8 == 0 {
			r.readYourWrites(ctx, id, n, rng)
			continue
		}
		inc := s.incarnation[target].Load()
		if inc%2 == 1 || s.conns[target].GetState() == connectivity.TransientFailure {
			// Known down: a client would not send there (and a write that
			// cannot be delivered only adds an indeterminate operation).
			target = (target + 1) % 3
			sleep(ctx, 5*time.Millisecond)
			continue
		}
		in := randomOp(rng)
		cctx, cancel := context.WithTimeout(root(ctx), opTimeout)
		call := r.hist.Now()
		out, hdr, valid := Exec(cctx, s.nns[target], r.root, in, ro)
		ret := r.hist.Now()
		cancel()
		if ctx.Err() != nil && (!valid || out.Unknown) {
			// Cut short by the end of the run: a read is dropped, a
			// write is recorded as indeterminate.
			if in.Kind.IsWrite() {
				r.hist.Add(id, in, call, Output{Unknown: true}, ret)
			}
			return
		}
		switch {
		case !in.Kind.IsWrite() && s.stale:
			if hdr != nil && inc == s.incarnation[target].Load() && inc%2 == 0 {
				r.mu.Lock()
				r.reads[target] = append(r.reads[target], staleRead{call, ret, hdr.AppliedIndex, inc})
				r.mu.Unlock()
			}
		case valid:
			r.hist.Add(id, in, call, out, ret)
		}
		if !valid || out.Unknown {
			// Back off as a client would: an election takes a while. After
			// a write with no verdict, wait longer: every further write
			// sent into an election is another indeterminate operation,
			// and each one multiplies the linearizability search.
			target = (target + 1) % 3
			if out.Unknown {
				backoff = max(backoff, 150*time.Millisecond)
			}
			sleep(ctx, backoff)
			backoff = min(2*backoff, 600*time.Millisecond)
		} else {
			backoff = 20 * time.Millisecond
		}
	}
}

func randomOp(rng *rand.Rand) Input {
	p := opPaths[rng.IntN(len(opPaths))]
	switch x := rng.IntN(100); {
	case x < 15:
		return Input{Kind: OpMkdir, Path: p}
	case x < 30:
		return Input{Kind: OpCreate, Path: p}
	case x < 42:
		return Input{Kind: OpDelete, Path: p}
	case x < 57:
		return Input{Kind: OpRename, Path: p, Dst: opPaths[rng.IntN(len(opPaths))]}
	case x < 80:
		return Input{Kind: OpStat, Path: p}
	default:
		return Input{Kind: OpList, Path: listDirs[rng.IntN(len(listDirs))]}
	}
}

// readYourWrites creates a private file through one namenode and reads it
// back, stale but with the create's index, through another.
func (r *run) readYourWrites(ctx context.Context, id, n int, rng *rand.Rand) {
	s := r.s
	p := fmt.Sprintf("%s-ryw/w%d-%d", r.root, id, n)
	w, rd := rng.IntN(3), rng.IntN(3)
	cctx, cancel := context.WithTimeout(root(ctx), opTimeout)
	resp, err := s.nns[w].Create(cctx, &api.CreateRequest{Path: p, Mode: 0o644, Replication: 1, ClientName: "ryw"})
	cancel()
	if err != nil {
		sleep(ctx, 20*time.Millisecond)
		return
	}
	idx := resp.GetHeader().GetAppliedIndex()
	cctx, cancel = context.WithTimeout(root(ctx), opTimeout)
	defer cancel()
	var trailer metadata.MD
	st, err := s.nns[rd].GetFileInfo(cctx, &api.GetFileInfoRequest{Path: p, Read: &api.ReadOptions{
		Consistency: api.ReadConsistency_READ_CONSISTENCY_STALE, MinAppliedIndex: idx,
	}}, grpc.Trailer(&trailer))
	r.ryw.Add(1)
	switch {
	case err == nil && st.GetHeader().GetAppliedIndex() < idx:
		r.fail("read-your-writes: nn%d answered %s at applied index %d < the create's %d", rd+1, p, st.GetHeader().GetAppliedIndex(), idx)
	case err == nil:
	case errs.KindOf(errs.FromStatus(err, trailer)) == errs.NotFound:
		r.fail("read-your-writes: nn%d says %s (created through nn%d at index %d) does not exist", rd+1, p, w+1, idx)
	}
}

func (r *run) fail(format string, a ...any) {
	r.mu.Lock()
	r.rywErrs = append(r.rywErrs, fmt.Sprintf(format, a...))
	r.mu.Unlock()
}

// runFault runs the workload on a fresh root with one fault injected in the
// middle, heals, and checks every invariant.
func (s *suite) runFault(t *testing.T, f fault, round int) {
	ctx := t.Context()
	r := &run{s: s, root: fmt.Sprintf("/%s-%d", f.name, round), hist: NewHistory(), reads: make([][]staleRead, 3)}
	s.setup(ctx, r.root, r.root+"-ryw")
	rng := rand.New(rand.NewPCG(s.seed, uint64(round)))
	wctx, stopWorkers := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for id := range workers {
		wrng := rand.New(rand.NewPCG(s.seed+uint64(round), uint64(id)))
		wg.Go(func() { r.worker(wctx, id, wrng) })
	}
	sleep(ctx, 300*time.Millisecond)
	f.inject(ctx, s, rng)
	sleep(ctx, 700*time.Millisecond)
	stopWorkers()
	wg.Wait()

	// Healed and restarted: every node must converge to one namespace.
	s.converged(ctx)

	// Final linearizable reads join the history: they pin the end state.
	final := State{}
	for _, p := range opPaths {
		out := s.finalRead(ctx, r, Input{Kind: OpStat, Path: p})
		if out.Stat != "none" {
			final[p] = out.Stat
		}
	}
	for _, d := range listDirs {
		s.finalRead(ctx, r, Input{Kind: OpList, Path: d})
	}

	ops := r.hist.Ops()
	all, writes, unknown := Stats(ops)
	res, info := Check(ops, 60*time.Second)
	t.Logf("%s: %d ops (%d writes, %d indeterminate), linearizable: %s", f.name, all, writes, unknown, res)
	switch res {
	case porcupine.Illegal:
		file := filepath.Join(os.TempDir(), fmt.Sprintf("blockfs-robustness-%s-%d.html", f.name, time.Now().Unix()))
		if err := porcupine.VisualizePath(Model, info, file); err == nil {
			t.Errorf("history is not linearizable; see %s", file)
		} else {
			t.Errorf("history is not linearizable (visualization failed: %v)", err)
		}
	case porcupine.Unknown:
		t.Errorf("linearizability check timed out on %d ops", all)
	}
	if writes-unknown < 10 {
		t.Errorf("only %d writes got a verdict: not enough load for the run to count", writes-unknown)
	}
	for _, l := range LostWrites(ops, final, opPaths) {
		t.Errorf("lost acknowledged write: %s", l)
	}
	s.mu.Lock()
	for _, e := range s.termErrs {
		t.Error(e)
	}
	s.termErrs = nil
	s.mu.Unlock()
	if s.stale {
		r.checkMonotonic(t)
		for _, e := range r.rywErrs {
			t.Error(e)
		}
		if r.ryw.Load() == 0 {
			t.Error("no read-your-writes probe got through")
		}
	}
}

// converged waits until all three namenodes run and have applied the same
// index, and then requires one namespace hash. (A write cancelled by the
// client may still be in Raft and apply meanwhile, so hashes are compared
// only at an applied index that held still across the reading of them.)
func (s *suite) converged(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		if err := s.c.WaitConverged(cctx); err != nil {
			s.t.Fatalf("namenodes did not converge: %v", err)
		}
		nns := s.c.Namenodes()
		var idx []uint64
		hashes := map[[32]byte][]string{}
		steady := len(nns) == 3
		for _, n := range nns {
			before := n.AppliedIndex()
			h := n.NamespaceHash()
			steady = steady && n.AppliedIndex() == before
			idx = append(idx, before)
			hashes[h] = append(hashes[h], n.ID())
		}
		if steady && idx[0] == idx[1] && idx[1] == idx[2] {
			if len(hashes) != 1 {
				s.t.Errorf("namenodes diverged: applied index %d everywhere, namespace hashes %v", idx[0], hashes)
			}
			return
		}
		sleep(cctx, 20*time.Millisecond)
	}
}

// finalRead retries a linearizable read until it gets an answer, and adds
// it to the history.
func (s *suite) finalRead(ctx context.Context, r *run, in Input) Output {
	for attempt := 0; ; attempt++ {
		cctx, cancel := context.WithTimeout(root(ctx), opTimeout)
		call := r.hist.Now()
		out, _, ok := Exec(cctx, s.nns[attempt%3], r.root, in, nil)
		ret := r.hist.Now()
		cancel()
		if ok {
			r.hist.Add(workers, in, call, out, ret)
			return out
		}
		if attempt > 100 {
			s.t.Fatalf("final %s(%s) never answered", in.Kind, in.Path)
		}
		sleep(ctx, 50*time.Millisecond)
	}
}

// checkMonotonic: a stale read that starts after another read from the same
// namenode process returned must not report a lower applied index.
func (r *run) checkMonotonic(t *testing.T) {
	total := 0
	for node, all := range r.reads {
		total += len(all)
		groups := map[int64][]staleRead{}
		for _, rd := range all {
			groups[rd.inc] = append(groups[rd.inc], rd)
		}
		for _, reads := range groups {
			byRet := slices.Clone(reads)
			slices.SortFunc(byRet, func(a, b staleRead) int { return cmp.Compare(a.ret, b.ret) })
			slices.SortFunc(reads, func(a, b staleRead) int { return cmp.Compare(a.call, b.call) })
			var maxIdx uint64
			j := 0
			for _, rd := range reads {
				for j < len(byRet) && byRet[j].ret < rd.call {
					maxIdx = max(maxIdx, byRet[j].idx)
					j++
				}
				if rd.idx < maxIdx {
					t.Errorf("stale reads on nn%d went back in time: applied index %d after %d had been returned", node+1, rd.idx, maxIdx)
					break
				}
			}
		}
	}
	t.Logf("stale reads checked for monotonicity: %d; read-your-writes probes: %d", total, r.ryw.Load())
}

func (s *suite) runAll(t *testing.T) {
	for round := range rounds() {
		for _, f := range faults {
			t.Run(fmt.Sprintf("%s/%d", f.name, round), func(t *testing.T) {
				s.t = t
				s.runFault(t, f, round)
			})
		}
	}
	t.Logf("faults injected: %d", s.faults)
}

// TestFaultsLinearizable runs every fault with linearizable (default) reads.
func TestFaultsLinearizable(t *testing.T) { newSuite(t, false).runAll(t) }

// TestFaultsStale runs every fault with stale reads.
func TestFaultsStale(t *testing.T) { newSuite(t, true).runAll(t) }
