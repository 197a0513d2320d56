package datanode

import (
	"context"

	"github.com/blockfs/blockfs/lbm"
)

// This file is where the data path meets the block store: streamed
// writes go through lbm's BlockWriter (chunks verified and written as
// they arrive, never a whole-block buffer) and range reads through
// ReadChunks (only the chunks a range touches).

// blockWriter is what the write path needs of a replica being written
// (lbm.BlockWriter, or a check of a replica already here).
type blockWriter interface {
	// Write stores data, whole chunks (the block's last may be short),
	// after checking each chunk against crcs: a mismatch is errs.Corrupt
	// naming the block and the chunk's offset.
	Write(data []byte, crcs []uint32) error
	// Written is the number of bytes taken so far.
	Written() int64
	// Commit makes the replica durable and visible.
	Commit(ctx context.Context) (lbm.BlockInfo, error)
	// Abort drops a replica that was not committed.
	Abort()
}

// createBlock starts a replica of m (m.Length declared) with chunks of
// bpc bytes.
func (d *Datanode) createBlock(ctx context.Context, m lbm.BlockMeta, bpc int) (blockWriter, error) {
	return d.store.Create(ctx, m, bpc)
}

// readChunks reads the chunks of block id that [off, off+n) touches,
// using buf when it is large enough.
func (d *Datanode) readChunks(ctx context.Context, id uint64, off, n int64, buf []byte) (lbm.ChunkRange, error) {
	return d.store.ReadChunks(ctx, id, off, n, buf)
}

// replicaBytesPerChecksum is the chunk size of a stored replica; an
// old-format replica (a whole-block CRC only) is served in chunks of the
// default size, whose CRCs ReadChunks computes after checking the block.
func (d *Datanode) replicaBytesPerChecksum(info lbm.BlockInfo) int {
	if info.BytesPerChecksum > 0 {
		return info.BytesPerChecksum
	}
	return lbm.DefaultBytesPerChecksum
}
