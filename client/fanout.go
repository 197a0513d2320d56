package client

import (
	"strings"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/base/chunks"
	"github.com/blockfs/blockfs/internal/node/blockstream"
)

// A block's pipeline is opened when its first packet goes, not when the
// block is allocated (Config.FanOutMax > 0). By then a small file's Close
// may hold the whole block: such a block is written to every datanode of
// its pipeline side by side, one declared-length WriteBlock each (no
// downstream, the block's CRC32C in the header), instead of down a chain
// in which each datanode forwards to the next and acknowledges only after
// the next one did. The bytes reach every replica in one hop, and the
// write waits for the slowest replica rather than for the sum of the
// hops: on a loaded machine each hop is several scheduling delays.
//
// Each replica is whole or absent: a datanode commits a declared-length
// block only once all of it arrived and matched its CRCs, and drops it on
// any failure. So a replica that failed needs no new generation stamp (no
// partial copy of this stamp exists anywhere): the write goes on with the
// replicas that succeeded, as a pipeline goes on without a failed member,
// and the namenode re-replicates the block after Complete. Only when
// every replica failed is the block written down a pipeline instead,
// with the pipeline's own recovery.

// fanOutOK reports whether the current block is written side by side.
func (w *Writer) fanOutOK() bool {
	b := w.cur
	return b.stream == nil && b.base == 0 && len(b.buf) > 0 && len(b.buf) <= w.c.cfg.FanOutMax
}

// fanOut writes the current block to its datanodes side by side and
// returns the combined final ack: the length and CRC every replica
// acknowledged, StoredOn those replicas. When none succeeded the block's
// pipeline is opened (and a nil ack returned) for finishBlock to write it
// the usual way.
func (w *Writer) fanOut() (*api.WriteBlockAck, error) {
	ack, failed, lastErr := w.sideBySide()
	if ack != nil {
		return ack, nil
	}
	// Every replica failed: nothing of this block is stored anywhere, so
	// the block goes down a pipeline as any other. The pipeline is tried
	// on the same datanodes first (the failure may have been the token's:
	// a datanode that had not yet heard of a new signing key); if that
	// fails too, the block is given back and placed anew without every
	// datanode that failed it, and placement answers Precondition rather
	// than a wait when that leaves none (openCur).
	if err := w.openCur(failed); err != nil {
		return nil, &errs.Error{Kind: errs.KindOf(err), Op: "WriteBlock", Path: w.path,
			Msg: "every replica failed side by side (" + strings.Join(failed, ", ") + ": " + lastErr.Error() + "), then the pipeline", Err: err}
	}
	return nil, nil
}

// sideBySide writes the current block to each of its datanodes at once,
// one declared-length WriteBlock each, and returns the combined final ack
// (nil if every replica failed, with the datanodes that failed and the
// last error).
func (w *Writer) sideBySide() (*api.WriteBlockAck, []string, error) {
	b := w.cur
	crc := chunks.CRC(b.buf)
	b.crcs = packetCRCs(b.crcs[:0], 0, b.buf, b.bpc)
	hdr := &api.WriteBlockHeader{
		Block:            &api.Block{Id: b.lb.Block.Id, GenStamp: b.lb.Block.GenStamp, Length: uint64(len(b.buf)), Crc32C: &crc},
		InodeId:          w.inode,
		Token:            b.token,
		BytesPerChecksum: uint32(b.bpc),
	}
	nodes := b.lb.Locations
	streams := make([]*blockstream.Writer, len(nodes))
	errsBy := make([]error, len(nodes))
	for i, d := range nodes {
		conn, err := w.c.conn("WriteBlock", d.Addr)
		if err == nil {
			streams[i], err = blockstream.Start(w.ctx, api.NewDataServiceClient(conn), hdr, 1)
		}
		if err == nil {
			err = streams[i].Send(b.buf, b.crcs, true)
		}
		errsBy[i] = err
	}
	ack := &api.WriteBlockAck{Last: true, Length: uint64(len(b.buf)), Crc32C: crc}
	var failed []string
	var lastErr error
	for i, d := range nodes {
		err := errsBy[i]
		var a *api.WriteBlockAck
		if err == nil {
			a, err = streams[i].Finish()
			if err == nil && (a.GetLength() != ack.Length || a.GetCrc32C() != crc) {
				err = errs.Newf(errs.Corrupt, "WriteBlock", blockName(b.lb.Block.Id), "datanode %s acknowledged %d bytes with CRC32C %08x; sent %d with %08x", d.Id, a.GetLength(), a.GetCrc32C(), ack.Length, crc)
			}
		}
		if err != nil {
			if streams[i] != nil {
				streams[i].Abort()
			}
			failed, lastErr = append(failed, d.Id), err
			continue
		}
		ack.StoredOn = append(ack.StoredOn, d.Id)
		ack.Receipts = append(ack.Receipts, a.GetReceipts()...)
	}
	if len(ack.StoredOn) == 0 {
		return nil, failed, lastErr
	}
	b.sent = b.end()
	return ack, nil, nil
}
