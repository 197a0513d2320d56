package blocks

import (
	"time"

	"github.com/blockfs/blockfs/internal/base/rwlock"
)

// Locations returns the live datanodes holding a good replica of blockID,
// best first: verified replicas before unverified ones before suspect ones
// (see verify.go), and within each, datanodes that heartbeat recently
// (within StaleAfter) before stale ones, then fewer failed volumes, then
// lower utilization, then id. Unknown, corrupt, stale-generation and
// invalidating replicas are never returned. The result is empty, not an
// error, for a block with no good replica. See Reader for the form that
// resolves many blocks without copying datanode descriptions.
func (m *Manager) Locations(blockID uint64) []Datanode {
	return m.AppendLocations(nil, blockID)
}

// AppendLocations appends Locations(blockID) to dst and returns the extended
// slice.
func (m *Manager) AppendLocations(dst []Datanode, blockID uint64) []Datanode {
	r := m.Reader()
	var buf [8]uint32
	for _, num := range r.Append(buf[:0], blockID) {
		dst = append(dst, *r.Datanode(num))
	}
	return dst
}

// LocationReader resolves the locations of many blocks for one read
// request (GetBlockLocations). It reads the clock once, when made, rather
// than once per block; it reads each datanode's liveness and sort key once,
// on first sight, so every block of one reply sees one view of the
// datanodes; it picks its lock shard once; and it answers with datanode
// numbers rather than copies of datanode descriptions. A block costs no
// clock read, no allocation and no shared write. Make one per request and
// use it from one goroutine (Reset it to reuse it), never copied: a reader
// kept long sorts by an old view.
type LocationReader struct {
	m           *Manager
	reg         *registry
	staleBefore time.Time
	slot        int
	keys        []nodeKey // by node number: inline[:] or spill
	spill       []nodeKey // kept across Resets, for larger clusters
	inline      [16]nodeKey
}

// nodeKey is one datanode as a reader saw it first.
type nodeKey struct {
	d      *Datanode // nil until seen
	stale  bool      // last heartbeat before StaleAfter
	failed uint32
	util   float64
	byID   uint32 // position among datanodes sorted by id
}

// Reader returns a LocationReader as of now.
func (m *Manager) Reader() *LocationReader {
	r := new(LocationReader)
	r.Reset(m)
	return r
}

// Reset makes r a reader of m as of now, forgetting what it saw before, so
// a caller can keep readers in a pool rather than allocate one per request.
// Reset(nil) only forgets (a pooled reader then holds no snapshot).
func (r *LocationReader) Reset(m *Manager) {
	spill := r.spill
	clear(spill)
	*r = LocationReader{spill: spill}
	r.keys = r.inline[:]
	if m == nil {
		return
	}
	r.m, r.reg, r.slot = m, m.reg.Load(), rwlock.Slot()
	r.staleBefore = m.cfg.Now().Add(-m.cfg.StaleAfter)
	if n := len(r.reg.rank); n > len(r.keys) {
		r.grow(n)
	}
}

// grow makes room for n datanodes' keys, keeping those seen.
func (r *LocationReader) grow(n int) {
	if len(r.spill) < n {
		r.spill = make([]nodeKey, n+n/4)
	}
	if &r.spill[0] != &r.keys[0] {
		copy(r.spill, r.keys)
	}
	r.keys = r.spill
}

// key returns the key of datanode number num, reading its snapshot on
// first sight.
func (r *LocationReader) key(num uint32) *nodeKey {
	if int(num) >= len(r.reg.rank) {
		r.reload()
	}
	k := &r.keys[num]
	if k.d == nil {
		d := r.reg.byNum[num].snap.Load()
		*k = nodeKey{d: d, stale: d.LastHeartbeat.Before(r.staleBefore), failed: d.FailedVolumes, util: d.utilization(), byID: r.reg.rank[num]}
	}
	return k
}

// reload takes up datanodes registered after the reader was made. A
// registration shifts the id positions, so every key seen takes its
// position from the new registry.
func (r *LocationReader) reload() {
	r.reg = r.m.reg.Load()
	if n := len(r.reg.rank); n > len(r.keys) {
		r.grow(n)
	}
	for num := range r.reg.rank {
		r.keys[num].byID = r.reg.rank[num]
	}
}

