package namespace

import (
	"math/bits"
	"sync/atomic"
	"unsafe"
)

// preTable holds a view's pre-images: for each inode changed while the
// view is open, a copy of it as the view saw it. One writer adds at a time
// (touch, under the tree's write lock) while the encoder reads, neither
// waiting for the other: each shard is an open-addressed table of atomic
// slots, and a shard that fills is rebuilt larger by the writer and
// published with one atomic store, so a reader sees either the old table
// with every entry added before the rebuild, or the new one. Entries are
// never removed or changed. Sharding keeps a rebuild's cost, paid by a
// writer under the write lock, to a 64th of the entries.
type preTable struct {
	shards [preShards]atomic.Pointer[preSlots]
	counts [preShards]int // entries per shard: the writer's only
}

const (
	preShards    = 64
	preShardBits = 6
	preMinSlots  = 8
)

// preSlots is one shard's table: a power-of-two number of slots, at most
// half of them used.
type preSlots struct {
	slots []atomic.Pointer[preEntry]
	mask  uint64
	shift uint // a hash's slot: the bits below the shard's, (h<<preShardBits)>>shift
}

// preEntry is an inode and its pre-image, in one allocation.
type preEntry struct {
	key *inode
	pre inode
}

// preHash spreads an inode's address (the garbage collector does not move
// heap objects, and an inode in a view's reach stays alive while the view
// is open) over the shards and slots.
func preHash(n *inode) uint64 {
	return uint64(uintptr(unsafe.Pointer(n))>>4) * 0x9e3779b97f4a7c15
}

// get returns the pre-image of n, or nil if n has none. Safe beside add.
func (p *preTable) get(n *inode) *inode {
	h := preHash(n)
	t := p.shards[h>>(64-preShardBits)].Load()
	if t == nil {
		return nil
	}
	for i := t.home(h); ; i = (i + 1) & t.mask {
		e := t.slots[i].Load()
		if e == nil {
			return nil
		}
		if e.key == n {
			return &e.pre
		}
	}
}

// add keeps a copy of n as it is now as n's pre-image. n must have none
// yet; one writer at a time (the caller holds the tree's write lock).
func (p *preTable) add(n *inode) {
	h := preHash(n)
	s := h >> (64 - preShardBits)
	e := &preEntry{key: n, pre: *n}
	t := p.shards[s].Load()
	if t == nil || 2*(p.counts[s]+1) > len(t.slots) {
		t = t.grown()
		t.insert(h, e)
		p.shards[s].Store(t) // publishes the rebuilt table with e in it
	} else {
		t.insert(h, e)
	}
	p.counts[s]++
}

// grown returns a table of twice t's slots (preMinSlots for nil) holding
// t's entries. Only the writer calls it; t is not changed.
func (t *preSlots) grown() *preSlots {
	size := preMinSlots
	if t != nil {
		size = 2 * len(t.slots)
	}
	g := &preSlots{slots: make([]atomic.Pointer[preEntry], size), mask: uint64(size - 1), shift: uint(64 - bits.TrailingZeros(uint(size)))}
	if t != nil {
		for i := range t.slots {
			if e := t.slots[i].Load(); e != nil {
				g.insert(preHash(e.key), e)
			}
		}
	}
	return g
}

// home is the first slot of hash h's probe sequence.
func (t *preSlots) home(h uint64) uint64 { return (h << preShardBits) >> t.shift }

// insert puts e in the first free slot of its probe sequence.
func (t *preSlots) insert(h uint64, e *preEntry) {
	for i := t.home(h); ; i = (i + 1) & t.mask {
		if t.slots[i].Load() == nil {
			t.slots[i].Store(e)
			return
		}
	}
}

// reset drops every pre-image. The writer's; no encoder may be reading.
func (p *preTable) reset() {
	for i := range p.shards {
		p.shards[i].Store(nil)
		p.counts[i] = 0
	}
}
