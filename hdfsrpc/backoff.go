package hdfsrpc

import (
	"cmp"
	"context"
	"time"

	"github.com/blockfs/blockfs/errs"
)

// A call the namenode backs off (its user's write rate, or the fair
// scheduler favouring lighter users while it is loaded) is refused with
// a retry hint, which blockfs's client waits out. HDFS's clients do not
// read it: colinmarc's retries only StandbyException, and Java's treats
// the IOException it would see as final. So the door waits it out for
// them, holding the call as HDFS's FairCallQueue holds a heavy user's
// call in a low-priority queue, and asks again; only past BackoffWait is
// the client told, with RetriableException (Hadoop's server-too-busy).
// The held call costs a goroutine and the connection's concurrency,
// which hadoopipc bounds.

const defaultBackoffWait = 10 * time.Second

// authorize is Config.Authorize, the backed-off calls waited out.
func (d *Door) authorize(ctx context.Context, row, user string, req any) (context.Context, error) {
	deadline := time.Now().Add(cmp.Or(d.cfg.BackoffWait, defaultBackoffWait))
	for {
		actx, err := d.cfg.Authorize(ctx, row, user, req)
		after := errs.RetryAfter(err)
		if err == nil || after <= 0 || time.Now().Add(after).After(deadline) {
			return actx, err
		}
		t := time.NewTimer(after)
		select {
		case <-ctx.Done():
			t.Stop()
			return actx, err
		case <-t.C:
		}
	}
}
