package lbm

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/base/chunks"
)

// BlockMeta identifies a block being stored.
type BlockMeta struct {
	ID       uint64 // block id; unique in the store
	Inode    uint64 // owning file's inode id
	GenStamp uint64 // generation stamp
	// Length is the declared length for Create. Put/PutBatch take the
	// length of the data; a non-zero Length that differs is errs.Invalid.
	Length int64
	// CRC is ignored: the store computes every block's CRC32C itself.
	CRC uint32
}

// BlockInfo describes a stored block (for Stat and block reports).
type BlockInfo struct {
	ID       uint64
	Inode    uint64
	GenStamp uint64
	Length   int64
	CRC      uint32 // CRC32C of the block's bytes
	// BytesPerChecksum is the chunk size of the block's stored chunk CRC
	// table; 0 for a block written in the old format (whole-block CRC only).
	BytesPerChecksum int
	Created          time.Time // when the CREATE record was written
	Dir              string    // data directory holding it
	Container        string    // container path without suffix
}

// OpenStats describes the replay done by Open.
type OpenStats struct {
	Containers          int           // containers open after repair
	InmemContainers     int           // replayed by the in-memory path
	StreamingContainers int           // replayed by the streaming path
	Records             int64         // metadata records replayed
	LiveBlocks          int           // blocks in the index
	TruncatedTails      int           // torn metadata tails cut off
	WaitingReplicas     int           // replicas waiting to be recovered (RBW records)
	Duration            time.Duration // wall time of Open
}

// Store is a log-block-container block store. All methods are safe for
// concurrent use.
type Store struct {
	cfg      Config
	fs       FS
	log      *slog.Logger
	keys     *keyring // nil without a server key
	metrics  *metrics
	index    *index
	dirs     []*dataDir
	rr       atomic.Uint64
	used     atomic.Int64
	diskRead atomic.Int64 // block and chunk-table bytes read from data files
	setAside []string     // files renamed aside by Open (read-only after Open)
	budget   atomic.Int64 // replay memory left
	closed   atomic.Bool
	statsMu  sync.Mutex
	stats    OpenStats
	dupMu    sync.Mutex // guards dups (Open only)
	dups     []dupEntry // ids found live in a second container at Open
	waitMu   sync.Mutex
	waiting  map[uint64]*waitingRep // replicas waiting to be recovered (rbw.go)
	waitingN atomic.Int64           // len(waiting)
	group    *groupCommit           // small blocks' commits (group.go)
}

func (s *Store) checkOpen(ctx context.Context, op string) error {
	if s.closed.Load() {
		return errs.New(errs.Unavailable, op, "", "store is closed")
	}
	if err := ctx.Err(); err != nil {
		return errs.Wrap(errs.Canceled, op, "", err)
	}
	return nil
}

// Put stores one block durably: its bytes and chunk CRC table
// (DefaultBytesPerChecksum) are written and fsynced, then its CREATE2
// record is appended and fsynced, before Put returns nil. A block id
// already stored (or being stored) gives an errs.Exist error.
func (s *Store) Put(ctx context.Context, m BlockMeta, data []byte) error {
	return s.PutBatch(ctx, []BlockMeta{m}, [][]byte{data})
}

// PutBatch stores several blocks with one data fsync and one metadata fsync
// per container used (Kudu's block creation transaction). On nil every
// block is durable. On error some blocks may have been stored (see Stat);
// none is half stored. A failing data dir is marked failed and the
// remaining blocks go to the other dirs.
func (s *Store) PutBatch(ctx context.Context, metas []BlockMeta, datas [][]byte) error {
	const op = "lbm.Store.Put"
	if err := s.checkOpen(ctx, op); err != nil {
		return err
	}
	if len(metas) != len(datas) {
		return errs.New(errs.Invalid, op, "", "metas and datas differ in length")
	}
	for i, m := range metas {
		if int64(len(datas[i])) > s.cfg.MaxContainerSize {
			return errs.Newf(errs.Invalid, op, "", "block %d larger than a container", m.ID)
		}
		if m.Length != 0 && m.Length != int64(len(datas[i])) {
			return errs.Newf(errs.Invalid, op, "", "block %d: declared length %d, data %d bytes", m.ID, m.Length, len(datas[i]))
		}
	}
	items := make([]*blockItem, len(metas))
	for i, m := range metas {
		if !s.index.reserve(m.ID) {
			for _, r := range metas[:i] {
				s.index.unreserve(r.ID)
			}
			return errs.Newf(errs.Exist, op, "", "block %d already exists", m.ID)
		}
		d := datas[i]
		items[i] = &blockItem{meta: m, data: d, crcs: chunks.Sums(nil, d, DefaultBytesPerChecksum), bpc: DefaultBytesPerChecksum, crc: crc32c(d)}
	}
	defer func() {
		for _, it := range items {
			if !it.stored {
				s.index.unreserve(it.meta.ID)
			}
		}
	}()
	return s.putItems(ctx, items)
}

