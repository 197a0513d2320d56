package datanode

import (
	"context"

	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/chunks"
	"github.com/blockfs/blockfs/lbm"
)

// This file adapts the block store to the streamed data path. Until lbm's
// BlockWriter and ReadChunks land it stands in for them with Put and Read
// (so a write still buffers its block here, and a range read still reads
// the whole block); the rest of the datanode only sees blockWriter and
// readChunks, so switching is confined to this file.

// defaultBytesPerChecksum is the chunk size when a header gives none.
const defaultBytesPerChecksum = 512

// blockWriter is what the write path needs of a replica being written:
// whole chunks in order with their CRC32Cs, verified as they arrive.
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

// chunkRange is a chunk-aligned piece of a stored block.
type chunkRange struct {
	Offset           int64
	BytesPerChecksum int
	Data             []byte
	CRCs             []uint32
}

// createBlock starts a replica of m with chunks of bpc bytes.
func (d *Datanode) createBlock(ctx context.Context, m lbm.BlockMeta, length int64, bpc int) (blockWriter, error) {
	if _, ok := d.store.Stat(m.ID); ok {
		return nil, errs.Newf(errs.Exist, "write block", blockName(m.ID), "a replica is already stored")
	}
	return &bufferedWriter{d: d, m: m, bpc: bpc, buf: make([]byte, 0, min(length, 64<<20))}, nil
}

// bufferedWriter collects a block and stores it with Put on Commit.
type bufferedWriter struct {
	d   *Datanode
	m   lbm.BlockMeta
	bpc int
	buf []byte
}

func (w *bufferedWriter) Write(data []byte, crcs []uint32) error {
	if err := verifyChunks(blockName(w.m.ID), int64(len(w.buf)), w.bpc, data, crcs); err != nil {
		return err
	}
	w.buf = append(w.buf, data...)
	return nil
}

func (w *bufferedWriter) Written() int64 { return int64(len(w.buf)) }

func (w *bufferedWriter) Commit(ctx context.Context) (lbm.BlockInfo, error) {
	if err := w.d.store.Put(ctx, w.m, w.buf); err != nil {
		return lbm.BlockInfo{}, err
	}
	w.buf = nil
	info, ok := w.d.store.Stat(w.m.ID)
	if !ok {
		return info, errs.Newf(errs.NotFound, "write block", blockName(w.m.ID), "replica vanished after commit")
	}
	return info, nil
}

func (w *bufferedWriter) Abort() { w.buf = nil }

// readChunks reads the chunks of block id that [off, off+n) touches.
func (d *Datanode) readChunks(ctx context.Context, id uint64, off, n int64, bpc int, _ []byte) (chunkRange, error) {
	info, ok := d.store.Stat(id)
	if !ok {
		return chunkRange{}, errs.Newf(errs.NotFound, "read block", blockName(id), "no replica on datanode %s", d.id)
	}
	lo := off / int64(bpc) * int64(bpc)
	hi := min((off+n+int64(bpc)-1)/int64(bpc)*int64(bpc), info.Length)
	data, err := d.store.Read(ctx, id, lo, hi-lo)
	if err != nil {
		return chunkRange{}, err
	}
	return chunkRange{Offset: lo, BytesPerChecksum: bpc, Data: data, CRCs: chunks.Sums(nil, data, bpc)}, nil
}

// replicaBytesPerChecksum is the chunk size of a stored replica.
func (d *Datanode) replicaBytesPerChecksum(lbm.BlockInfo) int { return defaultBytesPerChecksum }
