package lbm

import (
	"bytes"
	"context"
	"errors"
	"hash/crc32"
	"io"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/base/chunks"
	crcmath "github.com/blockfs/blockfs/internal/base/crc32c"
)

// BlockWriter is a streamed write of one block into one container, which
// it holds as that container's only writer until Commit or Abort. Its
// methods may be called from several goroutines (they serialise on the
// writer's mutex; ReadChunks drops it for its preads).
type BlockWriter struct {
	s         *Store
	c         *container
	fc        *fileCipher
	bpc       int
	openEnded bool // meta.Length is a maximum; Commit takes Written() bytes
	replace   bool // Commit replaces a live version of the id (lower genstamp)

	mu       sync.Mutex
	off      int64     // data file offset of the block's first byte (moved by relocateLocked only)
	meta     BlockMeta // ID and Inode fixed; GenStamp raised by SetGenStamp
	state    writerState
	written  int64
	wholeCRC uint32   // CRC32C of the whole chunks: bytes [0, written/bpc*bpc)
	crcs     []uint32 // chunk CRC table of [0, written); the last is the short chunk's if any
	// After a Truncate, stale describes bytes past written that were
	// written before (chunk CRCs of [0, staleLen); a chunk's entry covers
	// min(bpc, staleLen-start) bytes). A later write over that range must
	// carry the same bytes: a CTR keystream position never encrypts two
	// plaintexts. nil when nothing past written was ever written.
	stale    []uint32
	staleLen int64
	truncs   uint64 // Truncate and relocate calls (ReadChunks retries across one)
	scratch  []byte // ciphertext, at most maxWriteScratch bytes
	touched  int64  // bytes past off that any write reached (punched on release)
	keep     bool   // on release, leave the bytes (the CREATE2 may be durable)
	// The last RBW record Sync appended (open-ended writers): it stands
	// in the container until Commit's CREATE2 or Abort's RBW-drop.
	rbwSynced bool
	rbwLen    int64
	rbwGen    uint64
}

type writerState uint8

// maxWriteScratch bounds the ciphertext buffer of an encrypting writer.
const maxWriteScratch = 1 << 20

const (
	writerOpen writerState = iota
	writerCommitted
	writerDone // aborted, or failed and released
)

// CreateOptions are the options of CreateWith.
type CreateOptions struct {
	// BytesPerChecksum is the chunk size: a power of two in [64, 1<<20].
	BytesPerChecksum int
	// OpenEnded makes BlockMeta.Length a maximum (at most
	// Config.MaxContainerSize; 0 means Config.MaxContainerSize): the block
	// is as long as what was written when Commit is called, and every
	// WriteAt may end with a short chunk (an hflush of a partial chunk),
	// rewritten by the next WriteAt. Truncate is for open-ended writers only.
	OpenEnded bool
	// Replace lets the id be live already with a lower generation stamp
	// than BlockMeta.GenStamp (an append reopening a finalized block, or a
	// recovery rewriting a replica). The old version stays readable until
	// Commit, which switches the index to the new one atomically and then
	// releases the old one's space. A live version with an equal or higher
	// generation stamp, or another writer of the id: errs.Exist. An id not
	// live is created as without Replace.
	Replace bool
}

// Create starts a streamed write of block m.ID with m.Length bytes
// declared: CreateWith(ctx, m, CreateOptions{BytesPerChecksum:
// bytesPerChecksum}).
func (s *Store) Create(ctx context.Context, m BlockMeta, bytesPerChecksum int) (*BlockWriter, error) {
	return s.CreateWith(ctx, m, CreateOptions{BytesPerChecksum: bytesPerChecksum})
}

