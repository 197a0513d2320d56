package lbm

import (
	"context"
	"errors"
	"hash/crc32"
	"io"
	"sort"
	"time"

	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/base/chunks"
)

// Replicas waiting to be recovered (HDFS's RWR). Sync of an open-ended
// writer appends an RBW record after the fdatasync of its bytes: {id,
// inode, generation stamp, offset, length so far, bytes per checksum,
// crc32c of those bytes, timestamp}. Per container the last RBW record of
// an id stands until a later CREATE/CREATE2 of the id (the writer
// committed) or RBW-drop record. After Open, a standing RBW whose id is
// not live with a generation stamp at least its own is a waiting replica:
// invisible to Stat, Blocks and reads, until RecoverWaiting commits its
// bytes as a normal block or DropWaiting forgets it. A container holding
// a waiting replica is neither compacted nor removed.

// WaitingReplica is a replica that was being written (and synced) when
// the store was last closed or crashed.
type WaitingReplica struct {
	ID, Inode, GenStamp uint64
	Length              int64 // bytes synced
	BytesPerChecksum    int
	Synced              time.Time // when its RBW record was written
}

type waitingRep struct {
	c    *container
	rec  createRec
	busy bool // RecoverWaiting runs
}

func (w *waitingRep) info() WaitingReplica {
	return WaitingReplica{ID: w.rec.ID, Inode: w.rec.Inode, GenStamp: w.rec.GenStamp, Length: w.rec.Length,
		BytesPerChecksum: int(w.rec.BPC), Synced: time.UnixMicro(w.rec.TimestampUS)}
}

// settleWaiting (Open, once every container is merged and duplicates are
// resolved) keeps, per id, the standing RBW with the highest generation
// stamp whose id is not live with a generation stamp at least its own.
func (s *Store) settleWaiting() {
	s.waiting = map[uint64]*waitingRep{}
	for _, d := range s.dirs {
		cs := d.containers()
		for _, c := range cs {
			if d.failed.Load() {
				c.rbws = nil
				continue
			}
			for id, r := range c.rbws {
				if e, ok := s.index.get(id); ok && e.gen >= r.GenStamp {
					delete(c.rbws, id)
					continue
				}
				if cur, ok := s.waiting[id]; ok {
					if cur.rec.GenStamp > r.GenStamp || (cur.rec.GenStamp == r.GenStamp && cur.rec.Length >= r.Length) {
						delete(c.rbws, id)
						continue
					}
					delete(cur.c.rbws, id)
				}
				s.waiting[id] = &waitingRep{c: c, rec: r}
			}
		}
	}
	s.waitingN.Store(int64(len(s.waiting)))
	s.stats.WaitingReplicas = len(s.waiting)
}

// Waiting returns the waiting replica of id, if any.
func (s *Store) Waiting(id uint64) (WaitingReplica, bool) {
	if s.waitingN.Load() == 0 {
		return WaitingReplica{}, false
	}
	s.waitMu.Lock()
	w, ok := s.waiting[id]
	s.waitMu.Unlock()
	if !ok {
		return WaitingReplica{}, false
	}
	if e, live := s.index.get(id); live && e.gen >= w.rec.GenStamp {
		return WaitingReplica{}, false
	}
	return w.info(), true
}

