package namenode

import (
	"context"
	"time"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/base/caps"
)

// awaitMinReplication waits until every block a Complete names has at
// least cfg.MinReplication replicas reported to this namenode, as HDFS's
// completeFile does: a file closed before any datanode said it holds the
// last block would be visible with blocks nobody can be sent to read. The
// datanodes report a block they stored within their incremental report
// delay, so the wait is usually one such delay. After cfg.CompleteWait it
// answers Unavailable, and the client retries. A call that must wait
// takes one of its user's Complete waits (Limits.CompleteWaits*) and is refused
// with ResourceExhausted when the user, or the namenode, has none left.
func (n *Namenode) awaitMinReplication(ctx context.Context, user, p string, bs []*api.Block) error {
	need := n.cfg.Namespace.MinReplication
	if need == 0 || n.replicated(bs, need) {
		return nil
	}
	switch n.completeWaits.Acquire(user) {
	case caps.PerKey:
		n.met.refused.WithLabelValues("complete_waits_per_user").Inc()
		return errs.Newf(errs.Exhausted, "Complete", p, "user %s has %d Complete calls waiting for replica reports, the most allowed (--complete-waits-per-user); retry in a moment",
			user, n.cfg.Limits.CompleteWaitsPerUser)
	case caps.Total:
		n.met.refused.WithLabelValues("complete_waits_total").Inc()
		return errs.Newf(errs.Exhausted, "Complete", p, "%d Complete calls are waiting for replica reports, the most allowed (--complete-waits-total); retry in a moment",
			n.cfg.Limits.CompleteWaitsTotal)
	}
	defer n.completeWaits.Release(user)
	deadline := time.Now().Add(n.cfg.Namespace.CompleteWait)
	wait := time.Millisecond
	for _, b := range bs {
		for len(n.blocks.Locations(b.GetId())) < need {
			if time.Now().After(deadline) {
				return errs.Newf(errs.Unavailable, "Complete", p, "block %d has fewer than %d reported replicas after %v; retry", b.GetId(), need, n.cfg.Namespace.CompleteWait)
			}
			select {
			case <-ctx.Done():
				return errs.Wrap(errs.Canceled, "Complete", p, ctx.Err())
			case <-n.stop:
				return errs.New(errs.Unavailable, "Complete", p, "namenode is stopping")
			case <-time.After(wait):
			}
			wait = min(2*wait, 50*time.Millisecond)
		}
	}
	return nil
}

// replicated reports whether every block of bs has at least need reported
// replicas now.
func (n *Namenode) replicated(bs []*api.Block, need int) bool {
	for _, b := range bs {
		if len(n.blocks.Locations(b.GetId())) < need {
			return false
		}
	}
	return true
}