// CreateWith starts a streamed write of block m.ID (m.CRC is ignored: the
// store computes it). Without o.OpenEnded, m.Length is the declared length
// and Commit requires exactly that many bytes. The new block (or new
// version) is invisible (Stat, Read and Blocks don't see it, or see the
// old version; a second Create or Put of the id is errs.Exist) until
// Commit. The writer holds one container until Commit or Abort; a
// length above Config.MaxContainerSize is errs.Invalid.
func (s *Store) CreateWith(ctx context.Context, m BlockMeta, o CreateOptions) (*BlockWriter, error) {
	const op = "lbm.Store.Create"
	if err := s.checkOpen(ctx, op); err != nil {
		return nil, err
	}
	bytesPerChecksum := o.BytesPerChecksum
	if err := chunks.CheckSize(op, bytesPerChecksum); err != nil {
		return nil, err
	}
	if o.OpenEnded && m.Length == 0 {
		m.Length = s.cfg.MaxContainerSize
	}
	if m.Length < 0 || m.Length > s.cfg.MaxContainerSize {
		return nil, errs.Newf(errs.Invalid, op, "", "block %d: declared length %d outside [0, %d]", m.ID, m.Length, s.cfg.MaxContainerSize)
	}
	if o.Replace {
		if cur, ok := s.index.reserveReplace(m.ID, m.GenStamp); !ok {
			if cur != 0 {
				return nil, errs.Newf(errs.Exist, op, "", "block %d already exists with generation stamp %d (replacement has %d)",
					m.ID, cur, m.GenStamp)
			}
			return nil, errs.Newf(errs.Exist, op, "", "block %d is being written", m.ID)
		}
	} else if !s.index.reserve(m.ID) {
		return nil, errs.Newf(errs.Exist, op, "", "block %d already exists", m.ID)
	}
	var crcs []uint32
	if !o.OpenEnded {
		crcs = make([]uint32, 0, (m.Length+int64(bytesPerChecksum)-1)/int64(bytesPerChecksum))
	}
	for failures := 0; ; failures++ {
		c, err := s.acquire()
		if err != nil {
			s.index.unreserve(m.ID)
			return nil, err
		}
		fc, err := c.dataCipher()
		c.mu.Lock()
		off, bad := c.nextBlock, c.broken || c.removed
		c.mu.Unlock()
		if err == nil && !bad {
			return &BlockWriter{s: s, c: c, fc: fc, meta: m, bpc: bytesPerChecksum, off: off,
				openEnded: o.OpenEnded, replace: o.Replace, crcs: crcs}, nil
		}
		s.release(c)
		if err != nil {
			s.failDir(c.dir, err)
		}
		if failures >= len(s.dirs) {
			s.index.unreserve(m.ID)
			if err == nil {
				err = errs.New(errs.Unavailable, op, "", "no writable container")
			}
			return nil, err
		}
	}
}

// Write appends data: WriteAt(Written(), data, crcs).
func (w *BlockWriter) Write(data []byte, crcs []uint32) error {
	const op = "lbm.BlockWriter.Write"
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(op); err != nil {
		return err
	}
	return w.writeLocked(op, w.written, data, crcs)
}

// WriteAt writes data at block offset off, with crcs holding one CRC32C
// (Castagnoli) per chunk of bytesPerChecksum. data must be whole chunks
// except its last, which may be short only where the block ends (a
// declared-length writer) or, for an open-ended writer, at the end of any
// call (an hflush of a partial chunk). off must be Written(), or, when the
// block so far ends with a short chunk, that chunk's start
// (Written()/bpc*bpc): data then rewrites the short chunk, and its first
// Written()-off bytes must be the bytes stored (checked against the short
// chunk's stored CRC: a mismatch, or fewer bytes than stored, is
// errs.Invalid "rewrite of a partial chunk with different bytes"). The same
// bytes at the same offset encrypt to the same ciphertext, so no CTR
// keystream position ever encrypts two plaintexts. After a Truncate, bytes
// written again over the truncated range must also be the bytes written
// there before (errs.Invalid otherwise), for the same reason.
//
// Every chunk is verified before anything is written: a mismatch is
// errs.Corrupt naming the block and the chunk's offset, and nothing of
// that call is written. Another offset, data past the declared (maximum)
// length, a misplaced short chunk, or a crcs count that does not match:
// errs.Invalid. The bytes are encrypted (AES-CTR at their absolute file
// offset) when the store encrypts, and written into the container's data
// file at once: the block is never buffered whole. An I/O error fails the
// writer (only Abort remains) and marks the data dir failed.
func (w *BlockWriter) WriteAt(off int64, data []byte, crcs []uint32) error {
	const op = "lbm.BlockWriter.Write"
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(op); err != nil {
		return err
	}
	return w.writeLocked(op, off, data, crcs)
}

