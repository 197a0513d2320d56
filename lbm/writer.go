package lbm

import (
	"context"
	"errors"
	"hash/crc32"
	"io"
	"slices"
	"sync"

	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/base/chunks"
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
	// buffered: the block's bytes so far are buf, not in a container (c
	// and fc nil) until Commit stores it with a group, or Sync spills it
	// (Config.GroupCommitMax).
	buffered bool
	buf      []byte

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
	w := &BlockWriter{s: s, meta: m, bpc: bytesPerChecksum, openEnded: o.OpenEnded, replace: o.Replace, crcs: crcs}
	if g := s.cfg.GroupCommitMax; g > 0 && !o.Replace && (o.OpenEnded || m.Length <= g) {
		w.buffered = true
		if !o.OpenEnded {
			w.buf = make([]byte, 0, m.Length)
		}
		return w, nil
	}
	if err := w.placeLocked(op); err != nil {
		s.index.unreserve(m.ID)
		return nil, err
	}
	return w, nil
}

// placeLocked gives w a container to write into (w.mu held or w not yet
// shared): its data cipher and the block's offset there.
func (w *BlockWriter) placeLocked(op string) error {
	s := w.s
	for failures := 0; ; failures++ {
		c, err := s.acquire()
		if err != nil {
			return err
		}
		fc, err := c.dataCipher()
		c.mu.Lock()
		off, bad := c.nextBlock, c.broken || c.removed
		c.mu.Unlock()
		if err == nil && !bad {
			w.c, w.fc, w.off = c, fc, off
			return nil
		}
		s.release(c)
		if err != nil {
			s.failDir(c.dir, err)
		}
		if failures >= len(s.dirs) {
			if err == nil {
				err = errs.New(errs.Unavailable, op, "", "no writable container")
			}
			return err
		}
	}
}

// spillLocked moves a buffered writer's bytes into a container, where it
// goes on as an unbuffered writer (Sync needs the bytes on disk).
func (w *BlockWriter) spillLocked(op string) error {
	if err := w.placeLocked(op); err != nil {
		w.releaseLocked()
		return err
	}
	buf := w.buf
	w.buffered, w.buf = false, nil
	if err := w.writeDataLocked(op, 0, buf); err != nil {
		return err
	}
	w.touched = max(w.touched, int64(len(buf)))
	return nil
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
	if w.buffered && off+n > w.s.cfg.GroupCommitMax { // an open-ended block grown past it
		if err := w.spillLocked(op); err != nil {
			return err
		}
	}
	if fresh := data[prefix:]; len(fresh) > 0 {
		if w.buffered {
			w.buf = append(w.buf[:off+prefix], fresh...)
		} else {
			w.touched = max(w.touched, off+n)
			if err := w.writeDataLocked(op, off+prefix, fresh); err != nil {
				return err
			}
		}
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

// writeDataLocked writes (encrypting where the store does) fresh at block
// offset off into the writer's container.
func (w *BlockWriter) writeDataLocked(op string, off int64, fresh []byte) error {
	at := w.off + off
	if w.fc == nil {
		if _, err := w.c.data.WriteAt(fresh, at); err != nil {
			return w.failDataLocked(errs.Wrap(errs.IO, op, w.c.dataPath, err))
		}
	} else {
		// Encrypt through a bounded scratch buffer, whatever the call's size.
		for p := 0; p < len(fresh); p += maxWriteScratch {
			piece := fresh[p:min(p+maxWriteScratch, len(fresh))]
			w.scratch = slices.Grow(w.scratch[:0], len(piece))[:len(piece)]
			w.fc.xorAt(w.scratch, piece, at+int64(p))
			if _, err := w.c.data.WriteAt(w.scratch, at+int64(p)); err != nil {
				return w.failDataLocked(errs.Wrap(errs.IO, op, w.c.dataPath, err))
			}
		}
	}
	w.s.metrics.bytesWritten.Add(float64(len(fresh)))
	return nil
}

// preadLocked reads and decrypts block bytes [at, at+len(b)) written by
// this writer.
func (w *BlockWriter) preadLocked(op string, b []byte, at int64) error {
	if len(b) == 0 {
		return nil
	}
	if w.buffered {
		copy(b, w.buf[at:])
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
		cr := ChunkRange{Offset: lo, BytesPerChecksum: int(bpc)}
		if int64(cap(buf)) < hi-lo {
			buf = make([]byte, hi-lo)
		}
		data := buf[:hi-lo]
		if w.buffered || hi == lo { // checked as they were written
			copy(data, w.buf[min(lo, int64(len(w.buf))):])
			w.mu.Unlock()
			cr.Data, cr.CRCs = data, crcs
			if hi == lo {
				cr.CRCs = nil
			}
			return cr, nil
		}
		w.mu.Unlock()

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
