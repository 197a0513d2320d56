package lbm

import (
	"context"
	"hash/crc32"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/blockfs/blockfs/errs"
)

// BlockWriter is a streamed write of one block into one container, which
// it holds as that container's only writer until Commit or Abort. Its
// methods may be called from several goroutines (they serialise).
type BlockWriter struct {
	s    *Store
	c    *container
	fc   *fileCipher
	meta BlockMeta
	bpc  int
	off  int64 // data file offset of the block's first byte

	mu      sync.Mutex
	state   writerState
	written int64
	crc     uint32   // running CRC32C of the bytes written
	crcs    []uint32 // chunk CRC table so far (4 bytes per chunk of data: 1/128 of it at 512)
	scratch []byte   // ciphertext, at most maxWriteScratch bytes
	touched int64    // bytes past off that any write reached (punched on release)
	keep    bool     // on release, leave the bytes (the CREATE2 may be durable)
}

type writerState uint8

// maxWriteScratch bounds the ciphertext buffer of an encrypting writer.
const maxWriteScratch = 1 << 20

const (
	writerOpen writerState = iota
	writerCommitted
	writerDone // aborted, or failed and released
)

// Create starts a streamed write of block m.ID with m.Length bytes declared
// (m.CRC is ignored: the store computes it). bytesPerChecksum must be a
// power of two in [64, 1<<20]. The block is invisible (Stat, Read and
// Blocks don't see it; a second Create or Put of the id is errs.Exist)
// until Commit. The writer holds one container until Commit or Abort; a
// declared length above Config.MaxContainerSize is errs.Invalid.
func (s *Store) Create(ctx context.Context, m BlockMeta, bytesPerChecksum int) (*BlockWriter, error) {
	const op = "lbm.create"
	if err := s.checkOpen(ctx, op); err != nil {
		return nil, err
	}
	if !validBytesPerChecksum(bytesPerChecksum) {
		return nil, errs.Newf(errs.Invalid, op, "", "bytes per checksum %d: want a power of two in [%d, %d]",
			bytesPerChecksum, minBytesPerChecksum, maxBytesPerChecksum)
	}
	if m.Length < 0 || m.Length > s.cfg.MaxContainerSize {
		return nil, errs.Newf(errs.Invalid, op, "", "block %d: declared length %d outside [0, %d]", m.ID, m.Length, s.cfg.MaxContainerSize)
	}
	if !s.index.reserve(m.ID) {
		return nil, errs.Newf(errs.Exist, op, "", "block %d already exists", m.ID)
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
				crcs: make([]uint32, 0, (m.Length+int64(bytesPerChecksum)-1)/int64(bytesPerChecksum))}, nil
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

// Write appends data, which must be whole chunks of bytesPerChecksum
// except the block's final chunk, with crcs holding one CRC32C
// (Castagnoli) per chunk. Every chunk is verified before anything is
// written: a mismatch is errs.Corrupt naming the block and the chunk's
// offset, and nothing of that call is written. Data past the declared
// length, a short chunk that does not end the block, or a crcs count that
// does not match: errs.Invalid. The bytes are encrypted (AES-CTR at their
// absolute file offset) when the store encrypts, and written into the
// container's data file at once: the block is never buffered whole. An
// I/O error fails the writer (only Abort remains) and marks the data dir
// failed.
func (w *BlockWriter) Write(data []byte, crcs []uint32) error {
	const op = "lbm.write"
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(op); err != nil {
		return err
	}
	n, bpc := int64(len(data)), w.bpc
	if n > w.meta.Length-w.written {
		return errs.Newf(errs.Invalid, op, "", "block %d: %d bytes at offset %d pass the declared length %d",
			w.meta.ID, n, w.written, w.meta.Length)
	}
	if n%int64(bpc) != 0 && w.written+n != w.meta.Length {
		return errs.Newf(errs.Invalid, op, "", "block %d: a short chunk at offset %d that does not end the block",
			w.meta.ID, w.written+n/int64(bpc)*int64(bpc))
	}
	if want := (len(data) + bpc - 1) / bpc; len(crcs) != want {
		return errs.Newf(errs.Invalid, op, "", "block %d: %d chunk CRCs for %d chunks", w.meta.ID, len(crcs), want)
	}
	for i := range crcs {
		chunk := data[i*bpc : min((i+1)*bpc, len(data))]
		if crc32c(chunk) != crcs[i] {
			return errs.Newf(errs.Corrupt, op, "", "block %d: chunk at offset %d: checksum mismatch",
				w.meta.ID, w.written+int64(i*bpc))
		}
	}
	if n == 0 {
		return nil
	}
	at := w.off + w.written
	w.touched = max(w.touched, w.written+n)
	if w.fc == nil {
		if _, err := w.c.data.WriteAt(data, at); err != nil {
			return w.failLocked(errs.Wrap(errs.IO, op, w.c.dataPath, err))
		}
	} else {
		// Encrypt through a bounded scratch buffer, whatever the call's size.
		for p := 0; p < len(data); p += maxWriteScratch {
			piece := data[p:min(p+maxWriteScratch, len(data))]
			w.scratch = slices.Grow(w.scratch[:0], len(piece))[:len(piece)]
			w.fc.xorAt(w.scratch, piece, at+int64(p))
			if _, err := w.c.data.WriteAt(w.scratch, at+int64(p)); err != nil {
				return w.failLocked(errs.Wrap(errs.IO, op, w.c.dataPath, err))
			}
		}
	}
	w.written += n
	w.crc = crc32.Update(w.crc, castagnoli, data)
	w.crcs = append(w.crcs, crcs...)
	w.s.metrics.bytesWritten.Add(float64(n))
	return nil
}

// Written returns the number of bytes written so far.
func (w *BlockWriter) Written() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.written
}