func (w *BlockWriter) writeLocked(op string, off int64, data []byte, crcs []uint32) error {
	n, bpc := int64(len(data)), w.bpc
	whole := w.written / int64(bpc) * int64(bpc) // start of the short chunk, if any
	switch {
	case off == w.written && (w.written == whole || n == 0):
	case off == whole:
	default:
		if off == w.written {
			return errs.Newf(errs.Invalid, op, "", "block %d: a short chunk at offset %d that does not end the block: rewrite it from its start",
				w.meta.ID, whole)
		}
		return errs.Newf(errs.Invalid, op, "", "block %d: write at offset %d: want %d (or %d, the short chunk's start)",
			w.meta.ID, off, w.written, whole)
	}
	if n > w.meta.Length-off {
		what := "declared length"
		if w.openEnded {
			what = "maximum length"
		}
		return errs.Newf(errs.Invalid, op, "", "block %d: %d bytes at offset %d pass the %s %d",
			w.meta.ID, n, off, what, w.meta.Length)
	}
	if n%int64(bpc) != 0 && !w.openEnded && off+n != w.meta.Length {
		return errs.Newf(errs.Invalid, op, "", "block %d: a short chunk at offset %d that does not end the block",
			w.meta.ID, off+n/int64(bpc)*int64(bpc))
	}
	if want := (len(data) + bpc - 1) / bpc; len(crcs) != want {
		return errs.Newf(errs.Invalid, op, "", "block %d: %d chunk CRCs for %d chunks", w.meta.ID, len(crcs), want)
	}
	for i := range crcs {
		chunk := data[i*bpc : min((i+1)*bpc, len(data))]
		if crc32c(chunk) != crcs[i] {
			return errs.Newf(errs.Corrupt, op, "", "block %d: chunk at offset %d: checksum mismatch",
				w.meta.ID, off+int64(i*bpc))
		}
	}
	// The bytes of the short chunk already stored are rewritten: they must
	// be the same (same plaintext, same offset, same ciphertext).
	prefix := w.written - off
	if prefix > 0 && (n < prefix || crc32c(data[:prefix]) != w.crcs[len(w.crcs)-1]) {
		return errs.Newf(errs.Invalid, op, "", "block %d: rewrite of a partial chunk with different bytes at offset %d (%d bytes stored, %d given)",
			w.meta.ID, off, prefix, n)
	}
	if w.stale != nil && off < w.staleLen {
		if err := w.checkStaleLocked(op, off, data, crcs); err != nil {
			return err
		}
	}
	if n == 0 {
		return nil
	}
	if fresh := data[prefix:]; len(fresh) > 0 {
		at := w.off + off + prefix
		w.touched = max(w.touched, off+n)
		if w.fc == nil {
			if _, err := w.c.data.WriteAt(fresh, at); err != nil {
				return w.failLocked(errs.Wrap(errs.IO, op, w.c.dataPath, err))
			}
		} else {
			// Encrypt through a bounded scratch buffer, whatever the call's size.
			for p := 0; p < len(fresh); p += maxWriteScratch {
				piece := fresh[p:min(p+maxWriteScratch, len(fresh))]
				w.scratch = slices.Grow(w.scratch[:0], len(piece))[:len(piece)]
				w.fc.xorAt(w.scratch, piece, at+int64(p))
				if _, err := w.c.data.WriteAt(w.scratch, at+int64(p)); err != nil {
					return w.failLocked(errs.Wrap(errs.IO, op, w.c.dataPath, err))
				}
			}
		}
		w.s.metrics.bytesWritten.Add(float64(len(fresh)))
	}
	// off is chunk-aligned: the whole chunks so far end there.
	full := n / int64(bpc) * int64(bpc)
	w.wholeCRC = crc32.Update(w.wholeCRC, castagnoli, data[:full])
	w.crcs = append(w.crcs[:off/int64(bpc)], crcs...)
	w.written = off + n
	if w.stale != nil && w.written >= w.staleLen {
		w.stale, w.staleLen = nil, 0
	}
	return nil
}

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

