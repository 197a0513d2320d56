package datanode

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/blockfs/blockfs/errs"
)

// peerWait marks when a goroutine of a stream began waiting on a peer
// (a Recv or a Send that the other side's flow control holds up); zero
// when it is not waiting. Our own back-pressure is not a peer wait.
type peerWait struct{ since atomic.Int64 }

func (w *peerWait) begin() { w.since.Store(time.Now().UnixNano()) }
func (w *peerWait) end()   { w.since.Store(0) }

// watch runs work on its own goroutine and returns its error, unless one
// of waits lasts longer than idle: then it cancels (which ends the
// stream's calls to downstream datanodes) and returns a Timeout at once.
// Returning ends the gRPC stream, which unblocks work's pending Recv or
// Send on it; work must make no call on the stream after that. work is
// counted in d.wg, so Close waits for it.
func (d *Datanode) watch(cancel context.CancelFunc, op, name string, idle time.Duration, waits []*peerWait, work func() error) error {
	done := make(chan error, 1)
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		done <- work()
	}()
	tick := time.NewTicker(max(idle/4, time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err
		case now := <-tick.C:
			for _, w := range waits {
				if s := w.since.Load(); s != 0 && now.Sub(time.Unix(0, s)) > idle {
					cancel()
					d.met.idleStreams.Inc()
					return errs.Newf(errs.Timeout, op, name, "peer idle for more than %s", idle)
				}
			}
		}
	}
}
