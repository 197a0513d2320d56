package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/security"
)

// twin is one of the two namenodes of twinReads: its own state
// directory, the Raft address it starts on ("" for a fresh port) and,
// while it runs, the node.
type twin struct {
	name     string // "A" or "B"
	dir      string
	raftAddr string
	mode     security.Mode
	x        *nn
}

// upArgs is what a started twin is given and checked with: the files its
// datanodes report and the sample checkReplicas reads.
type upArgs struct {
	files    []clusterFile
	big      []*api.Block
	bigInode uint64
	calls    int
}

// start starts t from its directory in the given token mode and returns
// how long it took to answer a linearizable read; then it brings the
// scripted datanodes up, sends their full reports and checks that reads
// list every replica.
func (t *twin) start(ctx context.Context, mode security.Mode, up upArgs) (float64, error) {
	t0 := time.Now()
	x, err := startNN(ctx, t.dir, mode, t.raftAddr)
	if err != nil {
		return 0, err
	}
	t.x, t.mode = x, mode
	root := incoming(superuser)
	probe := &api.GetBlockLocationsRequest{Path: up.files[len(up.files)/2].path} // default (linearizable) read
	for {
		if _, err := x.srv.GetBlockLocations(root, probe); err == nil {
			break
		} else if time.Since(t0) > 5*time.Minute {
			return 0, fmt.Errorf("node %s never answered: %w", t.name, err)
		}
		time.Sleep(time.Millisecond)
	}
	readyMs := float64(time.Since(t0).Nanoseconds()) / 1e6
	if err := x.datanodesUp(ctx); err != nil {
		return 0, err
	}
	if err := x.report(ctx, up.files, up.big, up.bigInode); err != nil {
		return 0, err
	}
	if err := checkReplicas(x.srv, up.files, up.calls); err != nil {
		return 0, fmt.Errorf("node %s: %w", t.name, err)
	}
	return readyMs, nil
}

// close stops t if it runs.
func (t *twin) close() {
	if t.x != nil {
		t.x.close()
		t.x = nil
	}
}

// twinReads measures random GetBlockLocations in both token modes on two
// namenodes, A and B, restarted from the same snapshot and running side
// by side, one in per-request and one in cached token mode. Every run
// reads the same random files on both, each call as a new user. The
// nodes take turns of turnCalls calls, in ABBA order, so that both see
// the same machine within milliseconds: the difference between the modes
// is small, and on a shared machine the CPU a process gets moves by more
// than that within a fraction of a second. The same turns read the
// same files with GetFileInfo (no token at all) on both nodes, the
// control: its ratio is what the two nodes differ by when the token mode
// does not matter.
//
// The control showed that the nodes do differ (the cached node was slower
// at GetFileInfo too, by about as much as at GetBlockLocations), so a
// fixed assignment reads a node's asymmetry as a token-mode cost. The
// figures behind both are in docs/OPERATIONS.md ("Measured figures behind
// design choices"). The runs therefore cross over: run 0 has A
// per-request and B cached (A is the node restart_ready_ms timed), and
// before every further run both nodes are closed and restarted from
// their own directories in the other mode, with their datanodes'
// reports sent again, so each mode runs on each node
// (runs_cached_node). Each run starts with the 1000-block read on the
// node that is cached in it (gbl_ns_per_block_1000).
func twinReads(ctx context.Context, res *clusterResult, ab [2]*twin, up upArgs, runs, calls int, logf func(string, ...any)) error {
	rng := rand.New(rand.NewPCG(1, 2))
	var users atomic.Int64
	for k := range runs {
		// Run k has B cached when k is even, A when k is odd.
		cachedTwin, perRequestTwin := ab[1-k&1], ab[k&1]
		if cachedTwin.mode != security.Cached {
			// Close both before starting either, and start A first: A
			// takes its Raft address back, and B's fresh port must not
			// be it.
			for _, t := range ab {
				t.close()
			}
			t0 := time.Now()
			for _, t := range ab {
				mode := security.PerRequest
				if t == cachedTwin {
					mode = security.Cached
				}
				if _, err := t.start(ctx, mode, up); err != nil {
					return fmt.Errorf("run %d: restart node %s: %w", k, t.name, err)
				}
			}
			logf("cluster: run %d: restarted A and B in %.1fs, %s now cached (%d goroutines)",
				k, time.Since(t0).Seconds(), cachedTwin.name, runtime.NumGoroutine())
		}
		cached, perRequest := cachedTwin.x, perRequestTwin.x
		v, err := perBlock1000(cached.srv)
		if err != nil {
			return err
		}
		res.nsPerBlock1000 = append(res.nsPerBlock1000, v)
		res.cachedNode = append(res.cachedNode, cachedTwin.name)
		nodes := [2]*nn{cached, perRequest}
		paths := make([]string, calls)
		for i := range paths {
			paths[i] = up.files[rng.IntN(len(up.files))].path
		}
		var reads, stats [2]time.Duration
		for t, lo := 0, 0; lo < calls; t, lo = t+1, lo+turnCalls {
			turn := paths[lo:min(lo+turnCalls, calls)]
			for j := range nodes {
				i := j ^ (k+t)&1 // ABBA: neither mode always goes first
				d, err := randomReads(nodes[i].srv, turn, &users)
				if err != nil {
					return err
				}
				reads[i] += d
				if d, err = randomStats(nodes[i].srv, turn, &users); err != nil {
					return err
				}
				stats[i] += d
			}
		}
		us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(calls) / 1e3 }
		res.cachedUs = append(res.cachedUs, us(reads[0]))
		res.perRequestUs = append(res.perRequestUs, us(reads[1]))
		res.statCachedUs = append(res.statCachedUs, us(stats[0]))
		res.statPerRequestUs = append(res.statPerRequestUs, us(stats[1]))
	}
	return nil
}

