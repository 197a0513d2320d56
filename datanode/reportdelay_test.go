package datanode

import (
	"testing"
	"time"
)

// TestFollowerReportDelay: the incremental reports to a namenode that says
// it is not the leader wait FollowerReportDelay and carry together every
// replica stored meanwhile, while the leader's go at once; a delay of 0
// sends to followers as to the leader.
func TestFollowerReportDelay(t *testing.T) {
	for _, tt := range []struct {
		delay      time.Duration
		oneReport  bool
		blocksSent int
	}{
		{delay: time.Hour, oneReport: true, blocksSent: 0}, // nothing reaches the follower within the test
		{delay: 2 * time.Second, oneReport: true, blocksSent: 4},
		{delay: 0, oneReport: false, blocksSent: 4},
	} {
		t.Run(tt.delay.String(), func(t *testing.T) {
			leader, follower := startFakeNN(t), startFakeNN(t)
			follower.follower = true
			cfg := testConfig(t, leader.addr, follower.addr)
			cfg.FollowerReportDelay = tt.delay
			d := startDN(t, cfg)
			for _, nn := range []*fakeNN{leader, follower} {
				eventually(t, "registration", func() bool { return nn.check(func() bool { return nn.registered[d.ID()] == 1 }) })
			}
			c := dataClient(t, d.Addr())
			for id := uint64(1); id <= 4; id++ {
				writeOK(t, c, id, randBytes(50))
				// The leader hears of each block on its own.
				eventually(t, "leader report", func() bool { return leader.check(func() bool { return leader.received[d.ID()][id] }) })
			}
			if tt.blocksSent == 0 {
				if follower.check(func() bool { return follower.reports > 0 }) {
					t.Fatal("a follower's report went out before its delay")
				}
				return
			}
			eventually(t, "follower reports", func() bool {
				return follower.check(func() bool { return len(follower.received[d.ID()]) == tt.blocksSent })
			})
			if n := follower.reports; tt.oneReport && n != 1 {
				t.Fatalf("follower got %d reports, want 1 carrying all 4 blocks", n)
			}
			if n := leader.reports; n != 4 {
				t.Fatalf("leader got %d reports, want one per block", n)
			}
		})
	}
}