// Append appends the datanode numbers of the replicas Locations(blockID)
// would return, in the same order, to dst and returns the extended slice.
// A datanode's number is its registration order (0 for the first this
// Manager registered): dense, stable for the Manager's life and never
// reused, so a caller naming each datanode once per reply can index a table
// by it; Datanode turns it into the description the reader saw. Append
// takes only the read lock of blockID's shard and allocates only when dst
// must grow (or a block has more than 8 servable replicas).
func (r *LocationReader) Append(dst []uint32, blockID uint64) []uint32 {
	var buf [8]servable // on the stack
	cs := buf[:0]
	s := r.m.shard(blockID)
	rl := s.mu.RLockAt(r.slot)
	if b := s.blocks.get(blockID); b != nil && b.expected() {
		for _, l := range s.locs(b) {
			if !s.isGood(b, l) {
				continue
			}
			if k := r.key(l.num()); k.d.State == Live {
				cs = append(cs, servable{num: l.num(), rank: uint8(serveRank(l) + adminRank(k.d))})
			}
		}
	}
	rl.RUnlock()
	// Insertion sort: replica lists are short.
	for i := 1; i < len(cs); i++ {
		for j := i; j > 0 && r.better(&cs[j], &cs[j-1]); j-- {
			cs[j], cs[j-1] = cs[j-1], cs[j]
		}
	}
	for i := range cs {
		dst = append(dst, cs[i].num)
	}
	return dst
}

// Datanode returns the description of datanode number num (from Append)
// as the reader first saw it: shared and immutable, never to be modified.
func (r *LocationReader) Datanode(num uint32) *Datanode {
	if int(num) < len(r.keys) {
		if d := r.keys[num].d; d != nil {
			return d
		}
	}
	return r.key(num).d
}

// Datanodes returns the number of datanodes registered when the reader was
// made (or last took up a later registration): a bound on the distinct
// datanodes Append names.
func (r *LocationReader) Datanodes() int { return len(r.reg.byNum) }

// servable is a good replica on a live datanode.
type servable struct {
	num  uint32
	rank uint8 // serveRank
}

// better orders servable replicas: serve rank, fresh before stale, fewer
// failed volumes, lower utilization, then id.
func (r *LocationReader) better(a, b *servable) bool {
	if a.rank != b.rank {
		return a.rank < b.rank
	}
	ka, kb := &r.keys[a.num], &r.keys[b.num]
	switch {
	case ka.stale != kb.stale:
		return kb.stale
	case ka.failed != kb.failed:
		return ka.failed < kb.failed
	case ka.util != kb.util:
		return ka.util < kb.util
	}
	return ka.byID < kb.byID
}

// NeededReplication returns the number of good replicas of blockID on live
// datanodes and the replication the namespace expects (0 if the block is not
// expected).
func (m *Manager) NeededReplication(blockID uint64) (live, expected int) {
	s := m.shard(blockID)
	rl := s.mu.RLock()
	defer rl.RUnlock()
	b := s.blocks.get(blockID)
	if b == nil || !b.expected() {
		return 0, 0
	}
	return s.tally(b).good, int(b.replication)
}

// Held returns how many live datanodes hold a replica of block blockID
// with generation stamp genStamp, neither corrupt nor being deleted, as
// reported, whether or not the namespace expects the block yet: PutFile
// counts the replicas of the block its command is about to create.
func (m *Manager) Held(blockID, genStamp uint64) int {
	s := m.shard(blockID)
	s.mu.Lock()
	var ns []*node
	if b := s.blocks.get(blockID); b != nil && !b.forgotten() {
		for _, l := range s.locs(b) {
			if g, _ := s.stampOf(b, l); g == genStamp && !l.has(locInvalidating|locCorrupt) {
				ns = append(ns, s.node(l))
			}
		}
	}
	s.mu.Unlock()
	held := 0
	for _, n := range ns {
		if n.snap.Load().State == Live {
			held++
		}
	}
	return held
}