// putItems stores items in order, as many to a container as fit, each
// container's share with one data sync and one metadata sync. Their ids
// are reserved by the caller. A failing data dir is marked failed and the
// rest go to the other dirs; the error returned is the last failure once
// every dir failed. Each stored item has stored set.
func (s *Store) putItems(ctx context.Context, items []*blockItem) error {
	const op = "lbm.Store.Put"
	now := time.Now().UnixMicro()
	failures, done := 0, 0
	for done < len(items) {
		if err := ctx.Err(); err != nil {
			return errs.Wrap(errs.Canceled, op, "", err)
		}
		c, err := s.acquire()
		if err != nil {
			return err
		}
		n, err := c.writeBlocks(items[done:], now)
		for _, it := range items[done : done+n] {
			s.supersedeWaiting(it.meta.ID, it.meta.GenStamp)
		}
		done += n
		s.release(c)
		if err == nil {
			s.wrote(c.dir)
		} else {
			s.failDir(c.dir, err)
			if failures++; failures > len(s.dirs) {
				return err
			}
		}
	}
	return nil
}

// acquire hands out a container for writing, one writer per container.
func (s *Store) acquire() (*container, error) {
	for range len(s.dirs) {
		d := s.dirs[s.rr.Add(1)%uint64(len(s.dirs))]
		if !d.writable(time.Now()) {
			continue
		}
		var c *container
		d.mu.Lock()
		if n := len(d.avail); n > 0 {
			c = d.avail[n-1]
			d.avail = d.avail[:n-1]
		}
		d.mu.Unlock()
		if c == nil {
			var err error
			if c, err = s.createContainer(d); err != nil {
				s.failDir(d, err)
				continue
			}
		}
		c.mu.Lock()
		c.writers++
		c.mu.Unlock()
		return c, nil
	}
	return nil, errs.New(errs.Unavailable, "lbm.Store.Put", "", "no healthy data directory")
}

func (s *Store) release(c *container) {
	c.mu.Lock()
	c.writers--
	full := c.fullLocked()
	if !full && !c.broken && !c.removed {
		c.mu.Unlock()
		c.dir.mu.Lock()
		if !c.dir.failed.Load() {
			c.dir.avail = append(c.dir.avail, c)
		}
		c.dir.mu.Unlock()
		return
	}
	if c.deadLocked() {
		if err := c.removeLocked(); err != nil {
			s.log.Warn("lbm: removing dead container", "err", err)
		}
	}
	c.mu.Unlock()
}

// outOfSpace reports whether err is the disk being full (ENOSPC): a
// directory that answers it is full, not failed, and a container whose
// data file met it is not broken.
func outOfSpace(err error) bool { return errors.Is(err, syscall.ENOSPC) }

func (s *Store) failDir(d *dataDir, err error) {
	if outOfSpace(err) {
		s.dirFull(d)
		return
	}
	if errs.Is(err, errs.Canceled) || d.failed.Swap(true) {
		return
	}
	s.metrics.failedDirs.Inc()
	s.log.Error("lbm: data directory failed; no new blocks go there", "dir", d.path, "err", err)
	d.mu.Lock()
	d.avail = nil
	d.mu.Unlock()
}

// dirFull keeps new blocks out of d for FullRetry: it answered a write
// with ENOSPC. Its containers stay available for when space returns
// (container.dataFailed, BlockWriter.failDataLocked).
func (s *Store) dirFull(d *dataDir) {
	retry := s.cfg.FullRetry
	if retry <= 0 {
		retry = time.Second
	}
	if d.fullUntil.Swap(time.Now().Add(retry).UnixNano()) == 0 {
		s.metrics.fullDirs.Inc()
		s.log.Warn("lbm: data directory full; no new blocks go there until space is freed", "dir", d.path, "retry", retry)
	}
}

// writable reports whether new blocks may go to d now: not failed, and
// not within a full directory's retry wait. Past the wait the directory
// is tried again; a write that fits clears the mark (wrote).
func (d *dataDir) writable(now time.Time) bool {
	if d.failed.Load() {
		return false
	}
	u := d.fullUntil.Load()
	return u == 0 || now.UnixNano() >= u
}

