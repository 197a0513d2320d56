package lbm

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/blockfs/blockfs/errs"
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
	s.group = newGroupCommit(s, s.metrics.groupBlocks)
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
