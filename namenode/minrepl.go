package namenode

import (
	"context"
	"time"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/blocks"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/base/caps"
	"github.com/blockfs/blockfs/security"
)

// awaitMinReplication waits until every block a Complete names has at
// least cfg.MinReplication replicas reported to this namenode, as HDFS's
// completeFile does: a file closed before any datanode said it holds the
// last block would be visible with blocks nobody can be sent to read. The
// datanodes report a block they stored within their incremental report
// delay, so the wait is usually one such delay (one report's trip at the
// default delay of 0); each report that adds replicas wakes the wait.
// After cfg.CompleteWait it answers Unavailable, and the client retries. A call that must wait
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
	// Wake on each report that adds replicas rather than polling: the
	// datanodes report a finalized replica at once, so the wait is one
	// report's trip, not the next poll after it.
	deadline := time.NewTimer(n.cfg.Namespace.CompleteWait)
	defer deadline.Stop()
	for {
		woken := n.blocks.ReplicasReported()
		short := n.shortBlock(bs, need)
		if short == nil {
			return nil
		}
		select {
		case <-woken:
		case <-deadline.C:
			return errs.Newf(errs.Unavailable, "Complete", p, "block %d has fewer than %d reported replicas after %v; retry", short.GetId(), need, n.cfg.Namespace.CompleteWait)
		case <-ctx.Done():
			return errs.Wrap(errs.Canceled, "Complete", p, ctx.Err())
		case <-n.stop:
			return errs.New(errs.Unavailable, "Complete", p, "namenode is stopping")
		}
	}
}

// acceptReceipts counts as reported each replica of the Complete's last
// block that a receipt under this namenode's key vouches for (the
// datanode's own report, carried by the writer: security's ReplicaFacts),
// so the wait below finds them at once rather than after the reports'
// trip. A receipt that does not check out, or names a datanode whose
// identity is revoked, counts for nothing; past the
// first maxReceipts none is looked at (each costs an HMAC).
func (n *Namenode) acceptReceipts(req *api.CompleteRequest) {
	if len(req.Blocks) == 0 || req.Blocks[len(req.Blocks)-1].Crc32C == nil {
		return
	}
	b := req.Blocks[len(req.Blocks)-1]
	for _, r := range req.Receipts[:min(len(req.Receipts), maxReceipts)] {
		f := security.ReplicaFacts{Datanode: r.GetDatanodeId(), BlockID: b.Id, GenStamp: b.GenStamp, Length: b.Length, Inode: req.InodeId, CRC: b.GetCrc32C()}
		revoked := n.revoked.Check(nil, security.Identity{Role: security.RoleDatanode, Name: f.Datanode}) != nil
		if !revoked && n.receipts.Check(f, r.GetKeyId(), r.GetMac()) {
			n.blocks.IncrementalReport(f.Datanode, []blocks.Replica{{BlockID: b.Id, GenStamp: b.GenStamp, Length: b.Length, Inode: req.InodeId}}, nil)
		}
	}
}

// maxReceipts bounds the receipts one Complete has checked: more replicas
// times namenodes than anyone writes.
const maxReceipts = 64

// replicated reports whether every block of bs has at least need reported
// replicas now.
func (n *Namenode) replicated(bs []*api.Block, need int) bool { return n.shortBlock(bs, need) == nil }

// shortBlock returns the first block of bs with fewer than need reported
// replicas now, or nil.
func (n *Namenode) shortBlock(bs []*api.Block, need int) *api.Block {
	for _, b := range bs {
		if len(n.blocks.Locations(b.GetId())) < need {
			return b
		}
	}
	return nil
}
