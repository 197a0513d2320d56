package namenode

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
)

// readBatcher shares one VerifyLeader round among concurrent linearizable
// reads. A read joins the next round to start (never one already in flight,
// whose index may predate the read); the round records the read index when
// it starts and confirms leadership with a quorum.
type readBatcher struct {
	r       *raft.Raft
	applied func() uint64
	mu      sync.Mutex
	next    *readRound
	running bool
}

type readRound struct {
	done  chan struct{}
	index uint64
	err   error
}

func newReadBatcher(r *raft.Raft, applied func() uint64) *readBatcher {
	return &readBatcher{r: r, applied: applied}
}

// readIndex returns a commit index confirmed by a quorum after the call
// began; op names the operation that reads.
func (b *readBatcher) readIndex(ctx context.Context, op string) (uint64, error) {
	b.mu.Lock()
	if b.next == nil {
		b.next = &readRound{done: make(chan struct{})}
	}
	rd := b.next
	if !b.running {
		b.startLocked()
	}
	b.mu.Unlock()
	select {
	case <-rd.done:
		return rd.index, rd.err
	case <-ctx.Done():
		return 0, errs.Wrap(errs.Timeout, op, "", ctx.Err())
	}
}

func (b *readBatcher) startLocked() {
	rd := b.next
	b.next = nil
	b.running = true
	// Every write acknowledged before this moment has been applied to the
	// leader's FSM (Apply returns after the FSM), and a ready leader has
	// applied everything earlier leaders committed (Barrier). So the
	// leader's applied index is a sufficient read index, and unlike the
	// commit index it never points at a no-op entry that FSMs never see.
	rd.index = b.applied()
	go func() {
		rd.err = b.r.VerifyLeader().Error()
		close(rd.done)
		b.mu.Lock()
		b.running = false
		if b.next != nil {
			b.startLocked()
		}
		b.mu.Unlock()
	}()
}

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
	idx, err := n.reads.readIndex(ctx, op)
	if err != nil {
		if errs.KindOf(err) == errs.Other {
			return 0, n.raftError(op, err)
		}
		return 0, err
	}
	return idx, nil
}
