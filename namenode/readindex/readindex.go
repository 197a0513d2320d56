// Package readindex batches linearizable reads on a Raft leader: one
// VerifyLeader round, shared by every read that arrived before it began,
// confirms the leadership for all of them (the read-index protocol of the
// Raft thesis, section 6.4, as etcd's linearizable reads do).
package readindex

import (
	"context"
	"sync"

	"github.com/hashicorp/raft"

	"github.com/blockfs/blockfs/errs"
)

// Verifier is the part of *raft.Raft a Batcher needs: VerifyLeader's
// future fails unless a quorum confirmed this node's leadership after the
// call.
type Verifier interface {
	VerifyLeader() raft.Future
}

// Batcher shares one VerifyLeader round among concurrent linearizable
// reads. A read joins the next round to start (never one already in flight,
// whose index may predate the read); the round records the read index when
// it starts and confirms leadership with a quorum.
type Batcher struct {
	r       Verifier
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

// New returns a Batcher over r; applied is the node's applied index.
func New(r Verifier, applied func() uint64) *Batcher {
	return &Batcher{r: r, applied: applied}
}

// ReadIndex returns a commit index confirmed by a quorum after the call
// began; op names the operation that reads.
func (b *Batcher) ReadIndex(ctx context.Context, op string) (uint64, error) {
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

func (b *Batcher) startLocked() {
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
