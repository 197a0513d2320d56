package datanode

import (
	"sync"

	"golang.org/x/time/rate"
)

// balancePacer paces the balancer's moves this datanode sends (Replicate
// commands with balance_bandwidth set) at the bandwidth the namenode gives,
// in bytes per second shared by all of them, as HDFS's
// dfs.datanode.balance.bandwidthPerSec throttles a datanode's balancing
// transfers. One limiter for the datanode's life; a command with another
// bandwidth resets its rate (the newest run's).
type balancePacer struct {
	mu sync.Mutex
	p  *pacer
}

// limiter returns the pacer for moves at bps bytes/s; nil for 0 (not a
// move: the datanode's replication pacer applies).
func (p *balancePacer) limiter(bps uint64) *pacer {
	if bps == 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	// A burst of at most a tenth of a second's bytes (and at least 64 KiB,
	// a chunk), so the rate holds over short copies too.
	burst := int(max(bps/10, 64<<10))
	if p.p == nil {
		p.p = &pacer{lim: rate.NewLimiter(rate.Limit(bps), burst)}
		return p.p
	}
	if p.p.lim.Limit() != rate.Limit(bps) {
		p.p.lim.SetLimit(rate.Limit(bps))
		p.p.lim.SetBurst(burst)
	}
	return p.p
}
