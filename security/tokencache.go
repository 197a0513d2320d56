package security

import (
	"sync/atomic"
	"time"

	"github.com/blockfs/blockfs/internal/base/rwlock"
)

// lruCache is the cache behind both token caches: a fixed number of
// shards, picked by the low bits of a seeded 64-bit hash, each a
// count-bounded LRU under its own lock. The full hash is the key, so a
// lookup hashes nothing twice and never allocates; values carry their real
// key and callers compare it, which turns a hash collision into a miss and
// nothing worse.
//
// A hit takes only its shard's read lock, so hits never wait for each
// other (KUDU-3210: no lock shared across shards, none exclusive on the
// hot path). It moves its entry to the front of the LRU, under the write
// lock, at most once per promoteEvery: recency is kept to that grain. An
// insert into a full shard drops the shard's least recently used entry in
// O(1); nothing ever scans a shard.
//
// A shard keeps its entries in one slice of slots linked by index, and a
// map from hash to slot that holds no pointers: an insert allocates
// nothing once the shard has filled (it reuses the slot it evicts), and the
// garbage collector sees one slice per shard, not a list node and an item
// per entry. On a cold cache, where every request misses, that is most of
// what a miss costs beyond the signature it cannot avoid.
type lruCache[V comparable] struct {
	shards []lruShard[V]
	mask   uint64
}

// promoteEvery is how often, at most, a hit moves its entry to the front.
const promoteEvery = int64(time.Millisecond)

// none ends a slot list.
const none = -1

// lruSlot is one entry. promoted (unix nanos of the last move to the
// front) is read and written atomically: hits update it under the read
// lock.
type lruSlot[V comparable] struct {
	h          uint64
	v          V
	prev, next int32 // towards the front and the back; free slots chain by next
	promoted   int64
}

// lruShard's lock spreads readers over cache lines (rwlock.Mutex): every
// reader of one hot key (one user reading one file from many goroutines)
// comes to the same shard, and a sync.RWMutex's reader count is one word
// they would all write.
type lruShard[V comparable] struct {
	mu         rwlock.Mutex
	index      map[uint64]int32 // hash -> slot
	slots      []lruSlot[V]     // grows to size, then is reused
	size       int
	head, tail int32    // most and least recently used, none when empty
	free       int32    // removed slots, chained by next
	_          [56]byte // keep the next shard's first lock off this one's line
}

// newLRUCache returns a cache of at most size entries in at most
// maxShards shards (a power of two; every shard holds size/shards).
func newLRUCache[V comparable](size, maxShards int) *lruCache[V] {
	n := shardCount(size, maxShards)
	c := &lruCache[V]{shards: make([]lruShard[V], n), mask: uint64(n - 1)}
	for i := range c.shards {
		sh := &c.shards[i]
		sh.index, sh.size = map[uint64]int32{}, size/n // size/n >= 1 by shardCount
		sh.head, sh.tail, sh.free = none, none, none
	}
	return c
}

// shardCount is the largest power of two <= min(size, max), at least 1, so
// shards*(size/shards) <= size.
func shardCount(size, max int) int {
	n := 1
	for n*2 <= size && n*2 <= max {
		n *= 2
	}
	return n
}

func (c *lruCache[V]) shard(h uint64) *lruShard[V] { return &c.shards[h&c.mask] }

// get returns the value under h; now (unix nanos) decides whether the hit
// moves it to the front.
func (c *lruCache[V]) get(h uint64, now int64) (V, bool) {
	sh := c.shard(h)
	rl := sh.mu.RLock()
	i, ok := sh.index[h]
	var v V
	due := false
	if ok {
		s := &sh.slots[i]
		v = s.v
		if now-atomic.LoadInt64(&s.promoted) >= promoteEvery {
			atomic.StoreInt64(&s.promoted, now)
			due = true
		}
	}
	rl.RUnlock()
	if due {
		sh.mu.Lock()
		if j, ok := sh.index[h]; ok && sh.slots[j].v == v {
			sh.unlink(j)
			sh.pushFront(j)
		}
		sh.mu.Unlock()
	}
	return v, ok
}

// put stores v under h unless keep(old, v) says the value already there
// should stay, in which case it returns that one. evicted reports whether
// the shard dropped its least recently used entry to make room.
func (c *lruCache[V]) put(h uint64, v V, now int64, keep func(old, v V) bool) (stored V, evicted bool) {
	sh := c.shard(h)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	i, ok := sh.index[h]
	switch {
	case ok && keep != nil && keep(sh.slots[i].v, v):
		return sh.slots[i].v, false
	case ok:
		sh.unlink(i)
	case sh.free != none:
		i, sh.free = sh.free, sh.slots[sh.free].next
	case len(sh.slots) < sh.size:
		i = int32(len(sh.slots))
		sh.slots = append(sh.slots, lruSlot[V]{})
	default:
		i = sh.tail
		sh.unlink(i)
		delete(sh.index, sh.slots[i].h)
		evicted = true
	}
	s := &sh.slots[i]
	s.h, s.v = h, v
	atomic.StoreInt64(&s.promoted, now)
	sh.pushFront(i)
	sh.index[h] = i
	return v, evicted
}

// remove drops h if it still holds v (and not a newer value).
func (c *lruCache[V]) remove(h uint64, v V) {
	sh := c.shard(h)
	sh.mu.Lock()
	if i, ok := sh.index[h]; ok && sh.slots[i].v == v {
		sh.unlink(i)
		delete(sh.index, h)
		var zero V
		sh.slots[i].v, sh.slots[i].next, sh.free = zero, sh.free, i // let the GC have v
	}
	sh.mu.Unlock()
}

// len returns the number of entries, all shards.
func (c *lruCache[V]) len() int {
	n := 0
	for i := range c.shards {
		sh := &c.shards[i]
		rl := sh.mu.RLock()
		n += len(sh.index)
		rl.RUnlock()
	}
	return n
}

// peek returns the value under h without touching the order.
func (sh *lruShard[V]) peek(h uint64) (V, bool) {
	rl := sh.mu.RLock()
	defer rl.RUnlock()
	i, ok := sh.index[h]
	if !ok {
		var zero V
		return zero, false
	}
	return sh.slots[i].v, true
}

// unlink takes slot i out of the recency list (write lock held).
func (sh *lruShard[V]) unlink(i int32) {
	s := &sh.slots[i]
	if s.prev != none {
		sh.slots[s.prev].next = s.next
	} else {
		sh.head = s.next
	}
	if s.next != none {
		sh.slots[s.next].prev = s.prev
	} else {
		sh.tail = s.prev
	}
	s.prev, s.next = none, none
}

// pushFront makes slot i the most recently used (write lock held).
func (sh *lruShard[V]) pushFront(i int32) {
	s := &sh.slots[i]
	s.prev, s.next = none, sh.head
	if sh.head != none {
		sh.slots[sh.head].prev = i
	}
	sh.head = i
	if sh.tail == none {
		sh.tail = i
	}
}