// WaitingReplicas lists the waiting replicas, sorted by id.
func (s *Store) WaitingReplicas() []WaitingReplica {
	s.waitMu.Lock()
	out := make([]WaitingReplica, 0, len(s.waiting))
	for id, w := range s.waiting {
		if e, live := s.index.get(id); live && e.gen >= w.rec.GenStamp {
			continue
		}
		out = append(out, w.info())
	}
	s.waitMu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// RecoverWaiting finalizes the waiting replica of id: its bytes are read
// back and checked against the RBW record's CRC (a mismatch is
// errs.Corrupt, and the waiting replica is dropped), then its first n
// bytes (0 <= n <= its Length, else errs.Invalid) are committed as a new
// block with generation stamp genStamp (above the waiting replica's, else
// errs.Invalid), replacing a live version with a lower generation stamp.
// Then an RBW-drop record is appended for the waiting replica and its
// bytes are punched. No waiting replica: errs.NotFound.
func (s *Store) RecoverWaiting(ctx context.Context, id, genStamp uint64, n int64) (BlockInfo, error) {
	const op = "lbm.Store.RecoverWaiting"
	if err := s.checkOpen(ctx, op); err != nil {
		return BlockInfo{}, err
	}
	s.waitMu.Lock()
	w := s.waiting[id]
	var err error
	switch {
	case w == nil:
		err = errs.Newf(errs.NotFound, op, "", "block %d: no waiting replica", id)
	case w.busy:
		err = errs.Newf(errs.Unavailable, op, "", "block %d: the waiting replica is being recovered", id)
	case genStamp <= w.rec.GenStamp:
		err = errs.Newf(errs.Invalid, op, "", "block %d: generation stamp %d not above the waiting replica's %d", id, genStamp, w.rec.GenStamp)
	case n < 0 || n > w.rec.Length:
		err = errs.Newf(errs.Invalid, op, "", "block %d: length %d outside the waiting replica's [0, %d]", id, n, w.rec.Length)
	default:
		w.busy = true
	}
	s.waitMu.Unlock()
	if err != nil {
		return BlockInfo{}, err
	}
	done := false
	defer func() {
		if !done {
			s.waitMu.Lock()
			w.busy = false
			s.waitMu.Unlock()
		}
	}()
	r, c := w.rec, w.c
	fc, err := c.dataCipher()
	if err != nil {
		return BlockInfo{}, err
	}
	bw, err := s.CreateWith(ctx, BlockMeta{ID: id, Inode: r.Inode, GenStamp: genStamp},
		CreateOptions{BytesPerChecksum: int(r.BPC), OpenEnded: true, Replace: true})
	if err != nil {
		return BlockInfo{}, err
	}
	// A megabyte at a time (a multiple of every chunk size): the first n
	// bytes go to the new block, all Length bytes into the check.
	const step = 1 << 20
	buf := make([]byte, min(r.Length, step))
	var crc uint32
	var crcs []uint32
	for p := int64(0); p < r.Length; p += step {
		b := buf[:min(step, r.Length-p)]
		at := r.Offset + p
		k, rerr := c.data.ReadAt(b, at)
		s.countRead(k)
		if k < len(b) {
			bw.Abort()
			if rerr == nil || errors.Is(rerr, io.EOF) {
				s.dropWaiting(w, true)
				done = true
				return BlockInfo{}, errs.Newf(errs.Corrupt, op, c.dataPath, "block %d: waiting replica: data file too short at offset %d", id, at)
			}
			return BlockInfo{}, errs.Wrap(errs.IO, op, c.dataPath, rerr)
		}
		if fc != nil {
			fc.xorAt(b, b, at)
		}
		crc = crc32.Update(crc, castagnoli, b)
		if p < n {
			piece := b[:min(int64(len(b)), n-p)]
			crcs = chunks.Sums(crcs[:0], piece, int(r.BPC))
			if err := bw.WriteAt(p, piece, crcs); err != nil {
				bw.Abort()
				return BlockInfo{}, err
			}
		}
	}
	if crc != r.CRC {
		bw.Abort()
		s.metrics.corruptReads.Inc()
		s.dropWaiting(w, true)
		done = true
		return BlockInfo{}, errs.Newf(errs.Corrupt, op, c.dataPath,
			"block %d: waiting replica of %d bytes at data file offset %d: checksum mismatch (dropped)", id, r.Length, r.Offset)
	}
	info, err := bw.Commit(ctx)
	if err != nil {
		return BlockInfo{}, err
	}
	s.dropWaiting(w, true)
	done = true
	return info, nil
}

// DropWaiting forgets the waiting replica of id: an RBW-drop record is
// appended and fsynced, then its bytes are punched. None: errs.NotFound.
func (s *Store) DropWaiting(ctx context.Context, id uint64) error {
	const op = "lbm.Store.DropWaiting"
	if err := s.checkOpen(ctx, op); err != nil {
		return err
	}
	s.waitMu.Lock()
	w := s.waiting[id]
	busy := w != nil && w.busy
	if w != nil && !busy {
		w.busy = true
	}
	s.waitMu.Unlock()
	switch {
	case w == nil:
		return errs.Newf(errs.NotFound, op, "", "block %d: no waiting replica", id)
	case busy:
		return errs.Newf(errs.Unavailable, op, "", "block %d: the waiting replica is being recovered", id)
	}
	return s.dropWaiting(w, false)
}

// dropWaiting removes w (held busy by the caller), appends its RBW-drop
// record and punches its bytes. quiet logs a failure instead of returning
// it.
func (s *Store) dropWaiting(w *waitingRep, quiet bool) error {
	id, r, c := w.rec.ID, w.rec, w.c
	s.waitMu.Lock()
	if s.waiting[id] == w {
		delete(s.waiting, id)
		s.waitingN.Add(-1)
	}
	s.waitMu.Unlock()
	buf := appendRBWDrop(nil, id, r.GenStamp)
	c.mu.Lock()
	var err error
	if c.broken || c.removed {
		err = errs.New(errs.IO, "lbm.Store.DropWaiting", c.metaPath, "container is read-only after an earlier failure")
	} else {
		err = c.appendMetaLocked(buf)
	}
	if err == nil {
		delete(c.rbws, id)
	}
	removed := false
	if err == nil && c.deadLocked() {
		removed = true
		if rerr := c.removeLocked(); rerr != nil {
			s.log.Warn("lbm: removing dead container", "err", rerr)
		}
	}
	c.mu.Unlock()
	if err != nil {
		s.failDir(c.dir, err)
		if quiet {
			s.log.Warn("lbm: dropping a waiting replica", "block", id, "container", c.name(), "err", err)
		}
		return err
	}
	if !removed && r.Length > 0 {
		if perr := c.data.PunchHole(r.Offset, alignUp(r.Length)); perr != nil {
			s.log.Debug("lbm: punch hole of a waiting replica", "file", c.dataPath, "err", perr)
		}
	}
	return nil
}

// supersedeWaiting drops the waiting replica of id, if any and not being
// recovered, once a block of id with generation stamp gen (at least the
// waiting one's) is committed: else the waiting replica would come back
// after a restart that follows a Delete of that block.
func (s *Store) supersedeWaiting(id, gen uint64) {
	if s.waitingN.Load() == 0 {
		return
	}
	s.waitMu.Lock()
	w := s.waiting[id]
	ok := w != nil && !w.busy && w.rec.GenStamp <= gen
	if ok {
		w.busy = true
	}
	s.waitMu.Unlock()
	if ok {
		s.dropWaiting(w, true)
	}
}

// syncRecordLocked appends and fsyncs the RBW record of an open-ended
// writer's bytes so far (after their fdatasync), unless the last one
// already says the same.
func (w *BlockWriter) syncRecordLocked(op string) error {
	if w.rbwSynced && w.rbwLen == w.written && w.rbwGen == w.meta.GenStamp {
		return nil
	}
	rec := w.recordLocked()
	buf := appendRBW(make([]byte, 0, frameLen(rbwBodyLen)), &rec)
	c := w.c
	c.mu.Lock()
	err := error(errs.New(errs.IO, op, c.metaPath, "container is read-only after an earlier failure"))
	if !c.broken && !c.removed {
		err = c.appendMetaLocked(buf)
	}
	c.mu.Unlock()
	if err != nil {
		// The record may have reached the disk: keep the bytes it names.
		w.keep = true
		return w.failLocked(err)
	}
	w.rbwSynced, w.rbwLen, w.rbwGen = true, w.written, w.meta.GenStamp
	return nil
}

// dropRecordLocked appends an RBW-drop record for a writer that synced
// and is being aborted, so the replica does not wait after a restart.
// Best effort: a failure leaves a waiting replica whose bytes may be
// punched (its recovery then finds them corrupt).
func (w *BlockWriter) dropRecordLocked() {
	c := w.c
	buf := appendRBWDrop(nil, w.meta.ID, w.rbwGen)
	c.mu.Lock()
	if !c.broken && !c.removed {
		if err := c.appendMetaLocked(buf); err != nil {
			w.s.log.Warn("lbm: dropping an aborted replica being written", "block", w.meta.ID, "err", err)
		}
	}
	c.mu.Unlock()
	w.rbwSynced = false
}

// Abandon lets go of an uncommitted write as a crash would: nothing is
// punched and nothing recorded, so bytes made durable by Sync come back as
// a waiting replica when the store is opened again; the id is free. A
// datanode shutting down abandons its replicas being written. No-op after
// Commit, Abort or a failure.
func (w *BlockWriter) Abandon() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state != writerOpen {
		return
	}
	w.keep = true
	w.releaseLocked()
}