// preadLocked reads and decrypts block bytes [at, at+len(b)) written by
// this writer.
func (w *BlockWriter) preadLocked(op string, b []byte, at int64) error {
	if len(b) == 0 {
		return nil
	}
	fileAt := w.off + at
	k, err := w.c.data.ReadAt(b, fileAt)
	w.s.countRead(k)
	if k < len(b) {
		if err == nil || errors.Is(err, io.EOF) {
			return errs.Newf(errs.Corrupt, op, w.c.dataPath, "block %d: data file too short at offset %d", w.meta.ID, fileAt)
		}
		return errs.Wrap(errs.IO, op, w.c.dataPath, err)
	}
	if w.fc != nil {
		w.fc.xorAt(b, b, fileAt)
	}
	return nil
}

// Meta returns the block's id, inode and generation stamp as it will be
// committed, with Length = Written().
func (w *BlockWriter) Meta() BlockMeta {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.meta
	m.Length, m.CRC = w.written, 0
	return m
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

// ReadChunks reads, decrypts and verifies the chunks of the bytes written
// so far that [off, off+n) touches (n == 0: to Written()), as
// Store.ReadChunks does for a committed block; the last chunk may be the
// short one. It serves hflushed bytes while the block is being written,
// concurrently with WriteAt (the writer's lock is not held across the
// read). A range past Written(): errs.Invalid. A writer committed, aborted
// or failed: errs.Precondition (read a committed block from the Store).
func (w *BlockWriter) ReadChunks(off, n int64, buf []byte) (ChunkRange, error) {
	const op = "lbm.BlockWriter.ReadChunks"
	for attempt := 0; ; attempt++ {
		w.mu.Lock()
		if err := w.usable(op); err != nil {
			w.mu.Unlock()
			return ChunkRange{}, err
		}
		written, bpc, n := w.written, int64(w.bpc), n
		if n == 0 && off >= 0 && off <= written {
			n = written - off
		}
		if off < 0 || n < 0 || off > written || n > written-off {
			w.mu.Unlock()
			return ChunkRange{}, errs.Newf(errs.Invalid, op, "", "range [%d,+%d) outside block %d's %d bytes written",
				off, n, w.meta.ID, written)
		}
		first, last := off/bpc, (off+n+bpc-1)/bpc
		if n == 0 {
			last = first
		}
		lo, hi := first*bpc, min(last*bpc, written)
		crcs := slices.Clone(w.crcs[first:last])
		truncs, boff := w.truncs, w.off
		w.mu.Unlock()

		cr := ChunkRange{Offset: lo, BytesPerChecksum: int(bpc)}
		if hi == lo {
			cr.Data = buf[:0]
			return cr, nil
		}
		if int64(cap(buf)) < hi-lo {
			buf = make([]byte, hi-lo)
		}
		data := buf[:hi-lo]
		at := boff + lo
		k, err := w.c.data.ReadAt(data, at)
		w.s.countRead(k)
		if k < len(data) {
			if err == nil || errors.Is(err, io.EOF) {
				err = errs.Newf(errs.Corrupt, op, w.c.dataPath, "block %d: data file too short at offset %d", w.meta.ID, at)
			} else {
				err = errs.Wrap(errs.IO, op, w.c.dataPath, err)
			}
		} else if w.fc != nil {
			w.fc.xorAt(data, data, at)
		}
		bad := int64(-1)
		if err == nil {
			for i := range crcs {
				if crc32c(data[int64(i)*bpc:min(int64(i+1)*bpc, hi-lo)]) != crcs[i] {
					bad = int64(i)
					break
				}
			}
		}
		if err == nil && bad < 0 {
			cr.Data, cr.CRCs = data, crcs
			return cr, nil
		}
		// The writer may have been aborted (punched) or truncated meanwhile.
		w.mu.Lock()
		uerr, moved := w.usable(op), w.truncs != truncs
		w.mu.Unlock()
		switch {
		case uerr != nil:
			return ChunkRange{}, uerr
		case moved && attempt < 3:
			continue
		case err != nil:
			return ChunkRange{}, err
		}
		w.s.metrics.corruptReads.Inc()
		return ChunkRange{}, errs.Newf(errs.Corrupt, op, w.c.dataPath,
			"block %d (being written): chunk at block offset %d (data file offset %d): checksum mismatch",
			w.meta.ID, lo+bad*bpc, at+bad*bpc)
	}
}

// Written returns the number of bytes written so far.
func (w *BlockWriter) Written() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.written
}

