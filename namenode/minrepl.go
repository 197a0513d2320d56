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
//
// held counts the replicas of blocks the namespace does not expect yet
// (PutFile's; blocks.Manager.Held) instead of the locations a read is
// given; op names the call in the errors.
func (n *Namenode) awaitMinReplication(ctx context.Context, op, user, p string, bs []*api.Block, held bool) error {
	need := n.cfg.Namespace.MinReplication
	if need == 0 || n.shortBlock(bs, need, held) == nil {
		return nil
	}
	switch n.completeWaits.Acquire(user) {
	case caps.PerKey:
		n.met.refused.WithLabelValues("complete_waits_per_user").Inc()
		return errs.Newf(errs.Exhausted, op, p, "user %s has %d Complete calls waiting for replica reports, the most allowed (--complete-waits-per-user); retry in a moment",
			user, n.cfg.Limits.CompleteWaitsPerUser)
	case caps.Total:
		n.met.refused.WithLabelValues("complete_waits_total").Inc()
		return errs.Newf(errs.Exhausted, op, p, "%d Complete calls are waiting for replica reports, the most allowed (--complete-waits-total); retry in a moment",
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
		short := n.shortBlock(bs, need, held)
		if short == nil {
			return nil
		}
		select {
		case <-woken:
		case <-deadline.C:
			return errs.Newf(errs.Unavailable, op, p, "block %d has fewer than %d reported replicas after %v; retry", short.GetId(), need, n.cfg.Namespace.CompleteWait)
		case <-ctx.Done():
			return errs.Wrap(errs.Canceled, op, p, ctx.Err())
		case <-n.stop:
			return errs.New(errs.Unavailable, op, p, "namenode is stopping")
		}
	}
}

// acceptReceipts counts as reported each replica of block b (of inode
// inode: the last of a Complete's blocks, or a PutFile's) that a receipt
// under this namenode's key vouches for (the datanode's own report,
// carried by the writer: security's ReplicaFacts),
// so the wait below finds them at once rather than after the reports'
// trip. A receipt that does not check out, or names a datanode whose
// identity is revoked, counts for nothing; past the
// first maxReceipts none is looked at (each costs an HMAC).
func (n *Namenode) acceptReceipts(inode uint64, b *api.Block, receipts []*api.Receipt) {
	if b == nil || b.Crc32C == nil {
		return
	}
	for _, r := range receipts[:min(len(receipts), maxReceipts)] {
		f := security.ReplicaFacts{Datanode: r.GetDatanodeId(), BlockID: b.Id, GenStamp: b.GenStamp, Length: b.Length, Inode: inode, CRC: b.GetCrc32C()}
		revoked := n.revoked.Check(nil, security.Identity{Role: security.RoleDatanode, Name: f.Datanode}) != nil
		if !revoked && n.receipts.Check(f, r.GetKeyId(), r.GetMac()) {
			n.blocks.IncrementalReport(f.Datanode, []blocks.Replica{{BlockID: b.Id, GenStamp: b.GenStamp, Length: b.Length, Inode: inode}}, nil)
		}
	}
}

// maxReceipts bounds the receipts one Complete has checked: more replicas
// times namenodes than anyone writes.
const maxReceipts = 64

// shortBlock returns the first block of bs with fewer than need reported
// replicas now (held: as awaitMinReplication says), or nil.
func (n *Namenode) shortBlock(bs []*api.Block, need int, held bool) *api.Block {
	for _, b := range bs {
		k := 0
		if held {
			k = n.blocks.Held(b.GetId(), b.GetGenStamp())
		} else {
			k = len(n.blocks.Locations(b.GetId()))
		}
		if k < need {
			return b
		}
	}
	return nil
}
