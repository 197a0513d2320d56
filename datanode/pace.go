package datanode

import (
	"context"
	"errors"

	"golang.org/x/time/rate"

	"github.com/blockfs/blockfs/errs"
)

// pacer bounds the bytes per second a datanode sends datanode to datanode
// (Config.ReplicationBandwidth: re-replication, decommission and
// maintenance copies; the balancer's moves may share it). One pacer is
// shared by every concurrent transfer of the datanode, so the bound is
// the node's, not each stream's. A nil pacer, or one made for 0 bytes
// per second, never waits.
type pacer struct {
	lim *rate.Limiter
}

// Burst bounds: a small burst keeps the rate honest over a second; the
// floor keeps tiny limits workable (each wait takes at most a burst).
const (
	minPaceBurst = 4 << 10
	maxPaceBurst = 1 << 20
)

// newPacer returns a pacer of bytesPerSec (0 or less: unlimited). Its
// burst is a tenth of a second's bytes, within [4 KiB, 1 MiB].
func newPacer(bytesPerSec int64) *pacer {
	if bytesPerSec <= 0 {
		return &pacer{}
	}
	burst := min(max(bytesPerSec/10, minPaceBurst), maxPaceBurst)
	return &pacer{lim: rate.NewLimiter(rate.Limit(bytesPerSec), int(burst))}
}

// wait blocks until n more bytes may be sent, or ctx ends (then an
// errs.Canceled or errs.Timeout error). n may exceed the burst: it is
// taken a burst at a time.
func (p *pacer) wait(ctx context.Context, n int) error {
	if p == nil || p.lim == nil {
		return nil
	}
	for n > 0 {
		k := min(n, p.lim.Burst())
		if err := p.lim.WaitN(ctx, k); err != nil {
			if errors.Is(ctx.Err(), context.Canceled) {
				return errs.Wrap(errs.Canceled, "datanode.pace", "", err)
			}
			return errs.Wrap(errs.Timeout, "datanode.pace", "", err) // the deadline comes before the bytes may go
		}
		n -= k
	}
	return nil
}
