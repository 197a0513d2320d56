package datanode

import (
	"context"
	"sync"

	"golang.org/x/time/rate"

	"github.com/blockfs/blockfs/errs"
)

// balancePacer paces the balancer's moves this datanode sends (Replicate
// commands with balance_bandwidth set) at the bandwidth the namenode gives,
// in bytes per second shared by all of them, as HDFS's
// dfs.datanode.balance.bandwidthPerSec throttles a datanode's balancing
// transfers. One limiter for the datanode's life; a command with another
// bandwidth resets its rate (the newest run's).
type balancePacer struct {
	mu  sync.Mutex
	lim *rate.Limiter
}

// limiter returns the limiter for moves at bps bytes/s; nil for 0 (not a
// move: unpaced here).
func (p *balancePacer) limiter(bps uint64) *rate.Limiter {
	if bps == 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	// A burst of at most a tenth of a second's bytes (and at least 64 KiB,
	// a chunk), so the rate holds over short copies too.
	burst := int(max(bps/10, 64<<10))
	if p.lim == nil {
		p.lim = rate.NewLimiter(rate.Limit(bps), burst)
		return p.lim
	}
	if p.lim.Limit() != rate.Limit(bps) {
		p.lim.SetLimit(rate.Limit(bps))
		p.lim.SetBurst(burst)
	}
	return p.lim
}

// pace waits until lim (nil: no wait) lets n more bytes go.
func pace(ctx context.Context, lim *rate.Limiter, n int) error {
	if lim == nil {
		return nil
	}
	for n > 0 {
		k := min(n, lim.Burst())
		if err := lim.WaitN(ctx, k); err != nil {
			return errs.Wrap(errs.Canceled, "TransferBlock", "", err)
		}
		n -= k
	}
	return nil
}