// Sync makes the bytes written so far durable (fdatasync of the data
// file) without committing them: the block stays invisible, and after a
// crash it is absent (hsync's durability; recovery is the caller's).
func (w *BlockWriter) Sync() error {
	const op = "lbm.sync"
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(op); err != nil {
		return err
	}
	if err := datasync(w.c.data); err != nil {
		return w.failLocked(errs.Wrap(errs.IO, op, w.c.dataPath, err))
	}
	return nil
}

// Commit requires Written() == the declared length (else errs.Precondition,
// and the writer stays open). It writes the chunk CRC table right after
// the block's bytes, makes the data durable (fdatasync), appends the
// CREATE2 record and fsyncs the metadata, then makes the block visible
// and releases the container. BlockInfo.CRC is the CRC32C of all the
// block's bytes, computed from the stream, so it equals what a writer
// computing crc32c over the bytes gets. On an I/O error the write is
// aborted and the data dir marked failed; as with PutBatch, whether the
// block exists after a restart is then undetermined (if it does, it is
// intact).
func (w *BlockWriter) Commit(ctx context.Context) (BlockInfo, error) {
	const op = "lbm.commit"
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(op); err != nil {
		return BlockInfo{}, err
	}
	if w.written != w.meta.Length {
		return BlockInfo{}, errs.Newf(errs.Precondition, op, "", "block %d: %d of %d declared bytes written",
			w.meta.ID, w.written, w.meta.Length)
	}
	if err := ctx.Err(); err != nil {
		return BlockInfo{}, errs.Wrap(errs.Canceled, op, "", err)
	}
	c := w.c
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
	rec := createRec{ID: w.meta.ID, Inode: w.meta.Inode, GenStamp: w.meta.GenStamp, Offset: w.off,
		Length: w.written, CRC: w.crc, TimestampUS: time.Now().UnixMicro(), BPC: uint32(w.bpc)}
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
	c.nextBlock = max(c.nextBlock, w.off+e.extent())
	c.created++
	c.addLocked(w.meta.ID, e)
	c.mu.Unlock()
	w.state = writerCommitted
	w.s.release(c)
	return e.info(w.meta.ID), nil
}

// Abort drops an uncommitted write: nothing becomes visible, the space
// written so far is released (hole punched), and the id is free again.
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