// turnCalls is how many calls one node makes in a turn of twinReads:
// a few milliseconds of reads.
const turnCalls = 100

// checkReplicas reads a sample of files and insists every block lists 3
// replicas: the figures are worthless if the block map were empty.
func checkReplicas(srv api.ClientServiceServer, files []clusterFile, k int) error {
	ctx := incoming(superuser)
	step := max(1, len(files)/max(1, k))
	for i := 0; i < len(files); i += step {
		r, err := srv.GetBlockLocations(ctx, &api.GetBlockLocationsRequest{Path: files[i].path, Read: stale})
		if err != nil {
			return err
		}
		if len(r.ReplicaCounts) != 1 || r.ReplicaCounts[0] != replicas {
			return fmt.Errorf("%s lists replica counts %v, want [%d]", files[i].path, r.ReplicaCounts, replicas)
		}
	}
	return nil
}

// perBlock1000 reads the 1000-block file 200 times as the superuser
// (after one warm call) and returns ns per listed block.
func perBlock1000(srv api.ClientServiceServer) (float64, error) {
	ctx := incoming(superuser)
	req := &api.GetBlockLocationsRequest{Path: "/data/big1000", Read: stale}
	check := func() error {
		r, err := srv.GetBlockLocations(ctx, req)
		if err == nil && (len(r.BlockIds) != 1000 || len(r.ReplicaIndexes) != 1000*replicas) {
			err = fmt.Errorf("big file: %d blocks, %d replicas", len(r.BlockIds), len(r.ReplicaIndexes))
		}
		return err
	}
	if err := check(); err != nil {
		return 0, err
	}
	const k = 200
	t0 := time.Now()
	for range k {
		if _, err := srv.GetBlockLocations(ctx, req); err != nil {
			return 0, err
		}
	}
	return float64(time.Since(t0).Nanoseconds()) / k / 1000, nil
}

// randomReads reads the files at paths, each call as a user never seen
// before, and returns the time the calls took.
func randomReads(srv api.ClientServiceServer, paths []string, users *atomic.Int64) (time.Duration, error) {
	reqs, ctxs := randomCalls(paths, users)
	t0 := time.Now()
	for i := range reqs {
		r, err := srv.GetBlockLocations(ctxs[i], reqs[i])
		if err != nil {
			return 0, err
		}
		if len(r.ReplicaCounts) != 1 || r.ReplicaCounts[0] != replicas {
			return 0, errors.New("a random read listed no replicas")
		}
	}
	return time.Since(t0), nil
}

// randomStats is randomReads with GetFileInfo, which signs no token: the
// control of twinReads.
func randomStats(srv api.ClientServiceServer, paths []string, users *atomic.Int64) (time.Duration, error) {
	reqs, ctxs := randomCalls(paths, users)
	t0 := time.Now()
	for i := range reqs {
		if _, err := srv.GetFileInfo(ctxs[i], &api.GetFileInfoRequest{Path: reqs[i].Path, Read: stale}); err != nil {
			return 0, err
		}
	}
	return time.Since(t0), nil
}

// randomCalls builds stale reads of paths, each with a new user's context.
func randomCalls(paths []string, users *atomic.Int64) ([]*api.GetBlockLocationsRequest, []context.Context) {
	reqs := make([]*api.GetBlockLocationsRequest, len(paths))
	ctxs := make([]context.Context, len(paths))
	for i, p := range paths {
		reqs[i] = &api.GetBlockLocationsRequest{Path: p, Read: stale}
		ctxs[i] = incoming(fmt.Sprintf("u%d", users.Add(1)))
	}
	return reqs, ctxs
}
