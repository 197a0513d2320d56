package datanode

import (
	"context"
	"time"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/base/chunks"
	"github.com/blockfs/blockfs/lbm"
)

// Open-ended writes (WriteBlockHeader.open_ended): a client's block whose
// length is known only at its last packet. Packets may end in a short
// chunk (an hflush), rewritten by the next packet; an hsync packet is
// made durable before it is acknowledged; and the replica is kept in the
// set of replicas being written until it commits, so a broken stream
// leaves it for recovery (rbw.go).

// claimWait bounds how long a new stream waits for the old owner of a
// replica to let go.
const claimWait = 10 * time.Second

// openRBW starts or reopens the local replica of an open-ended write.
func (w *writeStream) openRBW() error {
	const op = "WriteBlock"
	d, h, b := w.d, w.h, w.h.Block
	fresh := h.ResumeOffset == 0 && h.PreviousGenStamp == 0
	if !fresh && h.ResumeOffset == 0 && d.rbws.get(b.Id) == nil {
		// A rebuilt pipeline before any byte was acknowledged: this
		// datanode may never have seen the block (the failed one was
		// upstream of it), and then starts it afresh.
		_, held := d.store.Stat(b.Id)
		fresh = !held
	}
	if fresh {
		bw, err := d.store.CreateWith(w.ctx, lbm.BlockMeta{ID: b.Id, Inode: h.InodeId, GenStamp: b.GenStamp},
			lbm.CreateOptions{BytesPerChecksum: w.bpc, OpenEnded: true})
		if err != nil {
			return err
		}
		w.adopt(&rbw{id: b.Id, inode: h.InodeId, bpc: w.bpc, bw: bw})
		return nil
	}
	resume := int64(h.ResumeOffset)
	if resume > w.length {
		return errs.Newf(errs.Invalid, op, w.name, "resume offset %d past the maximum block size %d", resume, w.length)
	}
	if r := d.rbws.get(b.Id); r != nil {
		return w.resumeRBW(r, resume)
	}
	info, ok := d.store.Stat(b.Id)
	switch {
	case !ok:
		return errs.Newf(errs.NotFound, op, w.name, "no replica on datanode %s to resume at offset %d", d.id, resume)
	case info.GenStamp >= b.GenStamp:
		return errs.Newf(errs.Exist, op, w.name, "the replica here has generation %d, not older than %d", info.GenStamp, b.GenStamp)
	case info.Length < resume:
		return errs.Newf(errs.Precondition, op, w.name, "the replica here holds %d bytes, fewer than the %d to resume at", info.Length, resume)
	}
	// A finalized replica (an append, or a pipeline whose block finished
	// here): its first bytes go into a new version under the new stamp.
	bw, err := d.store.CreateWith(w.ctx, lbm.BlockMeta{ID: b.Id, Inode: info.Inode, GenStamp: b.GenStamp},
		lbm.CreateOptions{BytesPerChecksum: w.bpc, OpenEnded: true, Replace: true})
	if err != nil {
		return err
	}
	if err := d.copyPrefix(w.ctx, b.Id, resume, bw, w.bpc); err != nil {
		bw.Abort()
		return err
	}
	w.adopt(&rbw{id: b.Id, inode: info.Inode, bpc: w.bpc, bw: bw})
	d.met.resumes.WithLabelValues("finalized").Inc()
	return nil
}

// adopt registers r as this stream's replica.
func (w *writeStream) adopt(r *rbw) {
	w.d.rbws.add(r, w.cancel)
	w.r, w.bw, w.fresh = r, r.bw, true
}

// resumeRBW takes over a replica being written (its old stream is stopped
// first), cut to resume bytes, under the header's new stamp.
func (w *writeStream) resumeRBW(r *rbw, resume int64) error {
	const op = "WriteBlock"
	ctx, cancel := context.WithTimeout(w.ctx, claimWait)
	defer cancel()
	if err := r.claim(ctx, op, w.cancel); err != nil {
		return err
	}
	fail := func(err error) error { r.release(); return err }
	gen := r.bw.Meta().GenStamp
	switch {
	case gen >= w.h.Block.GenStamp:
		return fail(errs.Newf(errs.Exist, op, w.name, "the replica being written has generation %d, not older than %d", gen, w.h.Block.GenStamp))
	case r.bpc != w.bpc:
		return fail(errs.Newf(errs.Invalid, op, w.name, "bytes per checksum %d differs from the replica's %d", w.bpc, r.bpc))
	case r.bw.Written() < resume:
		return fail(errs.Newf(errs.Precondition, op, w.name, "the replica here holds %d bytes, fewer than the %d to resume at", r.bw.Written(), resume))
	}
	if err := r.bw.Truncate(resume); err != nil {
		return fail(err)
	}
	if err := r.bw.SetGenStamp(w.h.Block.GenStamp); err != nil {
		return fail(err)
	}
	w.r, w.bw, w.fresh = r, r.bw, true
	w.d.met.resumes.WithLabelValues("rbw").Inc()
	return nil
}

