package datanode

import (
	"context"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/lbm"
)

// Copy-on-truncate (HDFS's truncate inside a block a snapshot holds): the
// recovery's block is a new block of the same file, and each replica's
// datanode makes it from its finalized replica of the snapshot's block,
// cut to the new length, under the recovery id. The snapshot's replica
// is left as it is. The recovery token names the new block; the source
// must be a replica of the same inode, so a token for one file never
// copies another's bytes.

// copyOnTruncate makes block id (generation rid) from the first n bytes
// of the local replica of from, a block of inode.
func (d *Datanode) copyOnTruncate(ctx context.Context, id, rid, inode uint64, from *api.Block, n int64) (lbm.BlockInfo, error) {
	const op = "UpdateReplicaUnderRecovery"
	replace := false
	if info, ok := d.store.Stat(id); ok {
		switch {
		case info.GenStamp == rid && info.Length == n:
			return info, nil // done before: a repeated call
		case info.GenStamp >= rid:
			return lbm.BlockInfo{}, errs.Newf(errs.Precondition, op, blockName(id), "the copy exists already as generation %d of %d bytes, not older than recovery %d", info.GenStamp, info.Length, rid)
		}
		replace = true // an earlier attempt's copy, never committed: made again
	}
	src, ok := d.store.Stat(from.GetId())
	switch {
	case !ok:
		return lbm.BlockInfo{}, errs.Newf(errs.NotFound, op, blockName(from.GetId()), "no finalized replica to copy on datanode %s", d.id)
	case src.Inode != inode:
		return lbm.BlockInfo{}, errs.Newf(errs.Permission, op, blockName(from.GetId()), "the replica belongs to inode %d, not %d", src.Inode, inode)
	case src.GenStamp != from.GetGenStamp():
		return lbm.BlockInfo{}, errs.Newf(errs.Precondition, op, blockName(from.GetId()), "the replica has generation %d, not %d", src.GenStamp, from.GetGenStamp())
	case src.Length < n:
		return lbm.BlockInfo{}, errs.Newf(errs.Precondition, op, blockName(from.GetId()), "the replica holds %d bytes, fewer than %d", src.Length, n)
	}
	return d.finalizeCopy(ctx, lbm.BlockMeta{ID: id, Inode: inode, GenStamp: rid}, replace, src, n)
}