// wrote clears d's full mark after a write there succeeded.
func (s *Store) wrote(d *dataDir) {
	if d.fullUntil.Load() != 0 && d.fullUntil.Swap(0) != 0 {
		s.metrics.fullDirs.Dec()
		s.log.Info("lbm: data directory has space again", "dir", d.path)
	}
}

// FullDirs returns the data directories that ran out of space and have
// not taken a block since.
func (s *Store) FullDirs() []string {
	var out []string
	for _, d := range s.dirs {
		if d.fullUntil.Load() != 0 {
			out = append(out, d.path)
		}
	}
	return out
}

// FailedDirs returns the data directories marked failed.
func (s *Store) FailedDirs() []string {
	var out []string
	for _, d := range s.dirs {
		if d.failed.Load() {
			out = append(out, d.path)
		}
	}
	return out
}

// Read returns n bytes at off of block id. A new-format block has only
// the chunks the range touches read and verified (see ReadChunks); an
// old-format block is read whole and its CRC32C verified before slicing. A
// mismatch is errs.Corrupt (the caller reports the replica). Unknown id:
// errs.NotFound; a range outside the block: errs.Invalid.
func (s *Store) Read(ctx context.Context, id uint64, off, n int64) ([]byte, error) {
	const op = "lbm.Store.Read"
	if err := s.checkOpen(ctx, op); err != nil {
		return nil, err
	}
	e, ok := s.index.get(id)
	if !ok {
		return nil, errs.Newf(errs.NotFound, op, "", "block %d not found", id)
	}
	if off < 0 || n < 0 || off+n > e.length || off+n < off {
		return nil, errs.Newf(errs.Invalid, op, "", "range [%d,+%d) outside block %d of length %d", off, n, id, e.length)
	}
	if e.bpc == 0 {
		b, err := s.readWhole(op, id, &e, nil)
		if err != nil {
			return nil, err
		}
		return b[off : off+n], nil
	}
	if n == 0 {
		return []byte{}, nil
	}
	cr, err := s.readChunked(op, id, &e, off, n, nil)
	if err != nil {
		return nil, err
	}
	return cr.Data[off-cr.Offset : off-cr.Offset+n], nil
}

// Stat describes block id.
func (s *Store) Stat(id uint64) (BlockInfo, bool) {
	e, ok := s.index.get(id)
	if !ok {
		return BlockInfo{}, false
	}
	return e.info(id), true
}

func (e *blockEntry) info(id uint64) BlockInfo {
	return BlockInfo{ID: id, Inode: e.inode, GenStamp: e.gen, Length: e.length, CRC: e.crc,
		BytesPerChecksum: int(e.bpc), Created: time.UnixMicro(e.ts), Dir: e.c.dir.path, Container: e.c.name()}
}

