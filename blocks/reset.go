package blocks

import (
	"runtime"
	"slices"
)

// ExpectedBlock is what the namespace says about one block: SetExpected's
// arguments.
type ExpectedBlock struct {
	ID, GenStamp, Inode uint64
	Replication         uint32
	Complete            bool
}

// resetBatch is how many blocks a Reset applies per pass over the shards.
const resetBatch = 4096

// Reset replaces the set of blocks a Manager expects with another, as a
// namenode does when it installs a snapshot: the blocks of the old
// namespace that the new one lacks must be forgotten, not kept forever.
// Start one with BeginReset, Add every block of the new namespace, then
// Finish. While a Reset runs, nothing else may call SetExpected or Forget
// (the FSM holds its lock); reports, reads and work go on.
type Reset struct {
	m     *Manager
	batch []ExpectedBlock
	// track is false when nothing was expected at BeginReset (a namenode
	// restoring its snapshot at startup): every expected block is then one
	// the Reset added, nothing is to be forgotten, and the ids added need
	// not be kept nor the shards scanned.
	track bool
	seen  [numShards][]uint64
}

// BeginReset starts replacing the expected set.
func (m *Manager) BeginReset() *Reset {
	r := &Reset{m: m, batch: make([]ExpectedBlock, 0, resetBatch)}
	for si := range m.shards {
		s := &m.shards[si]
		rl := s.mu.RLock()
		r.track = r.track || s.nBlocks > 0
		rl.RUnlock()
	}
	return r
}

// Expect says that about n blocks are coming (the new namespace's count),
// so that each shard makes room for its share at once instead of doubling
// its table again and again as they arrive; at startup (nothing expected
// yet) each shard's under-replicated queue, which every complete block
// enters until its datanodes report, is sized for them too. It is a hint:
// more or fewer blocks may come.
func (r *Reset) Expect(n int) {
	per := n/numShards + n/numShards/8 + 16 // Fibonacci hashing spreads ids evenly; an eighth for the rest
	for si := range r.m.shards {
		s := &r.m.shards[si]
		s.mu.Lock()
		s.blocks.reserve(max(s.blocks.len(), per)) // in use, most of the new blocks are there already
		if !r.track && len(s.under) == 0 {
			s.under = make(map[uint64]struct{}, per)
		}
		s.mu.Unlock()
	}
}

// Add says the new namespace has block e, as SetExpected does. Blocks are
// applied in batches, each shard's lock taken once per batch.
func (r *Reset) Add(e ExpectedBlock) {
	r.batch = append(r.batch, e)
	if len(r.batch) == resetBatch {
		r.flush()
	}
}

func (r *Reset) flush() {
	bs := r.batch
	// setExpected touches only its shard, so the shards are split among
	// the CPUs: a restart at a million blocks spends most of its block-map
	// time here.
	forEachShardPar(r.m, len(bs), func(i int) uint64 { return bs[i].ID }, func(s *shard, i int) {
		s.setExpected(bs[i])
	}, min(runtime.GOMAXPROCS(0), 4))
	if r.track {
		for i := range bs {
			si := shardIndex(bs[i].ID)
			r.seen[si] = append(r.seen[si], bs[i].ID)
		}
	}
	r.batch = bs[:0]
}

// Finish applies the last batch, then forgets every block that was expected
// but not added: its replicas are scheduled for deletion (sent by the
// leader's ComputeWork) and it leaves every queue. It returns how many
// blocks it forgot. The Reset must not be used afterwards.
func (r *Reset) Finish() (forgotten int) {
	r.flush()
	if !r.track {
		return 0
	}
	for si := range r.m.shards {
		seen := r.seen[si]
		slices.Sort(seen)
		s := &r.m.shards[si]
		s.mu.Lock()
		for _, id := range s.blocks.ids(nil) { // forget may delete
			b := s.blocks.get(id)
			if _, ok := slices.BinarySearch(seen, id); b != nil && b.expected() && !ok {
				s.forget(id, b)
				forgotten++
			}
		}
		s.shrink()
		s.mu.Unlock()
		r.seen[si] = nil
	}
	return forgotten
}