// Sync makes the bytes written so far durable (fdatasync of the data
// file) without committing them: the block stays invisible. For an
// open-ended writer it then appends and fsyncs an RBW record naming
// those bytes (skipped when the last one names the same length and
// generation stamp), so that after a crash or a restart they are a
// waiting replica (Store.Waiting) until recovered or dropped; a
// declared-length writer's bytes are absent after a crash.
func (w *BlockWriter) Sync() error {
	const op = "lbm.BlockWriter.Sync"
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(op); err != nil {
		return err
	}
	if err := datasync(w.c.data); err != nil {
		return w.failLocked(errs.Wrap(errs.IO, op, w.c.dataPath, err))
	}
	if w.openEnded {
		return w.syncRecordLocked(op)
	}
	return nil
}

// Commit requires Written() == the declared length for a declared-length
// writer (else errs.Precondition, and the writer stays open); an
// open-ended writer commits the Written() bytes. It writes the chunk CRC
// table right after the block's bytes, makes the data durable
// (fdatasync), appends the CREATE2 record and fsyncs the metadata, then
// makes the block visible and releases the container. BlockInfo.CRC is the
// CRC32C of all the block's bytes, computed from the stream, so it equals
// what a writer computing crc32c over the bytes gets. On an I/O error the
// write is aborted and the data dir marked failed; as with PutBatch,
// whether the block exists after a restart is then undetermined (if it
// does, it is intact).
//
// With CreateOptions.Replace, the index switches to the new version at
// once; the old version's space is then released: in the same container
// it is just hole-punched (replay lets the later CREATE2 with the higher
// generation stamp replace it); in another container a DELETE record is
// appended and fsynced there first (after the new CREATE2 is durable), so
// a crash in between leaves both versions live and Open keeps the higher
// generation stamp. A failure to release the old version is logged, not
// returned: the new version is committed.
func (w *BlockWriter) Commit(ctx context.Context) (BlockInfo, error) {
	const op = "lbm.BlockWriter.Commit"
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(op); err != nil {
		return BlockInfo{}, err
	}
	if !w.openEnded && w.written != w.meta.Length {
		return BlockInfo{}, errs.Newf(errs.Precondition, op, "", "block %d: %d of %d declared bytes written",
			w.meta.ID, w.written, w.meta.Length)
	}
	if err := ctx.Err(); err != nil {
		return BlockInfo{}, errs.Wrap(errs.Canceled, op, "", err)
	}
	c := w.c
	if w.fc != nil && w.stale != nil && len(w.crcs) > 0 {
		// The table would overwrite truncated bytes: other plaintext at
		// the same keystream positions. Move the block instead.
		if err := w.relocateLocked(op); err != nil {
			return BlockInfo{}, err
		}
	}
	table := make([]byte, len(w.crcs)*chunkCRCLen)
	putCRCs(table, w.crcs)
	at := w.off + w.written
	if w.fc != nil {
		w.fc.xorAt(table, table, at)
	}
	w.touched = max(w.touched, w.written+int64(len(table)))
	if len(table) > 0 {
		if _, err := c.data.WriteAt(table, at); err != nil {
			return BlockInfo{}, w.failLocked(errs.Wrap(errs.IO, op, c.dataPath, err))
		}
	}
	if err := datasync(c.data); err != nil {
		return BlockInfo{}, w.failLocked(errs.Wrap(errs.IO, op, c.dataPath, err))
	}
	rec := w.recordLocked()
	buf := appendCreate(make([]byte, 0, frameLen(create2BodyLen)), &rec)
	e := rec.entry(c)
	c.mu.Lock()
	err := error(errs.New(errs.IO, op, c.metaPath, "container is read-only after an earlier failure"))
	if !c.broken && !c.removed {
		err = c.appendMetaLocked(buf)
	}
	if err != nil {
		c.mu.Unlock()
		// The record may have reached the disk: keep the bytes it names.
		w.keep = true
		return BlockInfo{}, w.failLocked(err)
	}
	// Bytes a Truncate cut may lie past the block's extent: they keep
	// their range (no keystream position encrypts two plaintexts) and are
	// punched.
	span := max(e.extent(), alignUp(w.touched))
	c.nextBlock = max(c.nextBlock, w.off+span)
	c.created++
	old, replaced := c.addLocked(w.meta.ID, e)
	c.mu.Unlock()
	w.state = writerCommitted
	w.s.release(c)
	w.scratch, w.stale = nil, nil
	if ext := e.extent(); span > ext {
		if err := c.data.PunchHole(w.off+ext, span-ext); err != nil {
			w.s.log.Debug("lbm: punch hole past a truncated block", "file", c.dataPath, "err", err)
		}
	}
	if replaced {
		w.s.retire(w.meta.ID, old, c)
	}
	w.s.supersedeWaiting(w.meta.ID, w.meta.GenStamp)
	return e.info(w.meta.ID), nil
}