// Blocks lists every stored block (for a full block report), sorted by id.
func (s *Store) Blocks() []BlockInfo {
	var out []BlockInfo
	for i := range s.index.shards {
		sh := &s.index.shards[i]
		sh.mu.RLock()
		for id, e := range sh.m {
			out = append(out, e.info(id))
		}
		sh.mu.RUnlock()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Usage returns Config.Capacity and the bytes used by live blocks (each
// with its chunk CRC table, rounded up to 4 KiB).
func (s *Store) Usage() (capacity, used int64) { return s.cfg.Capacity, s.used.Load() }

// OpenStats reports what Open's replay did.
func (s *Store) OpenStats() OpenStats { return s.stats }

// Delete deletes one block: its DELETE record is appended and fsynced (so
// the block never comes back) before the hole is punched. Unknown id:
// errs.NotFound.
func (s *Store) Delete(ctx context.Context, id uint64) error {
	return s.DeleteBatch(ctx, []uint64{id})
}

// DeleteBatch deletes several blocks with one metadata fsync per container
// (the containers in parallel).
// Ids not found are skipped and reported as an errs.NotFound error after
// the others are deleted.
func (s *Store) DeleteBatch(ctx context.Context, ids []uint64) error {
	const op = "lbm.Store.Delete"
	if err := s.checkOpen(ctx, op); err != nil {
		return err
	}
	var firstErr error
	type group struct {
		c   *container
		ids []uint64
		es  []blockEntry
	}
	groups := map[*container]*group{}
	var order []*group
	for _, id := range ids {
		e, ok := s.index.remove(id)
		if !ok {
			if firstErr == nil {
				firstErr = errs.Newf(errs.NotFound, op, "", "block %d not found", id)
			}
			continue
		}
		g := groups[e.c]
		if g == nil {
			g = &group{c: e.c}
			groups[e.c] = g
			order = append(order, g)
		}
		g.ids = append(g.ids, id)
		g.es = append(g.es, e)
	}
	// Containers are independent: their appends and fsyncs run in parallel.
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, g := range order {
		wg.Go(func() {
			if err := s.deleteFrom(g.c, g.ids, g.es, true); err != nil {
				mu.Lock()
				if firstErr == nil || errs.Is(firstErr, errs.NotFound) {
					firstErr = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return firstErr
}

// deleteFrom appends and fsyncs DELETE records for ids (entries es) in c,
// drops them from c, then punches their extents. On failure with restore,
// the entries go back into the index (a Delete that did not happen).
func (s *Store) deleteFrom(c *container, ids []uint64, es []blockEntry, restore bool) error {
	buf := make([]byte, 0, len(ids)*frameLen(deleteBodyLen))
	for _, id := range ids {
		buf = appendDelete(buf, id)
	}
	c.mu.Lock()
	var err error
	if c.broken || c.removed {
		err = errs.New(errs.IO, "lbm.Store.Delete", c.metaPath, "container is read-only after an earlier failure")
	} else {
		err = c.appendMetaLocked(buf)
	}
	if err != nil {
		c.mu.Unlock()
		if restore {
			for i, id := range ids {
				s.index.insert(id, es[i])
			}
		}
		s.failDir(c.dir, err)
		return err
	}
	for i, id := range ids {
		delete(c.blocks, id)
		c.liveBytes -= es[i].length
		s.used.Add(-es[i].extent())
	}
	if c.deadLocked() {
		err := c.removeLocked()
		c.mu.Unlock()
		if err != nil {
			s.log.Warn("lbm: removing dead container", "err", err)
		}
		return nil
	}
	if s.cfg.RuntimeCompaction && c.shouldCompactLocked() {
		if err := c.compactLocked(); err != nil {
			s.log.Warn("lbm: metadata compaction failed", "container", c.name(), "err", err)
		}
	}
	c.mu.Unlock()
	// The DELETEs are durable; now give the space back. A failed punch
	// only leaks space.
	for _, e := range coalesce(es) {
		if err := c.data.PunchHole(e[0], e[1]); err != nil {
			s.log.Debug("lbm: punch hole", "file", c.dataPath, "err", err)
		}
	}
	return nil
}

// retire releases old, the version of block id that a Replace commit into
// container nc took out of the index. In nc itself its CREATE is
// superseded (replay keeps the later, higher generation stamp): only the
// hole is punched. In another container a DELETE is appended and fsynced
// there first; if that fails the old version stays on disk, and Open
// resolves the two live versions by generation stamp.
func (s *Store) retire(id uint64, old blockEntry, nc *container) {
	if old.c == nc {
		if old.length > 0 {
			if err := nc.data.PunchHole(old.off, old.extent()); err != nil {
				s.log.Debug("lbm: punch hole", "file", nc.dataPath, "err", err)
			}
		}
		return
	}
	if err := s.deleteFrom(old.c, []uint64{id}, []blockEntry{old}, false); err != nil {
		s.log.Warn("lbm: releasing the replaced version of a block", "block", id,
			"container", old.c.name(), "err", err)
	}
}

// coalesce merges the aligned extents of deleted blocks.
func coalesce(es []blockEntry) [][2]int64 {
	ext := make([][2]int64, 0, len(es))
	for _, e := range es {
		if e.length > 0 {
			ext = append(ext, [2]int64{e.off, e.extent()})
		}
	}
	sort.Slice(ext, func(i, j int) bool { return ext[i][0] < ext[j][0] })
	out := ext[:0]
	for _, x := range ext {
		if n := len(out); n > 0 && out[n-1][0]+out[n-1][1] == x[0] {
			out[n-1][1] += x[1]
			continue
		}
		out = append(out, x)
	}
	return out
}

// Close closes every file. Outstanding calls may fail; later calls return
// errs.Unavailable.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	for _, d := range s.dirs {
		cs := d.containers()
		for _, c := range cs {
			c.mu.Lock()
			if !c.removed {
				c.removed = true
				c.data.Close()
				c.meta.Close()
			}
			c.mu.Unlock()
		}
	}
	return nil
}

// containers returns the dir's containers as they are now (a copy, so the
// caller may lock each without holding the dir's lock).
func (d *dataDir) containers() []*container {
	d.mu.Lock()
	defer d.mu.Unlock()
	cs := make([]*container, 0, len(d.all))
	for c := range d.all {
		cs = append(cs, c)
	}
	return cs
}

func newDataDir(path string) *dataDir {
	return &dataDir{path: filepath.Clean(path), all: map[*container]struct{}{}}
}
