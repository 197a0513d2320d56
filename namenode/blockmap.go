package namenode

import (
	"context"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/blocks"
	"github.com/blockfs/blockfs/errs"
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
	const op = "report bad blocks"
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

// pipelineRecorder is a blockEvents that learns the datanodes chosen to
// write a new block (AddBlockCommand.targets).
type pipelineRecorder interface {
	Pipeline(b namespace.Block, datanodes []string)
}

// Pipeline records b's write pipeline: only those datanodes' "received"
// reports make a replica of b verified.
func (a blockEventsAdapter) Pipeline(b namespace.Block, datanodes []string) {
	a.m.SetPipeline(b.ID, datanodes)
}

// expectedResetter is a blockEvents that can replace its whole expected
// set at once (fsm.Restore).
type expectedResetter interface {
	// ResetExpected makes the expected blocks exactly those that each
	// yields; the rest are forgotten.
	ResetExpected(each func(fn func(b namespace.Block, inode namespace.ID, repl uint32, complete bool)))
}

// ResetExpected replaces the block map's expected set with the blocks each
// yields, in batches; the replicas of blocks no longer expected become
// deletion work for the leader.
func (a blockEventsAdapter) ResetExpected(each func(fn func(b namespace.Block, inode namespace.ID, repl uint32, complete bool))) {
	r := a.m.BeginReset()
	each(func(b namespace.Block, inode namespace.ID, repl uint32, complete bool) {
		r.Add(blocks.ExpectedBlock{ID: b.ID, GenStamp: b.GenStamp, Inode: uint64(inode), Replication: repl, Complete: complete})
	})
	r.Finish()
}

// resetBlockEvents tells the block map the blocks of a restored state. With
// f.mu held.
func (f *fsm) resetBlockEvents(st *state) {
	if f.events == nil {
		return
	}
	if r, ok := f.events.(expectedResetter); ok {
		r.ResetExpected(st.tree.ForEachBlock)
		return
	}
	st.tree.ForEachBlock(func(b namespace.Block, inode namespace.ID, repl uint32, complete bool) {
		f.events.Expect(b, inode, repl, complete)
	})
}
