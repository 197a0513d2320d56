// Package rwlock holds a read-write lock for read-mostly data read from
// many cores at once.
package rwlock

import (
	"sync"
	"sync/atomic"
)

// Mutex is a read-write lock for a read-mostly structure read from many
// cores at once (the namenode's FSM state and block map shards under
// GetBlockLocations). One sync.RWMutex makes every reader write the same
// counter, so readers on two cores spend their time passing that cache line
// back and forth. Mutex spreads readers over rwShards mutexes on separate
// cache lines, and a reader keeps to the shard of the processor (P) it runs
// on, so a shard's line stays in one core's cache; a writer takes all of
// them, in order. Writers are rare (one per applied batch, one per block
// report), so their extra cost is small.
type Mutex struct {
	shards [rwShards]struct {
		sync.RWMutex
		_ [40]byte // one mutex per cache line
	}
}

const rwShards = 8

// slots hands out shard numbers. sync.Pool keeps a cache per P, so a
// goroutine gets back (almost always) the number its P used last: P
// affinity without reaching into the runtime.
var slots = sync.Pool{New: func() any { n := int(next.Add(1) % rwShards); return &n }}

var next atomic.Uint32

// RLock read-locks one shard and returns it: the caller unlocks that
// shard (defer l.RLock().RUnlock()). The zero Mutex is unlocked.
func (l *Mutex) RLock() *sync.RWMutex {
	slot := slots.Get().(*int)
	m := &l.shards[*slot].RWMutex
	slots.Put(slot)
	m.RLock()
	return m
}

// Slot returns the reader shard of the calling goroutine's P, for a caller
// about to take many read locks in a row (RLockAt): one pool round trip
// rather than one per lock. Any slot is correct (a writer takes every
// shard); the P's own keeps the shard's cache line on one core.
func Slot() int {
	slot := slots.Get().(*int)
	k := *slot
	slots.Put(slot)
	return k
}

// RLockAt read-locks shard slot (from Slot) and returns it, like RLock.
func (l *Mutex) RLockAt(slot int) *sync.RWMutex {
	m := &l.shards[slot%rwShards].RWMutex
	m.RLock()
	return m
}

// Lock locks every shard.
func (l *Mutex) Lock() {
	for i := range l.shards {
		l.shards[i].Lock()
	}
}

// Unlock unlocks every shard.
func (l *Mutex) Unlock() {
	for i := len(l.shards) - 1; i >= 0; i-- {
		l.shards[i].Unlock()
	}
}
