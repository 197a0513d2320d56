package lbm

import (
	"bytes"
	"hash/crc32"

	"github.com/blockfs/blockfs/errs"
)

// checkStaleLocked checks that data, to be written at off (chunk-aligned),
// is the same as the bytes written there before a Truncate, where the two
// overlap: chunk by chunk, by comparing CRCs over the common length (a
// chunk shorter than the stale one is compared with the bytes read back).
func (w *BlockWriter) checkStaleLocked(op string, off int64, data []byte, crcs []uint32) error {
	bpc := int64(w.bpc)
	for i := range crcs {
		start := off + int64(i)*bpc
		if start >= w.staleLen {
			break
		}
		k := start / bpc
		if k >= int64(len(w.stale)) {
			break
		}
		d := data[int64(i)*bpc : min(int64(i+1)*bpc, int64(len(data)))]
		have := min(bpc, w.staleLen-start) // bytes the stale entry covers
		same := true
		switch l := int64(len(d)); {
		case l == have:
			same = crcs[i] == w.stale[k]
		case l > have:
			same = crc32c(d[:have]) == w.stale[k]
		default:
			old := make([]byte, l)
			if err := w.preadLocked(op, old, start); err != nil {
				return err
			}
			same = bytes.Equal(old, d)
		}
		if !same {
			return errs.Newf(errs.Invalid, op, "", "block %d: rewrite of truncated bytes with different bytes at offset %d",
				w.meta.ID, start)
		}
	}
	return nil
}

// SetGenStamp raises the generation stamp the block will be committed with
// (a pipeline or block recovery bumping the replica's genstamp). gs must
// be above the current one (errs.Invalid otherwise).
func (w *BlockWriter) SetGenStamp(gs uint64) error {
	const op = "lbm.BlockWriter.SetGenStamp"
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(op); err != nil {
		return err
	}
	if gs <= w.meta.GenStamp {
		return errs.Newf(errs.Invalid, op, "", "block %d: generation stamp %d not above %d", w.meta.ID, gs, w.meta.GenStamp)
	}
	w.meta.GenStamp = gs
	return nil
}

// Truncate cuts an open-ended write to its first n bytes (0 <= n <=
// Written(), else errs.Invalid; a declared-length writer:
// errs.Precondition), as pipeline and block recovery do to a replica. The
// chunks of [0, n) are read back, decrypted and verified (errs.Corrupt on
// a mismatch, and nothing changes) to recompute the running CRCs; O(n).
// The next WriteAt continues at n (or at the start of its chunk if n is
// mid-chunk). Bytes past n stay on disk until Commit or Abort, and may only
// be written again with the same bytes (errs.Invalid otherwise), so the
// resend of a packet after a recovery is accepted and no CTR keystream
// position encrypts two plaintexts. For the same reason, in an encrypted
// store a Commit that ends short of bytes written before a Truncate first
// copies the block to fresh space (O(Written()), recovery only), since
// its chunk CRC table would otherwise be written over the cut bytes.
func (w *BlockWriter) Truncate(n int64) error {
	const op = "lbm.BlockWriter.Truncate"
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(op); err != nil {
		return err
	}
	if !w.openEnded {
		return errs.Newf(errs.Precondition, op, "", "block %d: truncate of a writer with a declared length", w.meta.ID)
	}
	if w.buffered {
		if err := w.spillLocked(op); err != nil {
			return err
		}
	}
	if n < 0 || n > w.written {
		return errs.Newf(errs.Invalid, op, "", "block %d: truncate to %d outside [0, %d]", w.meta.ID, n, w.written)
	}
	if n == w.written {
		return nil
	}
	bpc := int64(w.bpc)
	// Read back every chunk that [0, n) touches, whole, to verify it.
	end := min((n+bpc-1)/bpc*bpc, w.written)
	whole := n / bpc * bpc
	var wholeCRC, short uint32
	buf := make([]byte, min(end, max(bpc, maxWriteScratch/bpc*bpc)))
	for p := int64(0); p < end; {
		b := buf[:min(int64(len(buf)), end-p)]
		if err := w.preadLocked(op, b, p); err != nil {
			return err
		}
		for q := int64(0); q < int64(len(b)); q += bpc {
			chunk := b[q:min(q+bpc, int64(len(b)))]
			k := (p + q) / bpc
			if crc32c(chunk) != w.crcs[k] {
				return errs.Newf(errs.Corrupt, op, w.c.dataPath, "block %d: chunk at offset %d: checksum mismatch on read-back",
					w.meta.ID, p+q)
			}
			if p+q < whole {
				wholeCRC = crc32.Update(wholeCRC, castagnoli, chunk)
			} else {
				short = crc32c(chunk[:n-(p+q)])
			}
		}
		p += int64(len(b))
	}
	// Remember what lies past n: per chunk, whichever of the current
	// table and an earlier stale one covers more bytes (they agree where
	// both do).
	staleLen := max(w.staleLen, w.written)
	stale := make([]uint32, (staleLen+bpc-1)/bpc)
	for k := range stale {
		start := int64(k) * bpc
		cur := int64(-1)
		if k < len(w.crcs) {
			cur = min(bpc, w.written-start)
			stale[k] = w.crcs[k]
		}
		if k < len(w.stale) && min(bpc, w.staleLen-start) > cur {
			stale[k] = w.stale[k]
		}
	}
	w.stale, w.staleLen = stale, staleLen
	w.crcs = w.crcs[:(n+bpc-1)/bpc]
	if n > whole {
		w.crcs[len(w.crcs)-1] = short
	}
	w.wholeCRC, w.written = wholeCRC, n
	w.truncs++
	return nil
}
