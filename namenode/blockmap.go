package namenode

import (
	"context"
	"slices"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/blocks"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/namenode/fsm"
	"github.com/blockfs/blockfs/namespace"
	"github.com/blockfs/blockfs/security"
)

// maxBadBlocksPerReport bounds one ReportBadBlocks request.
const maxBadBlocksPerReport = 1024

// reportBadBlocks is ClientService.ReportBadBlocks. Who reports decides what
// a report does:
//
//   - the datanode holding the replica (its certificate, or simple-auth
//     role, names it): it found the stored checksum wrong, and is trusted:
//     the replica is corrupt, re-replicated and then deleted, never while it
//     is the block's last replica (blocks.Manager.ReportCorrupt);
//   - anyone else (a user, no identity at all): the replica only becomes
//     suspect; the leader asks its datanode to re-verify it, which then
//     reports it corrupt or verified (blocks.Manager.ReportSuspect).
//
// A datanode may only report its own replicas. A malformed request changes
// nothing; a request naming no replica this namenode knows of is NotFound.
func (n *Namenode) reportBadBlocks(ctx context.Context, req *api.ReportBadBlocksRequest) (*api.ReportBadBlocksResponse, error) {
	const op = "ReportBadBlocks"
	refuse := func(err error) (*api.ReportBadBlocksResponse, error) {
		n.blocks.Refuse(blocks.RefusedBadBlock)
		return nil, err
	}
	if req.DatanodeId == "" || len(req.Blocks) == 0 {
		return refuse(errs.New(errs.Invalid, op, "", "datanode_id and blocks are required"))
	}
	if len(req.Blocks) > maxBadBlocksPerReport {
		return refuse(errs.Newf(errs.Invalid, op, "", "%d blocks in one report; at most %d", len(req.Blocks), maxBadBlocksPerReport))
	}
	for _, b := range req.Blocks {
		if b == nil || b.Id == 0 {
			return refuse(errs.New(errs.Invalid, op, "", "a block without an id"))
		}
	}
	id, _ := security.IdentityFromContext(ctx)
	trusted := id.Role == security.RoleDatanode
	if trusted && id.Name != req.DatanodeId {
		return refuse(errs.Newf(errs.Permission, op, "", "datanode %s may only report its own replicas, not datanode %s's", id.Name, req.DatanodeId))
	}
	found := 0
	for _, b := range req.Blocks {
		var ok bool
		if trusted {
			ok = n.blocks.ReportCorrupt(b.Id, req.DatanodeId)
		} else {
			ok = n.blocks.ReportSuspect(b.Id, b.GenStamp, req.DatanodeId)
		}
		if ok {
			found++
		}
	}
	if found == 0 {
		n.blocks.Refuse(blocks.RefusedBadBlock)
		return nil, errs.Newf(errs.NotFound, op, "", "datanode %s holds no reported replica of these blocks here", req.DatanodeId)
	}
	return &api.ReportBadBlocksResponse{}, nil
}

// checkDatanodeCaller refuses a DatanodeProtocol call that speaks for
// datanode dn from a caller that is not that datanode: a datanode naming
// another, or a user. The authorizer refuses these before any handler runs;
// this is the handlers' own guard, counted as a refused report. A caller
// without an identity passes here (only the authorizer can judge it).
func (n *Namenode) checkDatanodeCaller(ctx context.Context, op, dn string) error {
	id, ok := security.IdentityFromContext(ctx)
	if !ok || (id.Role == security.RoleDatanode && id.Name == dn) {
		return nil
	}
	n.blocks.Refuse(blocks.RefusedReport)
	return errs.Newf(errs.Permission, op, "", "%s may not speak for datanode %q", id, dn)
}

// Pipeline records b's write pipeline: only those datanodes' "received"
// reports make a replica of b verified.
func (a blockEventsAdapter) Pipeline(b namespace.Block, datanodes []string) {
	a.m.SetPipeline(b.ID, datanodes)
}

// ResetExpected replaces the block map's expected set with the blocks each
// yields, in batches; the replicas of blocks no longer expected become
// deletion work for the leader.
func (a blockEventsAdapter) ResetExpected(n int, each func(fn func(b namespace.Block, inode namespace.ID, repl uint32, complete bool))) {
	r := a.m.BeginReset()
	r.Expect(n)
	each(func(b namespace.Block, inode namespace.ID, repl uint32, complete bool) {
		r.Add(blocks.ExpectedBlock{ID: b.ID, GenStamp: b.GenStamp, Inode: uint64(inode), Replication: repl, Complete: complete})
	})
	r.Finish()
}

// withCommittedCRC sets b's CRC32C to the one the namespace recorded for
// it (the writer's), so the datanode that receives a replicate or verify
// command can check the bytes against what was written, not only against
// what the source stored. b is left without one when the namespace has
// none.
func (n *Namenode) withCommittedCRC(b *api.Block) *api.Block {
	if crc, ok := n.fsm.CommittedCRC(b.Id, b.GenStamp); ok {
		b.Crc32C = &crc
	}
	return b
}

// crcCheckChunk bounds the reported blocks checked under one hold of the
// FSM's read lock, so a large full report does not hold off writes.
const crcCheckChunk = 4096

// crcMismatches returns the ids of the reported replicas that carry a
// CRC32C differing from the one the namespace recorded for the same block
// (same id, generation stamp and length): the datanode holds other bytes
// than the writer wrote, so the replica is corrupt.
func (n *Namenode) crcMismatches(bs []*api.ReportedBlock) []uint64 {
	var out []uint64
	for start := 0; start < len(bs); start += crcCheckChunk {
		part := bs[start:min(start+crcCheckChunk, len(bs))]
		if !slices.ContainsFunc(part, func(rb *api.ReportedBlock) bool { return rb.GetBlock().Crc32C != nil }) {
			continue
		}
		n.fsm.View(func(r fsm.Reader) {
			for _, rb := range part {
				b := rb.GetBlock()
				if b.Crc32C == nil {
					continue
				}
				nb, _, ok := r.Block(b.Id)
				if ok && nb.HasCRC && nb.GenStamp == b.GenStamp && nb.Length == b.Length && nb.CRC != *b.Crc32C {
					out = append(out, b.Id)
				}
			}
		})
	}
	return out
}

// reportCRCMismatches marks datanode dn's replicas whose reported CRC32C
// differs from the namespace's corrupt, through the block map's corrupt
// path (re-replicated from a good copy, then deleted; never the last
// replica), as if dn had reported them bad itself.
func (n *Namenode) reportCRCMismatches(dn string, bs []*api.ReportedBlock) {
	for _, id := range n.crcMismatches(bs) {
		if n.blocks.ReportCorrupt(id, dn) {
			n.log.Warn("replica checksum differs from the namespace's: marked corrupt", "datanode", dn, "block", id)
		}
	}
}

// ReloadTopology rereads the topology file (the namenode command calls it
// on SIGHUP) and moves every datanode to the rack it now names. On error
// the old topology stays in force.
func (n *Namenode) ReloadTopology() error {
	if err := n.topo.Reload(); err != nil {
		return err
	}
	n.blocks.Relocate(n.topo.Rack)
	n.log.Info("topology reloaded", "file", n.topo.Path(), "racks", len(n.blocks.Racks()))
	return nil
}
