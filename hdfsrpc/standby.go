package hdfsrpc

import (
	"context"
	"time"
)

// A write on a follower. HDFS's standby namenode answers StandbyException
// at once, and its clients fail over with backoff for as long as their
// retry policy allows. Not every client does: colinmarc/hdfs tries each
// namenode in turn, sets one aside for 5 s after a StandbyException or a
// broken connection, and gives up ("no available namenodes") once all are
// set aside. When the leader dies, the followers would each answer
// StandbyException during the election and such a client gives up before
// there is a leader to find. So a follower holds a write until it knows
// where the writes go: it answers StandbyException once a leader reaches
// it after the call came in (one leader heartbeat in the steady state), and
// serves the write itself if it is elected meanwhile. Past StandbyWait
// with neither (no quorum) it answers StandbyException anyway.

// LeaderContact is the namenode's consensus as a follower sees it.
type LeaderContact interface {
	// LastContact is when a leader last reached this node.
	LastContact() time.Time
}

const (
	defaultStandbyWait = 10 * time.Second
	standbyPoll        = 10 * time.Millisecond
)

// awaitLeader holds a write that came to a follower until a leader is
// heard from after it came (false: answer StandbyException) or this
// namenode is the leader (true: serve it), at most StandbyWait.
func (d *Door) awaitLeader(ctx context.Context) bool {
	if d.cfg.Contact == nil {
		return false
	}
	wait := d.cfg.StandbyWait
	if wait <= 0 {
		wait = defaultStandbyWait
	}
	came := time.Now()
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	t := time.NewTicker(standbyPoll)
	defer t.Stop()
	for {
		if d.cfg.Leader() {
			return true
		}
		if d.cfg.Contact.LastContact().After(came) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}
