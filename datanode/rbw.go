package datanode

import (
	"context"
	"sync"
	"time"

	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/base/chunks"
	"github.com/blockfs/blockfs/lbm"
)

// Replicas being written (HDFS's RBW): a client's open-ended write keeps
// its lbm writer here from the first packet until it commits, so that
// hflushed bytes can be read while it runs, and so that a broken stream
// leaves the replica for the client's pipeline recovery or the namenode's
// block recovery to pick up. At most one stream owns a replica at a time;
// a newer claim (a recovery, a rebuilt pipeline) stops the owner first.
// A replica nobody claims for Config.RBWExpiry is dropped.
//
// Every hsync makes the replica's bytes so far durable with an RBW record
// in the store (lbm), so after a restart they come back as a waiting
// replica (HDFS's RWR: lbm.Store.Waiting), which block recovery finalizes
// (recovery.go); one nobody recovers within Config.RBWExpiry of its last
// sync is dropped.

type rbw struct {
	id    uint64
	inode uint64
	bpc   int
	bw    *lbm.BlockWriter

	mu         sync.Mutex
	owner      context.CancelFunc // stops the owning stream; nil when detached
	released   chan struct{}      // closed when the owner lets go
	recovering uint64             // the newest block recovery that claimed it
	touched    time.Time
}

type rbwSet struct {
	mu sync.Mutex
	m  map[uint64]*rbw
}

func (s *rbwSet) get(id uint64) *rbw {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[id]
}

func (s *rbwSet) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// add registers a new replica being written, owned by the stream whose
// cancel is owner.
func (s *rbwSet) add(r *rbw, owner context.CancelFunc) {
	r.owner, r.released, r.touched = owner, make(chan struct{}), time.Now()
	s.mu.Lock()
	if s.m == nil {
		s.m = map[uint64]*rbw{}
	}
	s.m[r.id] = r
	s.mu.Unlock()
}

// remove forgets r (committed or aborted).
func (s *rbwSet) remove(r *rbw) {
	s.mu.Lock()
	if s.m[r.id] == r {
		delete(s.m, r.id)
	}
	s.mu.Unlock()
}

// claim stops r's owning stream, if any, waits (bounded by ctx) until it
// lets go, and makes owner (nil: a block recovery) the new owner.
func (r *rbw) claim(ctx context.Context, op string, owner context.CancelFunc) error {
	for {
		r.mu.Lock()
		if r.owner == nil {
			r.owner, r.released, r.touched = owner, make(chan struct{}), time.Now()
			if owner == nil {
				close(r.released)
			}
			r.mu.Unlock()
			return nil
		}
		stop, released := r.owner, r.released
		r.mu.Unlock()
		stop()
		select {
		case <-released:
		case <-ctx.Done():
			return errs.Wrap(errs.Timeout, op, blockName(r.id), context.Cause(ctx))
		}
	}
}

// release detaches the owner (its stream ended without committing).
func (r *rbw) release() {
	r.mu.Lock()
	if r.owner != nil {
		r.owner = nil
		close(r.released)
	}
	r.touched = time.Now()
	r.mu.Unlock()
}

// expire aborts the replicas no stream or recovery touched since before
// (abandons them, with abandon: a shutdown leaves their synced bytes to
// come back as waiting replicas).
func (s *rbwSet) expire(before time.Time, abandon bool) (dropped []uint64) {
	s.mu.Lock()
	var old []*rbw
	for _, r := range s.m {
		r.mu.Lock()
		if r.owner == nil && r.touched.Before(before) {
			old = append(old, r)
		}
		r.mu.Unlock()
	}
	for _, r := range old {
		delete(s.m, r.id)
	}
	s.mu.Unlock()
	for _, r := range old {
		if abandon {
			r.bw.Abandon()
		} else {
			r.bw.Abort()
		}
		dropped = append(dropped, r.id)
	}
	return dropped
}

// rbwLoop drops replicas left unclaimed for Config.RBWExpiry.
func (d *Datanode) rbwLoop() {
	defer d.wg.Done()
	t := time.NewTicker(max(d.cfg.RBWExpiry/10, time.Second))
	defer t.Stop()
	for {
		select {
		case <-d.ctx.Done():
			return
		case <-t.C:
			before := time.Now().Add(-d.cfg.RBWExpiry)
			for _, id := range d.rbws.expire(before, false) {
				d.log.Info("dropped a replica left being written", "block", id, "after", d.cfg.RBWExpiry)
			}
			d.expireWaiting(before)
		}
	}
}

// expireWaiting drops the waiting replicas (found at startup) last synced
// before before.
func (d *Datanode) expireWaiting(before time.Time) {
	for _, w := range d.store.WaitingReplicas() {
		if !w.Synced.Before(before) {
			continue
		}
		if err := d.store.DropWaiting(d.ctx, w.ID); err != nil {
			if errs.KindOf(err) != errs.NotFound && errs.KindOf(err) != errs.Unavailable {
				d.log.Warn("dropping a waiting replica", "block", w.ID, "err", err)
			}
			continue
		}
		d.log.Info("dropped a replica waiting to be recovered", "block", w.ID, "gen", w.GenStamp,
			"length", w.Length, "synced", w.Synced, "after", d.cfg.RBWExpiry)
	}
}

// copyPrefix copies the first n bytes of the finalized replica id into w
// (a new version of it, with chunks of bpc bytes), a megabyte at a time,
// each piece verified as it is read.
func (d *Datanode) copyPrefix(ctx context.Context, id uint64, n int64, w *lbm.BlockWriter, bpc int) error {
	const step = 1 << 20 // a multiple of every chunk size
	var buf []byte
	var crcs []uint32
	for off := int64(0); off < n; off += step {
		cr, err := d.store.ReadChunks(ctx, id, off, min(step, n-off), buf)
		if err != nil {
			return err
		}
		data := cr.Data[off-cr.Offset:][:min(step, n-off)]
		crcs = chunks.Sums(crcs[:0], data, bpc)
		if err := w.WriteAt(off, data, crcs); err != nil {
			return err
		}
		buf = cr.Data[:0]
	}
	return nil
}
