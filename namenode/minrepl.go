package namenode

import (
	"context"
	"time"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
)

// awaitMinReplication waits until every block a Complete names has at
// least cfg.MinReplication replicas reported to this namenode, as HDFS's
// completeFile does: a file closed before any datanode said it holds the
// last block would be visible with blocks nobody can be sent to read. The
// datanodes report a block they stored within their incremental report
// delay, so the wait is usually one such delay. After cfg.CompleteWait it
// answers Unavailable, and the client retries.
func (n *Namenode) awaitMinReplication(ctx context.Context, p string, bs []*api.Block) error {
	need := n.cfg.Namespace.MinReplication
	if need == 0 {
		return nil
	}
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
