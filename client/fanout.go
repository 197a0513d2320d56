package client

import (
	"slices"
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
	f := w.startSideBySide()
	f.await(len(f.streams))
	return f.result()
}

// fanWrite is one block being written side by side: every replica's
// stream started, each replica's final ack gathered as it arrives, so a
// caller may act on the first replicas stored while the others finish.
type fanWrite struct {
	w       *Writer
	streams []*blockstream.Writer
	results chan fanResult // one per replica, in the order they end
	left    int            // results not yet taken
	ack     *api.WriteBlockAck
	failed  []string
	lastErr error
}

type fanResult struct {
	i   int
	ack *api.WriteBlockAck
	err error
}

// startSideBySide sends the current block to each of its datanodes, one
// declared-length WriteBlock each, and returns at once; each replica's
// final ack is awaited on its own.
func (w *Writer) startSideBySide() *fanWrite {
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
	f := &fanWrite{w: w, streams: make([]*blockstream.Writer, len(nodes)), results: make(chan fanResult, len(nodes)),
		left: len(nodes), ack: &api.WriteBlockAck{Last: true, Length: uint64(len(b.buf)), Crc32C: crc}}
	for i, d := range nodes {
		conn, err := w.c.conn("WriteBlock", d.Addr)
		if err == nil {
			f.streams[i], err = blockstream.Start(w.ctx, api.NewDataServiceClient(conn), hdr, 1)
		}
		if err == nil {
			err = f.streams[i].Send(b.buf, b.crcs, true)
		}
		if err != nil {
			f.results <- fanResult{i: i, err: err}
			continue
		}
		go func(i int, s *blockstream.Writer) {
			a, err := s.Finish()
			f.results <- fanResult{i: i, ack: a, err: err}
		}(i, f.streams[i])
	}
	return f
}

// await takes replicas' results until n replicas are stored or none is
// left to wait for.
func (f *fanWrite) await(n int) {
	b := f.w.cur
	for f.left > 0 && len(f.ack.StoredOn) < n {
		r := <-f.results
		f.left--
		d := b.lb.Locations[r.i]
		err, a := r.err, r.ack
		if err == nil && (a.GetLength() != f.ack.Length || a.GetCrc32C() != f.ack.Crc32C) {
			err = errs.Newf(errs.Corrupt, "WriteBlock", blockName(b.lb.Block.Id), "datanode %s acknowledged %d bytes with CRC32C %08x; sent %d with %08x", d.Id, a.GetLength(), a.GetCrc32C(), f.ack.Length, f.ack.Crc32C)
		}
		if err != nil {
			if f.streams[r.i] != nil {
				f.streams[r.i].Abort()
			}
			f.failed, f.lastErr = append(f.failed, d.Id), err
			continue
		}
		f.ack.StoredOn = append(f.ack.StoredOn, d.Id)
		f.ack.Receipts = append(f.ack.Receipts, a.GetReceipts()...)
	}
}

// writing returns the datanodes whose results are not in yet.
func (f *fanWrite) writing() []string {
	var out []string
	for _, d := range f.w.cur.lb.Locations {
		if !slices.Contains(f.ack.StoredOn, d.Id) && !slices.Contains(f.failed, d.Id) {
			out = append(out, d.Id)
		}
	}
	return out
}

// result is the combined final ack of the replicas stored so far (nil if
// none was, with the datanodes that failed and the last error). Once
// every replica's result was taken, the block counts as sent.
func (f *fanWrite) result() (*api.WriteBlockAck, []string, error) {
	if len(f.ack.StoredOn) == 0 {
		return nil, f.failed, f.lastErr
	}
	if f.left == 0 {
		f.w.cur.sent = f.w.cur.end()
	}
	return f.ack, nil, nil
}
