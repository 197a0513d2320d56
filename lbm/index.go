package lbm

import "sync"

// blockEntry locates a live block. Stored by value in maps (no per-block
// heap object).
type blockEntry struct {
	c      *container
	off    int64
	length int64
	inode  uint64
	gen    uint64
	ts     int64 // µs since epoch
	crc    uint32
	bpc    uint32 // bytes per checksum; 0 = old format (no chunk table)
}

const indexShards = 64

// index is the sharded block map: id -> entry. Reads take one shard's read
// lock for a map lookup; there is no store-wide lock on the read path.
type index struct{ shards [indexShards]shard }

type shard struct {
	mu      sync.RWMutex
	m       map[uint64]blockEntry
	pending map[uint64]struct{} // ids reserved by in-flight Puts
}

func newIndex() *index {
	x := &index{}
	for i := range x.shards {
		x.shards[i].m = map[uint64]blockEntry{}
		x.shards[i].pending = map[uint64]struct{}{}
	}
	return x
}

func (x *index) shard(id uint64) *shard {
	return &x.shards[(id*0x9E3779B97F4A7C15)>>58]
}

func (x *index) get(id uint64) (blockEntry, bool) {
	s := x.shard(id)
	s.mu.RLock()
	e, ok := s.m[id]
	s.mu.RUnlock()
	return e, ok
}

// reserve marks id as being written; false if it exists or is reserved.
func (x *index) reserve(id uint64) bool {
	s := x.shard(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[id]; ok {
		return false
	}
	if _, ok := s.pending[id]; ok {
		return false
	}
	s.pending[id] = struct{}{}
	return true
}

func (x *index) unreserve(id uint64) {
	s := x.shard(id)
	s.mu.Lock()
	delete(s.pending, id)
	s.mu.Unlock()
}

// reserveReplace marks id as being written by a writer that may replace
// a live version with a generation stamp below gen. It fails if another
// writer holds id (cur 0) or the live version's generation stamp is gen
// or more (cur is that generation stamp, at least 1).
func (x *index) reserveReplace(id, gen uint64) (cur uint64, ok bool) {
	s := x.shard(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.pending[id]; ok {
		return 0, false
	}
	if e, ok := s.m[id]; ok && e.gen >= gen {
		return max(e.gen, 1), false
	}
	s.pending[id] = struct{}{}
	return 0, true
}

// publish inserts a reserved id, and returns the entry it replaced, if
// any (a Replace commit).
func (x *index) publish(id uint64, e blockEntry) (old blockEntry, replaced bool) {
	s := x.shard(id)
	s.mu.Lock()
	delete(s.pending, id)
	old, replaced = s.m[id]
	s.m[id] = e
	s.mu.Unlock()
	return old, replaced
}

// insert adds id unless present; false on a duplicate.
func (x *index) insert(id uint64, e blockEntry) bool {
	s := x.shard(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[id]; ok {
		return false
	}
	s.m[id] = e
	return true
}

func (x *index) remove(id uint64) (blockEntry, bool) {
	s := x.shard(id)
	s.mu.Lock()
	e, ok := s.m[id]
	if ok {
		delete(s.m, id)
	}
	s.mu.Unlock()
	return e, ok
}

// removeIf removes id only if it still points into container c, and
// reports whether it did.
func (x *index) removeIf(id uint64, c *container) bool {
	s := x.shard(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.m[id]; ok && e.c == c {
		delete(s.m, id)
		return true
	}
	return false
}
