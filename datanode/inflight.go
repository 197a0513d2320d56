package datanode

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/blockfs/blockfs/errs"
)

// inflight caps the packet bytes a datanode holds across all write
// streams: a stream reserves room for a whole packet before it receives
// one, keeps what the packet takes until that packet is acknowledged
// upstream, and waits (so stops receiving, and gRPC flow control pushes
// back on the sender) while the cap is reached. The fast path is one
// atomic compare-and-swap; the mutex is only taken by waiters and by a
// release that has waiters to wake.
type inflight struct {
	max     int64
	used    atomic.Int64
	peak    atomic.Int64 // highest used seen; tests check it against max
	waiting atomic.Int64 // acquirers parked on wake

	mu   sync.Mutex
	wake chan struct{} // closed and replaced by a release while waiting > 0
}

func newInflight(max int64) *inflight {
	return &inflight{max: max, wake: make(chan struct{})}
}

// tryAcquire takes n bytes if they fit under the cap.
func (l *inflight) tryAcquire(n int64) bool {
	for {
		cur := l.used.Load()
		if cur+n > l.max {
			return false
		}
		if l.used.CompareAndSwap(cur, cur+n) {
			for p := l.peak.Load(); cur+n > p && !l.peak.CompareAndSwap(p, cur+n); p = l.peak.Load() {
			}
			return true
		}
	}
}

// acquire takes n bytes, waiting while they do not fit; it gives up when
// ctx ends. n must not exceed the cap.
func (l *inflight) acquire(ctx context.Context, n int64) error {
	for !l.tryAcquire(n) {
		l.mu.Lock()
		ch := l.wake
		l.waiting.Add(1)
		l.mu.Unlock()
		// A release between the failed try and registering above found no
		// waiter and woke nobody: look again before parking.
		if l.tryAcquire(n) {
			l.waiting.Add(-1)
			return nil
		}
		select {
		case <-ch:
			l.waiting.Add(-1)
		case <-ctx.Done():
			l.waiting.Add(-1)
			return errs.Wrap(errs.Canceled, "WriteBlock", "", context.Cause(ctx))
		}
	}
	return nil
}

// release gives back n bytes and wakes waiters, if any.
func (l *inflight) release(n int64) {
	if n == 0 {
		return
	}
	l.used.Add(-n)
	if l.waiting.Load() > 0 {
		l.mu.Lock()
		close(l.wake)
		l.wake = make(chan struct{})
		l.mu.Unlock()
	}
}
