package hdfsrpc

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// fakeContact is a follower's view of the leader for awaitLeader.
type fakeContact struct{ last atomic.Int64 } // unix nanoseconds

func (f *fakeContact) LastContact() time.Time { return time.Unix(0, f.last.Load()) }

// TestAwaitLeader: a write on a follower waits until a leader reaches it
// after the write came (StandbyException) or it is the leader itself
// (served), at most StandbyWait; without a Contact it is answered at once.
func TestAwaitLeader(t *testing.T) {
	tests := []struct {
		name    string
		contact bool
		// during runs once awaitLeader waits: it may report contact or
		// make this node the leader.
		during func(f *fakeContact, leader *atomic.Bool)
		want   bool
	}{
		{"no contact configured", false, nil, false},
		{"a leader reaches the follower", true, func(f *fakeContact, _ *atomic.Bool) { f.last.Store(time.Now().UnixNano()) }, false},
		{"this namenode is elected", true, func(_ *fakeContact, l *atomic.Bool) { l.Store(true) }, true},
		{"no leader within the wait", true, func(*fakeContact, *atomic.Bool) {}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var leader atomic.Bool
			f := &fakeContact{}
			f.last.Store(time.Now().Add(-time.Millisecond).UnixNano()) // a leader heard just before the write came
			cfg := Config{Leader: leader.Load, StandbyWait: 200 * time.Millisecond}
			if tc.contact {
				cfg.Contact = f
			}
			d := &Door{cfg: cfg}
			if tc.during != nil {
				go func() { time.Sleep(20 * time.Millisecond); tc.during(f, &leader) }()
			}
			if got := d.awaitLeader(context.Background()); got != tc.want {
				t.Fatalf("awaitLeader = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestAwaitLeaderCanceled: a write whose call ends stops waiting.
func TestAwaitLeaderCanceled(t *testing.T) {
	var leader atomic.Bool
	d := &Door{cfg: Config{Leader: leader.Load, Contact: &fakeContact{}, StandbyWait: time.Hour}}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	if d.awaitLeader(ctx) {
		t.Fatal("a canceled wait served the write")
	}
}
