package blocks

import (
	"time"

	"github.com/blockfs/blockfs/internal/base/rwlock"
)

// numShards is the number of block-map shards (a power of two).
const (
	shardBits = 6
	numShards = 1 << shardBits
)

// shardIndex spreads sequential block ids evenly (Fibonacci hashing).
func shardIndex(id uint64) int {
	return int((id * 0x9E3779B97F4A7C15) >> (64 - shardBits))
}

// blockInfo is everything this namenode knows about one block: 48 bytes
// (a size class) with up to three replicas, which it holds itself as
// 4-byte datanode numbers with flags (loc); more go to shard.extra, and a
// replica's stamp and length to shard.stamps when they differ from the
// block's. It was 160 bytes with a 32-byte record per replica (a *node,
// both stamps and five bools) and a first-seen time in every block.
type blockInfo struct {
	id uint64 // the key of the shard's blockTable
	// genStamp is the expected generation stamp; before the namespace
	// names the block, that of its replicas (see updateStamp).
	genStamp uint64
	// length is that of the replicas without an own stamp: the first
	// reported, or the one all of them moved to.
	length      uint64
	inode       uint64
	replication uint16 // SetExpected's, at most 65535 (the namespace's is at most 32)
	state       uint8  // bExpected, bForgotten, bComplete
	n           uint8  // replicas in inline, or spilled (then all in shard.extra)
	inline      [inlineLocs]loc
}

const (
	// bExpected: the namespace says the block exists.
	bExpected uint8 = 1 << iota
	// bForgotten: the namespace deleted it (or unknown past grace):
	// delete every replica.
	bForgotten
	bComplete
)

func (b *blockInfo) expected() bool  { return b.state&bExpected != 0 }
func (b *blockInfo) forgotten() bool { return b.state&bForgotten != 0 }
func (b *blockInfo) complete() bool  { return b.state&bComplete != 0 }

func (b *blockInfo) setState(f uint8, on bool) {
	if on {
		b.state |= f
	} else {
		b.state &^= f
	}
}

// isGood: expected, not invalidating nor corrupt, and of the expected
// generation stamp. Caller holds s.mu (read or write).
func (s *shard) isGood(b *blockInfo, l loc) bool {
	return b.expected() && !l.has(locInvalidating|locCorrupt) && s.sameStamp(b, l)
}

// isBad: corrupt or stale, delete not yet scheduled.
func (s *shard) isBad(b *blockInfo, l loc) bool {
	return b.expected() && !l.has(locInvalidating) && (l.has(locCorrupt) || !s.sameStamp(b, l))
}

// sameStamp reports whether l has b's generation stamp.
func (s *shard) sameStamp(b *blockInfo, l loc) bool {
	if !l.has(locOwnStamp) {
		return true
	}
	g, _ := s.stampOf(b, l)
	return g == b.genStamp
}

// find returns the index of n's replica of b, or -1.
func (s *shard) find(b *blockInfo, n *node) int {
	for i, l := range s.locs(b) {
		if l.num() == n.num {
			return i
		}
	}
	return -1
}

// node returns the datanode holding l.
func (s *shard) node(l loc) *node { return s.m.reg.Load().byNum[l.num()] }

func (s *shard) replica(b *blockInfo, l loc) Replica {
	g, n := s.stampOf(b, l)
	return Replica{BlockID: b.id, GenStamp: g, Length: n, Inode: b.inode}
}

// tally is a block's contribution to its shard's counters.
// tally is what one block adds to its shard's counters: expected, and
// among those complete and safe (complete with a good replica, safe mode's
// count), and its good and bad replicas.
type tally struct{ blocks, complete, safe, good, bad int }

func (s *shard) tally(b *blockInfo) tally {
	if !b.expected() {
		return tally{}
	}
	t := tally{blocks: 1}
	for _, l := range s.locs(b) {
		switch {
		case s.isGood(b, l):
			t.good++
		case s.isBad(b, l):
			t.bad++
		}
	}
	if b.complete() {
		t.complete = 1
		if t.good > 0 {
			t.safe = 1
		}
	}
	return t
}

// pending is a scheduled replication.
type pending struct {
	expiry  time.Time
	source  *node // nil for expectOnly
	targets []*node
	// expectOnly: the targets are replicas a writer left being written
	// (ExpectReplicas), not a replication this namenode ordered; they are
	// counted as on their way, never taken as evidence (writtenHere).
	expectOnly bool
}