// relocateLocked copies the block's Written() bytes (read back, verified,
// re-encrypted) to fresh space past everything the writer touched, then
// punches the old range. Commit needs it after a Truncate in an encrypted
// store: the chunk CRC table goes right after the block's last byte, where
// bytes cut by the Truncate were written, and writing other plaintext at
// those keystream positions would reuse the keystream. O(Written()); only
// recovery (Truncate, then Commit short of the cut bytes) takes this path.
func (w *BlockWriter) relocateLocked(op string) error {
	oldOff, span := w.off, alignUp(max(w.touched, w.staleLen))
	newOff := oldOff + span
	// If the copy fails, release punches (and skips) both ranges.
	w.touched = span + w.written
	bpc := int64(w.bpc)
	buf := make([]byte, min(w.written, maxWriteScratch))
	for p := int64(0); p < w.written; {
		b := buf[:min(int64(len(buf)), w.written-p)]
		if err := w.preadLocked(op, b, p); err != nil {
			if errs.Is(err, errs.IO) {
				return w.failLocked(err)
			}
			w.releaseLocked()
			return err
		}
		for q := int64(0); q < int64(len(b)); q += bpc {
			if crc32c(b[q:min(q+bpc, int64(len(b)))]) != w.crcs[(p+q)/bpc] {
				w.releaseLocked()
				return errs.Newf(errs.Corrupt, op, w.c.dataPath, "block %d: chunk at offset %d: checksum mismatch on read-back",
					w.meta.ID, p+q)
			}
		}
		w.fc.xorAt(b, b, newOff+p)
		if _, err := w.c.data.WriteAt(b, newOff+p); err != nil {
			return w.failLocked(errs.Wrap(errs.IO, op, w.c.dataPath, err))
		}
		p += int64(len(b))
	}
	w.off, w.touched = newOff, w.written
	w.stale, w.staleLen = nil, 0
	w.truncs++
	c := w.c
	c.mu.Lock()
	c.nextBlock = max(c.nextBlock, oldOff+span)
	c.mu.Unlock()
	if err := c.data.PunchHole(oldOff, span); err != nil {
		w.s.log.Debug("lbm: punch hole after relocation", "file", c.dataPath, "err", err)
	}
	return nil
}

