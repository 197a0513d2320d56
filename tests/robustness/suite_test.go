package robustness

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/internal/testutil/leaktest"
	"github.com/blockfs/blockfs/localcluster"
	"github.com/blockfs/blockfs/namenode"
)

func TestMain(m *testing.M) { leaktest.VerifyTestMain(m) }

// The model's paths: operations touch only these (renames into a
// directory can make others, which the model tracks).
var ()

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
	for _, p := range OpPaths {
		out := s.finalRead(ctx, r, Input{Kind: OpStat, Path: p})
		if out.Stat != "none" {
			final[p] = out.Stat
		}
	}
	for _, d := range ListDirs {
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
	for _, l := range LostWrites(ops, final, OpPaths) {
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