// outstanding counts targets that are live and do not yet hold a good
// replica of b. Caller holds s.mu.
func (s *shard) outstanding(p *pending, b *blockInfo) int {
	k := 0
	for _, t := range p.targets {
		if t.snap.Load().State != Live {
			continue
		}
		if i := s.find(b, t); i >= 0 && s.isGood(b, s.locs(b)[i]) {
			continue
		}
		k++
	}
	return k
}

// shard is one slice of the block map with its work queues. Every field is
// guarded by mu.
type shard struct {
	mu     rwlock.Mutex // readers spread over cache lines: Locations is hot
	m      *Manager     // for its registry: replicas name datanodes by number
	blocks blockTable
	// extra: the replicas of blocks with more than inlineLocs (replica.go).
	extra map[uint64][]loc
	// stamps: replicas whose generation stamp or length differ from their
	// block's (replica.go).
	stamps  map[stampKey]stamp
	under   map[uint64]struct{} // complete, good+in-flight < expected, unscheduled
	over    map[uint64]struct{} // complete, good > expected
	corrupt map[uint64]struct{} // has bad (corrupt or stale) replicas
	// unknown: blocks reported, not expected, not forgotten, with the unix
	// nanoseconds of their first report.
	unknown map[uint64]int64
	pending map[uint64]*pending
	// expect: replicas a writer left being written, for blocks not yet
	// complete (ExpectReplicas); taken into pending once they are.
	expect map[uint64]*pending
	// writing: the datanode ids of each block's recorded pipeline
	// (pipeline.go); dropped when the block is forgotten, or complete and
	// every live member holds a verified replica.
	writing map[uint64][]string
	// suspect: blocks with a suspect replica; verifying: blocks with a
	// Verify outstanding, by the time it is given up (verify.go).
	suspect   map[uint64]struct{}
	verifying map[uint64]time.Time
	// misplaced: complete blocks with their replication whose good
	// replicas all sit in one rack of a cluster that has more
	// (mis-replicated, in HDFS's word); ComputeWork adds a copy in
	// another rack, and the excess deletion then keeps the spread.
	misplaced map[uint64]struct{}
	// moves: the balancer's open moves, by block (move.go).
	moves map[uint64]*move
	// counters, kept by settle
	nBlocks, nComplete, nSafe, nGood, nBad int
	// peaks are the maps' sizes for shrink (shrink.go), kept by settle.
	peaks peaks
	_     [64]byte // keep shards' locks on separate cache lines
}

func (s *shard) init(m *Manager) {
	s.m = m
	s.extra = make(map[uint64][]loc)
	s.stamps = make(map[stampKey]stamp)
	s.under = make(map[uint64]struct{})
	s.over = make(map[uint64]struct{})
	s.corrupt = make(map[uint64]struct{})
	s.unknown = make(map[uint64]int64)
	s.pending = make(map[uint64]*pending)
	s.expect = make(map[uint64]*pending)
	s.writing = make(map[uint64][]string)
	s.suspect = make(map[uint64]struct{})
	s.verifying = make(map[uint64]time.Time)
	s.misplaced = make(map[uint64]struct{})
	s.moves = make(map[uint64]*move)
}

func (s *shard) dropPending(id uint64, p *pending) {
	delete(s.pending, id)
	if p.source != nil {
		p.source.streams.Add(-1)
	}
}

// settle brings the counters and queues in line with b after a mutation;
// before is s.tally(b) taken before it. It deletes b from the map once b
// is neither expected nor held anywhere, and notes the maps' sizes for
// shrink. Caller holds s.mu.
func (s *shard) settle(id uint64, b *blockInfo, before tally) {
	s.settle1(id, b, before)
	s.notePeaks()
}

