package blocks

import (
	"time"

	"github.com/blockfs/blockfs/internal/rwlock"
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

// loc is one datanode's replica of a block.
type loc struct {
	n        *node
	genStamp uint64
	length   uint64
	// corrupt: reported corrupt by a client or datanode.
	corrupt bool
	// invalidating: a delete was scheduled; uncounted and unserved until
	// the datanode reports the replica gone.
	invalidating bool
	// verified: this namenode has evidence the replica holds the block's
	// bytes (see verify.go); unverified copies are deleted first and the
	// last verified one never is.
	verified bool
	// suspect: a client reported it bad; still good until its datanode
	// re-verifies it (verified again) or reports it corrupt.
	suspect bool
	// verifying: a Verify command was queued for it and not yet answered.
	verifying bool
}

// blockInfo is everything this namenode knows about one block.
// At 3 replicas it is 160 bytes (a size class): a time.Time here (24
// bytes) put it in the 176-byte class.
type blockInfo struct {
	id          uint64 // the key of the shard's blockTable
	expected    bool   // the namespace says the block exists
	forgotten   bool   // the namespace deleted it (or unknown past grace): delete every replica
	complete    bool
	replication uint32
	genStamp    uint64
	inode       uint64
	firstSeen   int64 // unix nanoseconds of the first report while unknown; 0 if the namespace named it first
	locs        []loc // starts as inline[:0]: usually no separate allocation
	inline      [3]loc
}

func newBlockInfo(id uint64, firstSeen int64) *blockInfo {
	b := &blockInfo{id: id, firstSeen: firstSeen}
	b.locs = b.inline[:0]
	return b
}

func (b *blockInfo) isGood(l *loc) bool {
	return b.expected && !l.invalidating && !l.corrupt && l.genStamp == b.genStamp
}

// isBad: corrupt or stale, delete not yet scheduled.
func (b *blockInfo) isBad(l *loc) bool {
	return b.expected && !l.invalidating && (l.corrupt || l.genStamp != b.genStamp)
}

func (b *blockInfo) find(n *node) int {
	for i := range b.locs {
		if b.locs[i].n == n {
			return i
		}
	}
	return -1
}

func (b *blockInfo) replica(id uint64, l *loc) Replica {
	return Replica{BlockID: id, GenStamp: l.genStamp, Length: l.length, Inode: b.inode}
}

// tally is a block's contribution to its shard's counters.
type tally struct{ blocks, good, bad int }

func (b *blockInfo) tally() tally {
	if !b.expected {
		return tally{}
	}
	t := tally{blocks: 1}
	for i := range b.locs {
		l := &b.locs[i]
		switch {
		case b.isGood(l):
			t.good++
		case b.isBad(l):
			t.bad++
		}
	}
	return t
}

// pending is a scheduled replication.
type pending struct {
	expiry  time.Time
	source  *node
	targets []*node
}

// outstanding counts targets that are live and do not yet hold a good replica.
func (p *pending) outstanding(b *blockInfo) int {
	k := 0
	for _, t := range p.targets {
		if t.snap.Load().State != Live {
			continue
		}
		if i := b.find(t); i >= 0 && b.isGood(&b.locs[i]) {
			continue
		}
		k++
	}
	return k
}

// shard is one slice of the block map with its work queues. Every field is
// guarded by mu.
type shard struct {
	mu      rwlock.Mutex // readers spread over cache lines: Locations is hot
	blocks  blockTable
	under   map[uint64]struct{} // complete, good+in-flight < expected, unscheduled
	over    map[uint64]struct{} // complete, good > expected
	corrupt map[uint64]struct{} // has bad (corrupt or stale) replicas
	unknown map[uint64]struct{} // reported, not expected, not forgotten
	pending map[uint64]*pending
	// writing: the pipeline chosen for each block under construction
	// (pipeline.go); dropped when the block completes or is forgotten.
	writing map[uint64][]*node
	// suspect: blocks with a suspect replica; verifying: blocks with a
	// Verify outstanding, by the time it is given up (verify.go).
	suspect   map[uint64]struct{}
	verifying map[uint64]time.Time
	// counters, kept by settle
	nBlocks, nGood, nBad int
	// peaks are the maps' sizes for shrink (shrink.go), kept by settle.
	peaks peaks
	_     [64]byte // keep shards' locks on separate cache lines
}

func (s *shard) init() {
	s.under = make(map[uint64]struct{})
	s.over = make(map[uint64]struct{})
	s.corrupt = make(map[uint64]struct{})
	s.unknown = make(map[uint64]struct{})
	s.pending = make(map[uint64]*pending)
	s.writing = make(map[uint64][]*node)
	s.suspect = make(map[uint64]struct{})
	s.verifying = make(map[uint64]time.Time)
}

func (s *shard) dropPending(id uint64, p *pending) {
	delete(s.pending, id)
	p.source.streams.Add(-1)
}

// settle brings the counters and queues in line with b after a mutation;
// before is b.tally() taken before it. It deletes b from the map once b is
// neither expected nor held anywhere, and notes the maps' sizes for
// shrink. Caller holds s.mu.
func (s *shard) settle(id uint64, b *blockInfo, before tally) {
	s.settle1(id, b, before)
	s.notePeaks()
}

func (s *shard) settle1(id uint64, b *blockInfo, before tally) {
	after := b.tally()
	s.nBlocks += after.blocks - before.blocks
	s.nGood += after.good - before.good
	s.nBad += after.bad - before.bad

	if after.bad > 0 {
		s.corrupt[id] = struct{}{}
	} else {
		delete(s.corrupt, id)
	}
	if !b.expected || b.complete {
		delete(s.writing, id)
	}
	if !b.expected || !b.complete {
		delete(s.under, id)
		delete(s.over, id)
		if p := s.pending[id]; p != nil {
			s.dropPending(id, p)
		}
		if b.expected {
			delete(s.unknown, id)
			return
		}
		if len(b.locs) == 0 {
			s.blocks.del(id)
			delete(s.unknown, id)
		} else if b.forgotten {
			delete(s.unknown, id)
		} else {
			s.unknown[id] = struct{}{}
		}
		return
	}
	delete(s.unknown, id)
	need := int(b.replication)
	inflight := 0
	if p := s.pending[id]; p != nil {
		if inflight = p.outstanding(b); inflight == 0 {
			s.dropPending(id, p)
		}
	}
	if after.good+inflight < need {
		s.under[id] = struct{}{}
	} else {
		delete(s.under, id)
	}
	if after.good > need {
		s.over[id] = struct{}{}
	} else {
		delete(s.over, id)
	}
}

// addReplica records that n holds r; received is true for an incremental
// report (the datanode just stored it), false for a full report. Caller
// holds n.mu and s.mu.
func (s *shard) addReplica(n *node, r Replica, now time.Time, received bool) {
	id := r.BlockID
	b := s.blocks.get(id)
	if b == nil {
		b = newBlockInfo(id, now.UnixNano())
		s.blocks.put(b)
	}
	before := b.tally()
	i := b.find(n)
	if i < 0 {
		b.locs = append(b.locs, loc{n: n, genStamp: r.GenStamp, length: r.Length})
		i = len(b.locs) - 1
	} else {
		l := &b.locs[i]
		if l.genStamp != r.GenStamp {
			// A different replica than the one reported corrupt, suspect
			// or verified.
			l.corrupt, l.verified, l.suspect, l.verifying = false, false, false, false
		}
		l.genStamp, l.length = r.GenStamp, r.Length
	}
	l := &b.locs[i]
	if received && !l.verified && s.writtenHere(id, b, l) {
		l.verified = true
	}
	if b.forgotten {
		l.invalidating = true
	}
	if l.invalidating {
		// (Re)queue: the delete may have been lost, or not yet sent.
		n.queueInvalidate(b.replica(id, l))
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
	i := b.find(n)
	if i < 0 {
		return
	}
	before := b.tally()
	last := len(b.locs) - 1
	b.locs[i] = b.locs[last]
	b.locs[last] = loc{}
	b.locs = b.locs[:last]
	s.settle(id, b, before)
}

// invalidate schedules the deletion of l. Caller holds s.mu.
func (b *blockInfo) invalidate(id uint64, l *loc) {
	if l.invalidating {
		return
	}
	l.invalidating = true
	l.n.queueInvalidate(b.replica(id, l))
}
