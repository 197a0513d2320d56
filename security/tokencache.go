package security

import (
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/blockfs/blockfs/internal/rwlock"
)

// lruCache is the cache behind both token caches: a fixed number of
// shards, picked by the low bits of a seeded 64-bit hash, each a
// count-bounded LRU (hashicorp/golang-lru's simplelru) under its own
// RWMutex. The full hash is the LRU key, so a lookup hashes nothing twice
// and never allocates; values carry their real key and callers compare it,
// which turns a hash collision into a miss and nothing worse.
//
// A hit takes only its shard's read lock, so hits never wait for each
// other (KUDU-3210: no lock shared across shards, none exclusive on the
// hot path). It moves its entry to the front of the LRU, under the write
// lock, at most once per promoteEvery: recency is kept to that grain. An
// insert into a full shard drops the shard's least recently used entry in
// O(1); nothing ever scans a shard.
type lruCache[V comparable] struct {
	shards []lruShard[V]
	mask   uint64
}

// promoteEvery is how often, at most, a hit moves its entry to the front.
const promoteEvery = int64(time.Millisecond)

type lruItem[V comparable] struct {
	v        V
	promoted atomic.Int64 // unix nanos of the last move to the front
}

// lruShard's lock spreads readers over cache lines (rwlock.Mutex): every
// reader of one hot key (one user reading one file from many goroutines)
// comes to the same shard, and a sync.RWMutex's reader count is one word
// they would all write.
type lruShard[V comparable] struct {
	mu  rwlock.Mutex
	lru *simplelru.LRU[uint64, *lruItem[V]]
	_   [56]byte // keep the next shard's first lock off this one's line
}

// newLRUCache returns a cache of at most size entries in at most
// maxShards shards (a power of two; every shard holds size/shards).
func newLRUCache[V comparable](size, maxShards int) *lruCache[V] {
	n := shardCount(size, maxShards)
	c := &lruCache[V]{shards: make([]lruShard[V], n), mask: uint64(n - 1)}
	for i := range c.shards {
		l, err := simplelru.NewLRU[uint64, *lruItem[V]](size/n, nil)
		if err != nil {
			panic(err) // size/n >= 1 by shardCount
		}
		c.shards[i].lru = l
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
	it, ok := sh.lru.Peek(h)
	rl.RUnlock()
	if !ok {
		var zero V
		return zero, false
	}
	if now-it.promoted.Load() >= promoteEvery {
		it.promoted.Store(now)
		sh.mu.Lock()
		if cur, ok := sh.lru.Peek(h); ok && cur == it {
			sh.lru.Get(h)
		}
		sh.mu.Unlock()
	}
	return it.v, true
}

// put stores v under h unless keep(old, v) says the value already there
// should stay, in which case it returns that one. evicted reports whether
// the shard dropped its least recently used entry to make room.
func (c *lruCache[V]) put(h uint64, v V, now int64, keep func(old, v V) bool) (stored V, evicted bool) {
	sh := c.shard(h)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if old, ok := sh.lru.Peek(h); ok && keep != nil && keep(old.v, v) {
		return old.v, false
	}
	it := &lruItem[V]{v: v}
	it.promoted.Store(now)
	return v, sh.lru.Add(h, it)
}

// remove drops h if it still holds v (and not a newer value).
func (c *lruCache[V]) remove(h uint64, v V) {
	sh := c.shard(h)
	sh.mu.Lock()
	if old, ok := sh.lru.Peek(h); ok && old.v == v {
		sh.lru.Remove(h)
	}
	sh.mu.Unlock()
}

// len returns the number of entries, all shards.
func (c *lruCache[V]) len() int {
	n := 0
	for i := range c.shards {
		sh := &c.shards[i]
		rl := sh.mu.RLock()
		n += sh.lru.Len()
		rl.RUnlock()
	}
	return n
}