func (s *shard) settle1(id uint64, b *blockInfo, before tally) {
	after := s.tally(b)
	s.nBlocks += after.blocks - before.blocks
	s.nComplete += after.complete - before.complete
	s.nSafe += after.safe - before.safe
	s.nGood += after.good - before.good
	s.nBad += after.bad - before.bad

	if after.bad > 0 {
		s.corrupt[id] = struct{}{}
	} else {
		delete(s.corrupt, id)
	}
	if _, ok := s.writing[id]; ok && (!b.expected() || b.complete() && s.pipelineDone(b)) {
		delete(s.writing, id)
	}
	if !b.expected() || !b.complete() {
		delete(s.under, id)
		delete(s.over, id)
		delete(s.misplaced, id)
		if p := s.pending[id]; p != nil {
			s.dropPending(id, p)
		}
		if b.expected() {
			delete(s.unknown, id)
			return
		}
		if s.numLocs(b) == 0 {
			s.blocks.del(id)
			delete(s.unknown, id)
		} else if b.forgotten() {
			delete(s.unknown, id)
		} else if _, ok := s.unknown[id]; !ok {
			s.unknown[id] = 0 // addReplica notes the time; 0: none known
		}
		return
	}
	delete(s.unknown, id)
	need := int(b.replication)
	inflight := 0
	s.takeExpected(id, b)
	if p := s.pending[id]; p != nil {
		if inflight = s.outstanding(p, b); inflight == 0 {
			s.dropPending(id, p)
		}
	}
	// Only replicas on live normal datanodes count (admin.go).
	c := s.count(b)
	if c.normal+inflight < c.want(need) {
		s.under[id] = struct{}{}
	} else {
		delete(s.under, id)
	}
	if c.normal > need {
		s.over[id] = struct{}{}
	} else {
		delete(s.over, id)
	}
	if need > 1 && c.normal >= need && s.oneRack(b) {
		s.misplaced[id] = struct{}{}
	} else {
		delete(s.misplaced, id)
	}
}

// oneRack reports whether b's good replicas all sit in one rack while the
// cluster has more than one. Caller holds s.mu.
func (s *shard) oneRack(b *blockInfo) bool {
	idx := s.m.place.Load()
	if len(idx.racks) < 2 {
		return false
	}
	rack := int32(-1)
	for _, l := range s.locs(b) {
		if !s.counted(b, l) {
			continue
		}
		switch r := idx.rack(s.node(l)); {
		case r < 0:
			return false // a node newer than the index: decide next time
		case rack < 0:
			rack = r
		case r != rack:
			return false
		}
	}
	return rack >= 0
}

// addReplica records that n holds r; received is true for an incremental
// report (the datanode just stored it), false for a full report. Caller
// holds n.mu and s.mu.
func (s *shard) addReplica(n *node, r Replica, now time.Time, received bool) {
	id := r.BlockID
	b := s.blocks.get(id)
	if b == nil {
		b = &blockInfo{id: id, genStamp: r.GenStamp, length: r.Length}
		s.blocks.put(b)
		s.unknown[id] = now.UnixNano() // settle keeps it unless expected
	}
	before := s.tally(b)
	i := s.find(b, n)
	if i < 0 {
		i = s.addLoc(b, newLoc(n.num))
		s.updateStamp(b, i, r.GenStamp, r.Length)
	} else {
		l := &s.locs(b)[i]
		if g, _ := s.stampOf(b, *l); g != r.GenStamp {
			// A different replica than the one reported corrupt, suspect
			// or verified.
			l.set(locCorrupt|locVerified|locSuspect|locVerifying, false)
		}
		s.updateStamp(b, i, r.GenStamp, r.Length)
	}
	l := &s.locs(b)[i]
	if received && !l.has(locVerified) && s.writtenHere(id, b, *l) {
		l.set(locVerified, true)
	}
	if b.forgotten() {
		l.set(locInvalidating, true)
	}
	if l.has(locInvalidating) {
		// (Re)queue: the delete may have been lost, or not yet sent.
		n.queueInvalidate(s.replica(b, *l))
	}
	s.settle(id, b, before)
}

// removeReplica records that n no longer holds block id. Caller holds n.mu
// and s.mu.
func (s *shard) removeReplica(n *node, id uint64) {
	b := s.blocks.get(id)
	if b == nil {
		return
	}
	i := s.find(b, n)
	if i < 0 {
		return
	}
	before := s.tally(b)
	s.removeLoc(b, i)
	s.adopt(b)
	s.settle(id, b, before)
}

// invalidate schedules the deletion of replica *l of b. Caller holds s.mu.
func (s *shard) invalidate(b *blockInfo, l *loc) {
	if l.has(locInvalidating) {
		return
	}
	l.set(locInvalidating, true)
	s.node(*l).queueInvalidate(s.replica(b, *l))
}
