package lbm

import (
	"context"
	"time"

	"golang.org/x/sys/unix"

	"github.com/blockfs/blockfs/errs"
	crcmath "github.com/blockfs/blockfs/internal/base/crc32c"
)

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
	if w.buffered {
		if err := w.spillLocked(op); err != nil {
			return err
		}
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
	if w.buffered {
		return w.commitGroupLocked()
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
			return BlockInfo{}, w.failDataLocked(errs.Wrap(errs.IO, op, c.dataPath, err))
		}
	}
	if err := datasync(c.data); err != nil {
		return BlockInfo{}, w.failDataLocked(errs.Wrap(errs.IO, op, c.dataPath, err))
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
	w.s.wrote(c.dir)
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

// failDataLocked is failLocked for a failed write or sync of the data file
// (no metadata names the bytes yet): on ENOSPC the container stays usable,
// past everything this writer touched (releaseLocked), and the dir is
// only full.
func (w *BlockWriter) failDataLocked(err error) error {
	if !outOfSpace(err) {
		return w.failLocked(err)
	}
	w.s.failDir(w.c.dir, err)
	w.releaseLocked()
	return err
}

// commitGroupLocked commits a buffered writer's block with the group of
// small blocks committing now (group.go). On an error the write is
// released; as for Commit, whether the block exists after a restart is
// then undetermined.
func (w *BlockWriter) commitGroupLocked() (BlockInfo, error) {
	m := w.meta
	m.Length = w.written
	it := &blockItem{meta: m, data: w.buf, crcs: w.crcs, bpc: w.bpc, crc: w.crcLocked()}
	w.s.group.commit(it)
	if it.err != nil {
		w.releaseLocked()
		return BlockInfo{}, it.err
	}
	w.state = writerCommitted
	w.buf, w.crcs = nil, nil
	return it.entry.info(m.ID), nil
}

func (w *BlockWriter) releaseLocked() {
	if w.buffered {
		w.state = writerDone
		w.s.index.unreserve(w.meta.ID)
		w.buf, w.crcs = nil, nil
		return
	}
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

// recordLocked returns the record of the bytes written so far, stamped
// now.
func (w *BlockWriter) recordLocked() createRec {
	return createRec{ID: w.meta.ID, Inode: w.meta.Inode, GenStamp: w.meta.GenStamp, Offset: w.off,
		Length: w.written, CRC: w.crcLocked(), TimestampUS: time.Now().UnixMicro(), BPC: uint32(w.bpc)}
}

// crcLocked is the CRC32C of the bytes written so far: the whole chunks'
// running CRC, then the short chunk, in one Combine.
func (w *BlockWriter) crcLocked() uint32 {
	crc := w.wholeCRC
	if short := w.written % int64(w.bpc); short != 0 {
		crc = crcmath.Combine(crc, w.crcs[len(w.crcs)-1], uint64(short))
	}
	return crc
}
