package security

import (
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// lruCache is the cache behind both token caches: a fixed number of
// shards, picked by the low bits of a seeded 64-bit hash, each a
// count-bounded LRU (hashicorp/golang-lru's simplelru) under its own
// mutex. The full hash is the LRU key, so a lookup hashes nothing twice
// and never allocates; values carry their real key and callers compare it,
// which turns a hash collision into a miss and nothing worse.
//
// Every operation is O(1): a hit moves one list element, an insert into a
// full shard drops that shard's least recently used entry. No lock spans
// shards (KUDU-3210); two goroutines meet only when they touch one shard.
type lruCache[V comparable] struct {
	shards []lruShard[V]
	mask   uint64
}

type lruShard[V comparable] struct {
	mu  sync.Mutex
	lru *simplelru.LRU[uint64, V]
	_   [48]byte // keep neighbouring shards' mutexes off one cache line
}

// newLRUCache returns a cache of at most size entries in at most
// maxShards shards (a power of two; every shard holds size/shards).
func newLRUCache[V comparable](size, maxShards int) *lruCache[V] {
	n := shardCount(size, maxShards)
	c := &lruCache[V]{shards: make([]lruShard[V], n), mask: uint64(n - 1)}
	for i := range c.shards {
		l, err := simplelru.NewLRU[uint64, V](size/n, nil)
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

// get returns the value under h and marks it most recently used.
func (c *lruCache[V]) get(h uint64) (V, bool) {
	sh := c.shard(h)
	sh.mu.Lock()
	v, ok := sh.lru.Get(h)
	sh.mu.Unlock()
	return v, ok
}

// put stores v under h unless keep(old, v) says the value already there
// should stay, in which case it returns that one. evicted reports whether
// the shard dropped its least recently used entry to make room.
func (c *lruCache[V]) put(h uint64, v V, keep func(old, v V) bool) (stored V, evicted bool) {
	sh := c.shard(h)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if old, ok := sh.lru.Peek(h); ok && keep != nil && keep(old, v) {
		return old, false
	}
	return v, sh.lru.Add(h, v)
}

// remove drops h if it still holds v (and not a newer value).
func (c *lruCache[V]) remove(h uint64, v V) {
	sh := c.shard(h)
	sh.mu.Lock()
	if old, ok := sh.lru.Peek(h); ok && old == v {
		sh.lru.Remove(h)
	}
	sh.mu.Unlock()
}

// len returns the number of entries, all shards.
func (c *lruCache[V]) len() int {
	n := 0
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		n += sh.lru.Len()
		sh.mu.Unlock()
	}
	return n
}
