package security

import "sync/atomic"

// doorkeeper decides which missed keys the issuer's cache admits: a key is
// cached the second time it misses within the doorkeeper's memory, not the
// first (TinyLFU's doorkeeper). A request seen once, such as each of a
// crawler's or a cold cache's reads, then signs exactly as per-request mode
// does, with no insert, no eviction of a hot entry and no token kept for the
// garbage collector; a key asked for again is cached on that second miss
// and hit from the third.
//
// It is one direct-mapped table of key hashes, read and written with
// atomics and no lock: two keys that share a slot overwrite each other,
// which only delays their admission.
type doorkeeper struct {
	seen []atomic.Uint64
	mask uint64
}

// newDoorkeeper returns a doorkeeper of at least n slots (a power of two).
func newDoorkeeper(n int) *doorkeeper {
	size := 1
	for size < n {
		size <<= 1
	}
	return &doorkeeper{seen: make([]atomic.Uint64, size), mask: uint64(size - 1)}
}

// admit reports whether the key of hash h missed before (its hash is in
// h's slot); if not, it records h there. The slot comes from the hash's
// high bits, since the cache's shard comes from its low ones.
func (d *doorkeeper) admit(h uint64) bool {
	s := &d.seen[(h>>32)&d.mask]
	if s.Load() == h {
		return true
	}
	s.Store(h)
	return false
}