// packetChunks is how many chunks a packet of n bytes at block offset off
// has: chunks are aligned to block offsets, so a packet that starts
// inside a chunk begins with the short rest of it.
func packetChunks(off int64, n, bpc int) int {
	if n == 0 {
		return 0
	}
	first := min(n, bpc-int(off%int64(bpc)))
	return 1 + chunks.Count(n-first, bpc)
}

// verifyPacket checks each chunk of a packet at block offset off (the
// first may be short, see packetChunks); it returns the block offset of
// the first bad chunk, or -1.
func verifyPacket(off int64, data []byte, crcs []uint32, bpc int) int64 {
	if len(data) == 0 {
		return -1
	}
	first := min(len(data), bpc-int(off%int64(bpc)))
	if chunks.CRC(data[:first]) != crcs[0] {
		return off
	}
	if i := chunks.Verify(data[first:], crcs[1:], bpc); i >= 0 {
		return off + int64(first+i*bpc)
	}
	return -1
}

// storeOpen checks, forwards and writes packet p of an open-ended write;
// on the last one it commits the replica. A packet may start anywhere
// from the start of the replica's partial last chunk to its end (an
// append to a block that ends mid-chunk, or a resend after an hflush):
// the stored bytes before it complete its first chunk, and the bytes it
// repeats must be the stored ones.
func (w *writeStream) storeOpen(m *api.WriteBlockRequest, p *api.WritePacket, seq uint64) error {
	const op = "WriteBlock"
	n, off := int64(len(p.Data)), int64(p.Offset)
	bw, bpc := w.r.bw, int64(w.bpc)
	written := bw.Written()
	switch {
	case p.Seqno != seq:
		return errs.Newf(errs.Invalid, op, w.name, "packet %d at offset %d out of order: expected packet %d", p.Seqno, p.Offset, seq)
	case off > written || off < written/bpc*bpc:
		return errs.Newf(errs.Invalid, op, w.name, "packet %d at offset %d: expected one in [%d, %d] (the partial last chunk)", p.Seqno, off, written/bpc*bpc, written)
	case off+n > w.length:
		return errs.Newf(errs.Invalid, op, w.name, "packet at offset %d: %d bytes pass the maximum block size %d", off, n, w.length)
	case n == 0 && !p.Last && !p.Hsync:
		return errs.Newf(errs.Invalid, op, w.name, "empty packet at offset %d", off)
	case len(p.Crcs) != packetChunks(off, int(n), w.bpc):
		return errs.Newf(errs.Invalid, op, w.name, "packet at offset %d: %d CRCs for %d chunks", off, len(p.Crcs), packetChunks(off, int(n), w.bpc))
	}
	if err := w.checkAndForward(m, p, off); err != nil {
		return err
	}
	if n > 0 {
		at, data, crcs := off, p.Data, p.Crcs
		if off%bpc != 0 {
			var err error
			if at, data, crcs, err = w.completeChunk(off, data, crcs); err != nil {
				return err
			}
		}
		if err := bw.WriteAt(at, data, crcs); err != nil {
			if blames(err) {
				w.setBad(w.d.id, off)
			}
			return err
		}
	}
	if p.Hsync && !p.Last {
		if err := bw.Sync(); err != nil {
			w.setBad(w.d.id, off)
			return err
		}
	}
	if !p.Last {
		return nil
	}
	info, err := bw.Commit(w.ctx)
	if err != nil {
		w.setBad(w.d.id, off)
		return err
	}
	w.d.rbws.remove(w.r)
	w.info, w.committed = info, true
	w.length, w.crc = info.Length, info.CRC
	return nil
}

// completeChunk prefixes a packet that starts at off, inside a chunk,
// with the stored bytes of that chunk before off, so that it starts on a
// chunk boundary as the store takes it, and recomputes that chunk's CRC.
func (w *writeStream) completeChunk(off int64, data []byte, crcs []uint32) (int64, []byte, []uint32, error) {
	bpc := int64(w.bpc)
	start := off / bpc * bpc
	cr, err := w.r.bw.ReadChunks(start, off-start, nil)
	if err != nil {
		w.setBad(w.d.id, start)
		return 0, nil, nil, err
	}
	merged := make([]byte, 0, int(off-start)+len(data))
	merged = append(merged, cr.Data[:off-start]...)
	merged = append(merged, data...)
	out := make([]uint32, len(crcs))
	copy(out, crcs)
	out[0] = chunks.CRC(merged[:min(int64(len(merged)), bpc)])
	return start, merged, out, nil
}
