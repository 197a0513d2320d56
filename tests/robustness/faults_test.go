package robustness

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/blockfs/blockfs/api"
)

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
