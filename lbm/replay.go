package lbm

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/base/chunks"
)

// Open opens (creating if needed) the data dirs of cfg and replays every
// container's metadata to rebuild the block index, then repairs: torn
// metadata tails are truncated, incomplete containers and dead containers
// removed, mostly-dead full containers compacted. A checksum mismatch that
// is not a torn tail is corruption naming the file and offset: the
// container is set aside and Open goes on without it (see SetAside), or,
// with Config.FailOnCorruptContainer, Open fails with that errs.Corrupt
// error. A directory that cannot be listed or read is marked failed and
// Open goes on without it.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	start := time.Now()
	s := &Store{cfg: cfg, fs: cfg.FS, log: cfg.Logger, index: newIndex()}
	if s.fs == nil {
		s.fs = OSFS()
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	var err error
	if s.metrics, err = newMetrics(cfg.Registerer); err != nil {
		return nil, errs.Wrap(errs.Invalid, "lbm.Open", "", err)
	}
	for _, p := range cfg.Dirs {
		d := newDataDir(p)
		s.dirs = append(s.dirs, d)
		if err := s.fs.MkdirAll(d.path, 0o755); err != nil {
			s.failDir(d, err)
		}
	}
	if err := s.loadKeys(); err != nil {
		return nil, err
	}
	s.budget.Store(cfg.ReplayMemoryBudget)

	type job struct {
		d                *dataDir
		id               string
		hasData, hasMeta bool
	}
	var jobs []job
	for _, d := range s.dirs {
		if d.failed.Load() {
			continue
		}
		names, err := s.fs.ReadDir(d.path)
		if err != nil {
			s.failDir(d, err)
			continue
		}
		byID := map[string]int{}
		for _, n := range names {
			var id string
			var isData bool
			switch {
			case strings.HasSuffix(n, ".metadata.tmp"):
				// Leftover of an interrupted compaction: the original is intact.
				if err := s.fs.Remove(d.path + "/" + n); err != nil {
					s.failDir(d, err)
				}
				continue
			case strings.HasSuffix(n, ".data"):
				id, isData = strings.TrimSuffix(n, ".data"), true
			case strings.HasSuffix(n, ".metadata"):
				id = strings.TrimSuffix(n, ".metadata")
			default:
				continue
			}
			i, ok := byID[id]
			if !ok {
				i = len(jobs)
				byID[id] = i
				jobs = append(jobs, job{d: d, id: id})
			}
			if isData {
				jobs[i].hasData = true
			} else {
				jobs[i].hasMeta = true
			}
		}
	}

	// Replay in parallel: a bounded pool over all containers of all dirs.
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
		next     int
		corrupt  []corruptContainer
	)
	workers := min(cfg.ReplayWorkers, max(1, len(jobs)))
	for range workers {
		wg.Go(func() {
			for {
				mu.Lock()
				if next >= len(jobs) || firstErr != nil {
					mu.Unlock()
					return
				}
				j := jobs[next]
				next++
				mu.Unlock()
				if err := ctx.Err(); err != nil {
					mu.Lock()
					firstErr = errs.Wrap(errs.Canceled, "lbm.Open", "", err)
					mu.Unlock()
					return
				}
				if j.d.failed.Load() {
					continue
				}
				err := s.loadContainer(j.d, j.id, j.hasData, j.hasMeta)
				if err == nil {
					continue
				}
				if errs.Is(err, errs.IO) {
					s.failDir(j.d, err)
					continue
				}
				mu.Lock()
				if errs.Is(err, errs.Corrupt) && !cfg.FailOnCorruptContainer {
					corrupt = append(corrupt, corruptContainer{d: j.d, id: j.id, hasData: j.hasData, hasMeta: j.hasMeta, err: err})
				} else if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if firstErr == nil {
		firstErr = s.setAsideAll(corrupt, len(jobs))
	}
	if firstErr != nil {
		s.Close()
		return nil, firstErr
	}

	s.resolveDups()
	s.settleWaiting()

	// Drop what lives in dirs that failed during replay (their blocks are
	// reported missing), then repair and hand out the writable containers.
	for _, d := range s.dirs {
		cs := d.containers()
		for _, c := range cs {
			c.mu.Lock()
			switch {
			case d.failed.Load():
				for id := range c.blocks {
					s.index.removeIf(id, c)
					e := c.blocks[id]
					s.used.Add(-e.extent())
				}
			case c.deadLocked():
				if err := c.removeLocked(); err != nil {
					s.log.Warn("lbm: removing dead container", "err", err)
				}
			case c.shouldCompactLocked():
				if err := c.compactLocked(); err != nil {
					c.mu.Unlock()
					s.failDir(d, err)
					continue
				}
			case !c.fullLocked():
				d.mu.Lock()
				d.avail = append(d.avail, c)
				d.mu.Unlock()
			}
			c.mu.Unlock()
		}
	}
	for _, d := range s.dirs {
		d.mu.Lock()
		s.stats.Containers += len(d.all)
		d.mu.Unlock()
	}
	for i := range s.index.shards {
		s.stats.LiveBlocks += len(s.index.shards[i].m)
	}
	s.stats.Duration = time.Since(start)
	s.metrics.openSeconds.Set(s.stats.Duration.Seconds())
	return s, nil
}

// dupEntry is a block live in a container whose id was already in the
// index from another container when it was merged.
type dupEntry struct {
	id uint64
	e  blockEntry
}

// resolveDups settles the ids live in two containers (a Replace commit
// into another container, whose DELETE of the old version a crash cut
// off): the higher generation stamp stays in the index, and the loser
// gets a DELETE record (fsynced) in its container, then a punched hole,
// logged at Info. It runs once every container is merged, one id at a
// time. Equal generation stamps were refused at merge (the container is
// set aside); if one shows up here (its rival set aside meanwhile), the
// entry in the index is kept and the other left alone and logged.
func (s *Store) resolveDups() {
	type group struct {
		ids []uint64
		es  []blockEntry
	}
	groups := map[*container]*group{}
	var order []*container
	for _, d := range s.dups {
		cur, ok := s.index.get(d.id)
		if !ok {
			// Its rival was taken back (container set aside).
			s.index.insert(d.id, d.e)
			continue
		}
		win, lose := cur, d.e
		switch {
		case d.e.gen > cur.gen:
			win, lose = d.e, cur
			s.index.publish(d.id, d.e)
		case d.e.gen == cur.gen:
			s.log.Error("lbm: block live in two containers with the same generation stamp; keeping one",
				"block", d.id, "gen", cur.gen, "kept", cur.c.name(), "other", d.e.c.name())
			continue
		}
		s.log.Info("lbm: block live in two containers; keeping the higher generation stamp",
			"block", d.id, "kept", win.c.name(), "gen", win.gen, "deleted", lose.c.name(), "old_gen", lose.gen)
		g := groups[lose.c]
		if g == nil {
			g = &group{}
			groups[lose.c] = g
			order = append(order, lose.c)
		}
		g.ids = append(g.ids, d.id)
		g.es = append(g.es, lose)
	}
	s.dups = nil
	for _, c := range order {
		if c.dir.failed.Load() {
			continue // its blocks are dropped with the dir
		}
		g := groups[c]
		if err := s.deleteFrom(c, g.ids, g.es, false); err != nil {
			s.log.Warn("lbm: deleting the older version of a block live in two containers",
				"container", c.name(), "err", err)
		}
	}
}

func (s *Store) loadKeys() error {
	path := s.cfg.keyFile()
	var key []byte
	var err error
	if s.cfg.Encrypt {
		key, err = loadOrCreateServerKey(s.fs, path)
	} else if _, serr := s.fs.Stat(path); serr == nil {
		key, err = loadOrCreateServerKey(s.fs, path)
	}
	if err != nil {
		return err
	}
	if key != nil {
		s.keys, err = newKeyring(key)
	}
	return err
}

func (s *Store) tryBudget(n int64) bool {
	for {
		cur := s.budget.Load()
		if cur < n {
			return false
		}
		if s.budget.CompareAndSwap(cur, cur-n) {
			return true
		}
	}
}

// replayState is the container-local result of replay, merged once.
type replayState struct {
	path     string
	dataSize int64
	blocks   map[uint64]blockEntry
	created  int
	next     int64
	records  int64
	rbws     map[uint64]createRec // standing RBW records, by id
	c        *container
}

// apply decodes one record body (fixed layout, no allocation) at off.
func (r *replayState) apply(body []byte, off int64) error {
	r.records++
	switch {
	case (len(body) == createBodyLen && body[0] == recCreate) ||
		(len(body) == create2BodyLen && body[0] == recCreate2):
		var c createRec
		decodeCreate(body, &c)
		if body[0] == recCreate2 && !chunks.Valid(int(c.BPC)) {
			return errs.Newf(errs.Corrupt, "lbm.Open", r.path,
				"CREATE2 of block %d at offset %d: bytes per checksum %d", c.ID, off, c.BPC)
		}
		// An empty block writes no bytes, so its (aligned) offset may lie
		// at or past the end of the data file (regression test
		// TestZeroLengthBlockSurvivesReopen).
		span := c.Length + tableLen(c.Length, c.BPC)
		if c.Offset < firstBlockOffset || c.Offset%fsBlockSize != 0 || c.Length < 0 || c.Length > 1<<50 ||
			(c.Length > 0 && c.Offset+span > r.dataSize) || c.Offset+span < c.Offset {
			return errs.Newf(errs.Corrupt, "lbm.Open", r.path,
				"malformed CREATE of block %d at offset %d (block [%d,+%d), data file %d bytes)",
				c.ID, off, c.Offset, c.Length, r.dataSize)
		}
		if prev, dup := r.blocks[c.ID]; dup && prev.gen >= c.GenStamp {
			return errs.Newf(errs.Corrupt, "lbm.Open", r.path,
				"second CREATE of live block %d at offset %d (generation stamp %d, live %d)", c.ID, off, c.GenStamp, prev.gen)
		}
		// A CREATE of a block live here with a lower generation stamp is a
		// Replace commit: it supersedes the older version, whose extent is
		// garbage (its CREATE counts as dead for compaction).
		e := c.entry(r.c)
		r.blocks[c.ID] = e
		delete(r.rbws, c.ID) // the writer committed
		r.created++
		r.next = max(r.next, c.Offset+e.extent())
	case len(body) == rbwBodyLen && body[0] == recRBW:
		var c createRec
		decodeCreate(body, &c)
		if !chunks.Valid(int(c.BPC)) || c.Offset < firstBlockOffset || c.Offset%fsBlockSize != 0 ||
			c.Length < 0 || c.Length > 1<<50 || (c.Length > 0 && c.Offset+c.Length > r.dataSize) {
			return errs.Newf(errs.Corrupt, "lbm.Open", r.path,
				"malformed RBW of block %d at offset %d (bytes [%d,+%d), bytes per checksum %d, data file %d bytes)",
				c.ID, off, c.Offset, c.Length, c.BPC, r.dataSize)
		}
		// The last RBW of an id stands (until a CREATE or an RBW-drop);
		// its bytes keep their range either way (CTR keystream).
		if r.rbws == nil {
			r.rbws = map[uint64]createRec{}
		}
		r.rbws[c.ID] = c
		r.next = max(r.next, alignUp(c.Offset+c.Length))
	case len(body) == rbwDropBodyLen && body[0] == recRBWDrop:
		id, gen := decodeRBWDrop(body)
		if cur, ok := r.rbws[id]; ok && cur.GenStamp <= gen {
			delete(r.rbws, id)
		}
	case len(body) == deleteBodyLen && body[0] == recDelete:
		id := decodeDelete(body)
		if _, ok := r.blocks[id]; !ok {
			return errs.Newf(errs.Corrupt, "lbm.Open", r.path, "DELETE of unknown block %d at offset %d", id, off)
		}
		delete(r.blocks, id)
	default:
		return errs.Newf(errs.Corrupt, "lbm.Open", r.path, "unknown record (type %d, %d bytes) at offset %d", body[0], len(body), off)
	}
	return nil
}

func corruptAt(path string, off int64, st frameStatus) error {
	return errs.Newf(errs.Corrupt, "lbm.Open", path, "metadata record at offset %d: %s", off, st)
}

// loadContainer opens and replays one container and merges it.
func (s *Store) loadContainer(d *dataDir, id string, hasData, hasMeta bool) error {
	base := d.path + "/" + id
	dataPath, metaPath := base+".data", base+".metadata"
	ioErr := func(p string, err error) error { return errs.Wrap(errs.IO, "lbm.Open", p, err) }
	removeIncomplete := func(why string) error {
		s.log.Warn("lbm: removing incomplete container", "container", base, "why", why)
		for _, p := range []string{dataPath, metaPath} {
			if err := s.fs.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return ioErr(p, err)
			}
		}
		if err := s.fs.SyncDir(d.path); err != nil {
			return ioErr(d.path, err)
		}
		return nil
	}
	var dataSize int64
	if hasData {
		fi, err := s.fs.Stat(dataPath)
		if err != nil {
			return ioErr(dataPath, err)
		}
		dataSize = fi.Size()
	}
	if !hasMeta {
		if dataSize <= firstBlockOffset {
			return removeIncomplete("data file without metadata and without blocks")
		}
		return errs.Newf(errs.Corrupt, "lbm.Open", dataPath, "data file of %d bytes has no metadata file", dataSize)
	}
	meta, err := s.fs.OpenFile(metaPath, os.O_RDWR, 0)
	if err != nil {
		return ioErr(metaPath, err)
	}
	fi, err := meta.Stat()
	if err != nil {
		meta.Close()
		return ioErr(metaPath, err)
	}
	size := fi.Size()
	if !hasData {
		// No data file (an interrupted dead-container removal deletes it
		// first): bounds-checking CREATEs against it would call a dead
		// container corrupt. Its live blocks, if any, are checked below
		// (regression test TestCrashDuringDeadContainerRemoval).
		dataSize = math.MaxInt64
	}
	c := &container{s: s, dir: d, id: id, dataPath: dataPath, metaPath: metaPath, meta: meta}
	st := &replayState{path: metaPath, dataSize: dataSize, c: c, next: firstBlockOffset,
		blocks: make(map[uint64]blockEntry, size/int64(frameLen(createBodyLen))/2+1)}
	t0 := time.Now()
	path := "streaming"
	var end int64
	var tail frameStatus
	var hdrOK bool
	if s.cfg.InmemReplayThreshold > 0 && size-fileHeaderLen <= s.cfg.InmemReplayThreshold && s.tryBudget(size) {
		path = "inmem"
		end, tail, hdrOK, err = s.replayInmem(c, st, size)
		s.budget.Add(size)
	} else {
		path = s.cfg.StreamingReplay.String()
		end, tail, hdrOK, err = s.replayStreaming(c, st, size, s.cfg.StreamingReplay)
	}
	if err == nil && !hdrOK {
		meta.Close()
		if !hasData || dataSize <= firstBlockOffset {
			return removeIncomplete("metadata file header never completed")
		}
		return errs.Newf(errs.Corrupt, "lbm.Open", metaPath, "bad metadata file header at offset 0")
	}
	if err != nil {
		meta.Close()
		return err
	}
	s.metrics.replaySeconds.WithLabelValues(path).Observe(time.Since(t0).Seconds())
	if !hasData {
		meta.Close()
		if len(st.blocks) == 0 {
			// Dead-container removal deletes .data first: finish the job.
			if err := s.fs.Remove(metaPath); err != nil {
				return ioErr(metaPath, err)
			}
			return s.fs.SyncDir(d.path)
		}
		return errs.Newf(errs.Corrupt, "lbm.Open", metaPath, "%d live blocks but no data file", len(st.blocks))
	}
	if end < size {
		// A torn tail: nothing past end was acknowledged.
		s.log.Warn("lbm: truncating torn metadata tail", "file", metaPath, "offset", end,
			"bytes", size-end, "kind", tail.String())
		err := meta.Truncate(end)
		if err == nil {
			err = meta.Sync()
		}
		if err != nil {
			meta.Close()
			return ioErr(metaPath, err)
		}
		s.metrics.truncations.Inc()
	}
	if c.data, err = s.fs.OpenFile(dataPath, os.O_RDWR, 0); err != nil {
		meta.Close()
		return ioErr(dataPath, err)
	}
	// New blocks go past the end of the data file, not just past the last
	// CREATE: bytes written but never committed before a crash keep their
	// range, so no CTR keystream position ever encrypts two plaintexts.
	c.metaOff, c.nextBlock, c.created, c.blocks = end, max(st.next, alignUp(dataSize)), st.created, st.blocks
	c.rbws = st.rbws // candidates; settleWaiting keeps the waiting replicas
	var added int64  // extents added to s.used
	var dups []dupEntry
	for bid, e := range st.blocks {
		if !s.index.insert(bid, e) {
			if cur, ok := s.index.get(bid); ok && cur.gen == e.gen {
				// Take back what this container already published: it may
				// be set aside, and the other container keeps the id.
				for id := range st.blocks {
					s.index.removeIf(id, c)
				}
				s.used.Add(-added)
				c.data.Close()
				meta.Close()
				return errs.Newf(errs.Corrupt, "lbm.Open", metaPath,
					"block %d is live in two containers with generation stamp %d", bid, e.gen)
			}
			// Live in another container with another generation stamp: a
			// Replace commit whose DELETE of the old version a crash cut
			// off. Open keeps the higher one once every container is in.
			dups = append(dups, dupEntry{id: bid, e: e})
		}
		c.liveBytes += e.length
		added += e.extent()
		s.used.Add(e.extent())
	}
	if len(dups) > 0 {
		s.dupMu.Lock()
		s.dups = append(s.dups, dups...)
		s.dupMu.Unlock()
	}
	d.mu.Lock()
	d.all[c] = struct{}{}
	d.mu.Unlock()
	s.metrics.containers.Inc()
	s.statsMu.Lock()
	s.stats.Records += st.records
	if path == "inmem" {
		s.stats.InmemContainers++
	} else {
		s.stats.StreamingContainers++
	}
	if end < size {
		s.stats.TruncatedTails++
	}
	s.statsMu.Unlock()
	return nil
}

// parseHeaders checks the (decrypted) headers at the start of a metadata
// file. It returns the header length, the cipher and the sealed flag; ok is
// false when the header is missing or invalid.
func (s *Store) parseHeaders(c *container, raw []byte) (hdrLen int64, fc *fileCipher, sealed, ok bool, err error) {
	h := raw
	if isEncHeader(raw) {
		if len(raw) < encHeaderLen+fileHeaderLen {
			return 0, nil, false, false, nil
		}
		if fc, err = s.keys.openHeader(c.metaPath, raw); err != nil {
			return 0, nil, false, false, err
		}
		var tmp [fileHeaderLen]byte
		fc.xorAt(tmp[:], raw[encHeaderLen:encHeaderLen+fileHeaderLen], encHeaderLen)
		h, hdrLen = tmp[:], encHeaderLen
	}
	flags, ok := decodeFileHeader(h, metaMagic)
	return hdrLen + fileHeaderLen, fc, flags&flagSealed != 0, ok, nil
}

// replayInmem: ONE ReadAt of the whole file, then parse from memory. The
// zero tail is located on the ciphertext before the one CTR pass that
// decrypts the records region in place.
func (s *Store) replayInmem(c *container, st *replayState, size int64) (end int64, tail frameStatus, hdrOK bool, err error) {
	buf := make([]byte, size)
	if n, err := c.meta.ReadAt(buf, 0); int64(n) < size {
		return 0, 0, false, errs.Wrap(errs.IO, "lbm.Open", c.metaPath, errors.Join(io.ErrUnexpectedEOF, err))
	}
	hdrLen, fc, sealed, ok, err := s.parseHeaders(c, buf)
	if err != nil || !ok {
		return 0, 0, ok, err
	}
	c.metaFC, c.sealed = fc, sealed
	zero := zeroFrom(buf) // on the ciphertext
	if fc != nil {
		fc.xorAt(buf[hdrLen:], buf[hdrLen:], hdrLen)
	}
	p := int(hdrLen)
	for {
		body, next, fs := nextFrame(buf, zero, p)
		switch fs {
		case frameOK:
			if err := st.apply(body, int64(p)); err != nil {
				return 0, 0, true, err
			}
			p = next
			continue
		case frameEOF, frameZeroTail, frameTruncated:
			return int64(p), fs, true, nil
		default:
			return 0, 0, true, corruptAt(c.metaPath, int64(p), fs)
		}
	}
}

// replayStreaming: per record, a read of the 8-byte frame header and one
// of body+crc, each decrypted at its own offset. With StreamingPread each
// read is a ReadAt of the file (Kudu's path); with StreamingBuffered it is
// served from a readahead window (replay_buffered.go), so the two readers
// share this parser and its tail and corruption rules. A frame whose
// on-disk bytes are zero to EOF is a crash tail.
func (s *Store) replayStreaming(c *container, st *replayState, size int64, mode StreamingMode) (end int64, tail frameStatus, hdrOK bool, err error) {
	path := c.metaPath
	var readAt func(b []byte, off int64) error
	if mode == StreamingBuffered {
		readAt = newReadahead(c.meta, path, size).readAt
	} else {
		readAt = func(b []byte, off int64) error { return preadFull(c.meta, path, b, off) }
	}
	hb := make([]byte, min(size, encHeaderLen+fileHeaderLen))
	if err := readAt(hb, 0); err != nil {
		return 0, 0, false, err
	}
	hdrLen, fc, sealed, ok, err := s.parseHeaders(c, hb)
	if err != nil || !ok {
		return 0, 0, ok, err
	}
	c.metaFC, c.sealed = fc, sealed
	// restZero reports whether the file is all zero from off to EOF, in
	// bounded reads (only ever reached at a tail).
	restZero := func(off int64) (bool, error) {
		var chunk []byte
		for off < size {
			n := min(size-off, 1<<20)
			if chunk == nil {
				chunk = make([]byte, n)
			}
			b := chunk[:n]
			if err := readAt(b, off); err != nil {
				return false, err
			}
			if zeroFrom(b) != 0 {
				return false, nil
			}
			off += n
		}
		return true, nil
	}
	var hdr [frameHeaderLen]byte
	var body []byte
	p := hdrLen
	for {
		if p == size {
			return p, frameEOF, true, nil
		}
		if size-p < frameHeaderLen {
			z, err := restZero(p)
			if err != nil {
				return 0, 0, true, err
			}
			if z {
				return p, frameZeroTail, true, nil
			}
			return p, frameTruncated, true, nil
		}
		if err := readAt(hdr[:], p); err != nil {
			return 0, 0, true, err
		}
		if zeroFrom(hdr[:]) == 0 {
			z, err := restZero(p + frameHeaderLen)
			if err != nil {
				return 0, 0, true, err
			}
			if z {
				return p, frameZeroTail, true, nil
			}
		}
		if fc != nil {
			fc.xorAt(hdr[:], hdr[:], p)
		}
		n, ok := decodeFrameHeader(hdr[:])
		if !ok {
			return 0, 0, true, corruptAt(path, p, frameBadLenCRC)
		}
		if n > maxFrameBody {
			return 0, 0, true, corruptAt(path, p, frameBadLen)
		}
		end := p + int64(frameLen(int(n)))
		if end > size {
			return p, frameTruncated, true, nil
		}
		rest := int(n) + frameTrailerLen
		if cap(body) < rest {
			body = make([]byte, rest, max(rest, 256))
		}
		body = body[:rest]
		if err := readAt(body, p+frameHeaderLen); err != nil {
			return 0, 0, true, err
		}
		rawZero := zeroFrom(body) == 0
		if fc != nil {
			fc.xorAt(body, body, p+frameHeaderLen)
		}
		b, ok := checkFrameBody(body)
		if !ok {
			if rawZero {
				z, err := restZero(end)
				if err != nil {
					return 0, 0, true, err
				}
				if z {
					return p, frameZeroTail, true, nil
				}
			}
			return 0, 0, true, corruptAt(path, p, frameBadBodyCRC)
		}
		if err := st.apply(b, p); err != nil {
			return 0, 0, true, err
		}
		p = end
	}
}
