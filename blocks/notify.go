package blocks

import "sync/atomic"

// reportSignal wakes whoever waits for replicas to be reported (a
// Complete waiting for its blocks' minimum replication) when a report
// adds some: the channel current returns is closed by the next report
// that adds a replica, and replaced. A waiter takes the channel before
// it checks, so a report landing between the check and the wait still
// wakes it. No lock: a report swaps in a fresh channel and closes the
// one it swapped out.
type reportSignal struct {
	ch atomic.Pointer[chan struct{}]
}

func (r *reportSignal) current() <-chan struct{} {
	for {
		if p := r.ch.Load(); p != nil {
			return *p
		}
		c := make(chan struct{})
		if r.ch.CompareAndSwap(nil, &c) {
			return c
		}
	}
}

// fire wakes every current waiter. It costs nothing when nobody took
// the channel since the last fire.
func (r *reportSignal) fire() {
	if p := r.ch.Swap(nil); p != nil {
		close(*p)
	}
}

// ReplicasReported returns a channel closed once a block report adds a
// replica to the map after this call. Take it before checking Locations,
// then wait on it: a report between the check and the wait closes it.
func (m *Manager) ReplicasReported() <-chan struct{} { return m.reported.current() }