// Abort drops an uncommitted write: nothing becomes visible, the space
// written so far is released (hole punched), and the id is free again. A
// writer that synced appends an RBW-drop record first, so no waiting
// replica comes back after a restart.
// The range is not reused (a CTR keystream position encrypts one
// plaintext only). It is a no-op after Commit or a previous Abort.
func (w *BlockWriter) Abort() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state != writerOpen {
		return
	}
	w.releaseLocked()
}

func (w *BlockWriter) usable(op string) error {
	if w.s.closed.Load() && w.state == writerOpen {
		w.releaseLocked()
		return errs.New(errs.Unavailable, op, "", "store is closed")
	}
	switch w.state {
	case writerCommitted:
		return errs.Newf(errs.Precondition, op, "", "block %d: writer already committed", w.meta.ID)
	case writerDone:
		return errs.Newf(errs.Precondition, op, "", "block %d: writer aborted or failed", w.meta.ID)
	}
	return nil
}

// failLocked handles an I/O error: the container takes no more writes,
// its dir is marked failed, and the write is released as by Abort.
func (w *BlockWriter) failLocked(err error) error {
	w.c.markBroken()
	w.s.failDir(w.c.dir, err)
	w.releaseLocked()
	return err
}

func (w *BlockWriter) releaseLocked() {
	w.state = writerDone
	if w.rbwSynced && !w.keep {
		w.dropRecordLocked() // before the bytes it names are punched
	}
	if n := alignUp(max(w.touched, w.written+int64(len(w.crcs))*chunkCRCLen)); n > 0 {
		c := w.c
		c.mu.Lock()
		c.nextBlock = max(c.nextBlock, w.off+n)
		c.mu.Unlock()
		if !w.keep {
			if err := c.data.PunchHole(w.off, n); err != nil {
				w.s.log.Debug("lbm: punch hole after abort", "file", c.dataPath, "err", err)
			}
		}
	}
	w.s.index.unreserve(w.meta.ID)
	w.s.release(w.c)
	w.scratch, w.crcs = nil, nil
}

// datasync is fdatasync where the file offers it, else Sync.
func datasync(f File) error {
	if d, ok := f.(interface{ Datasync() error }); ok {
		return d.Datasync()
	}
	return f.Sync()
}

// Datasync flushes the file's data and the metadata needed to read it
// (fdatasync).
func (f osFile) Datasync() error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}

// recordLocked returns the record of the bytes written so far: their CRC
// from one Combine (the whole chunks' running CRC, then the short chunk),
// stamped now.
func (w *BlockWriter) recordLocked() createRec {
	crc := w.wholeCRC
	if short := w.written % int64(w.bpc); short != 0 {
		crc = crcmath.Combine(crc, w.crcs[len(w.crcs)-1], uint64(short))
	}
	return createRec{ID: w.meta.ID, Inode: w.meta.Inode, GenStamp: w.meta.GenStamp, Offset: w.off,
		Length: w.written, CRC: crc, TimestampUS: time.Now().UnixMicro(), BPC: uint32(w.bpc)}
}
