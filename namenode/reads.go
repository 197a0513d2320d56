package namenode

import (
	"context"
	"time"

	"github.com/hashicorp/raft"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
)

// readBarrier makes this node ready to serve a read with the requested
// consistency, and returns after the local state is recent enough. Its
// errors name op, the read's RPC.
func (n *Namenode) readBarrier(ctx context.Context, op string, opts *api.ReadOptions) error {
	if opts.GetConsistency() == api.ReadConsistency_READ_CONSISTENCY_STALE {
		if min := opts.GetMinAppliedIndex(); min > 0 && !n.fsm.WaitApplied(ctx.Done(), min) {
			return errs.Newf(errs.Timeout, op, "", "index %d not applied here before the deadline", min)
		}
		return nil
	}
	idx, err := n.linearizableIndex(ctx, op)
	if err != nil {
		return err
	}
	if !n.fsm.WaitApplied(ctx.Done(), max(idx, opts.GetMinAppliedIndex())) {
		return errs.New(errs.Timeout, op, "", "read index not applied before the deadline")
	}
	return nil
}

// linearizableIndex returns the index a linearizable read must wait for.
func (n *Namenode) linearizableIndex(ctx context.Context, op string) (uint64, error) {
	if n.raft.State() == raft.Leader {
		return n.leaderReadIndex(ctx, op)
	}
	conn, err := n.leaderConn(ctx, op)
	if err != nil {
		return 0, err
	}
	resp, err := api.NewNamenodeInternalClient(conn).ReadIndex(ctx, &api.ReadIndexRequest{})
	if err != nil {
		return 0, n.forwardError(op, err)
	}
	return resp.Index, nil
}

func (n *Namenode) leaderReadIndex(ctx context.Context, op string) (uint64, error) {
	for !n.ready.Load() {
		if n.raft.State() != raft.Leader {
			return 0, n.raftError(op, raft.ErrNotLeader)
		}
		select {
		case <-ctx.Done():
			return 0, errs.New(errs.Unavailable, op, "", "leader not ready yet")
		case <-time.After(5 * time.Millisecond):
		}
	}
	idx, err := n.reads.ReadIndex(ctx, op)
	if err != nil {
		if errs.KindOf(err) == errs.Other {
			return 0, n.raftError(op, err)
		}
		return 0, err
	}
	return idx, nil
}
