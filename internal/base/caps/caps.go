// Package caps counts what callers hold of a bounded resource, per key (a
// user, a datanode) and in all, and refuses past either cap: the
// bookkeeping behind limits such as the namenode's Complete waits.
package caps

import "sync"

// Which cap refused an Acquire.
const (
	PerKey = "per_key"
	Total  = "total"
)

// Caps is a pair of counting semaphores, one per key and one over all
// keys, that never block: Acquire takes one of each or refuses. Its
// methods are safe for concurrent use. It holds one mutex: use it where
// holding is rare (a call that must wait), not on every request.
type Caps struct {
	perKey, total int

	mu    sync.Mutex
	byKey map[string]int
	n     int
}

// New returns Caps of perKey per key and total in all.
func New(perKey, total int) *Caps {
	return &Caps{perKey: perKey, total: total, byKey: map[string]int{}}
}

// Acquire takes one for key and returns "", or takes nothing and returns
// the cap that was full (PerKey or Total).
func (c *Caps) Acquire(key string) string { return c.AcquireN(key, 1) }

// AcquireN takes n for key (a weight, such as bytes) and returns "", or
// takes nothing and returns the cap that n would pass (PerKey or Total).
func (c *Caps) AcquireN(key string, n int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.byKey[key]+n > c.perKey:
		return PerKey
	case c.n+n > c.total:
		return Total
	}
	c.byKey[key] += n
	c.n += n
	return ""
}

// Release returns one Acquire of key took.
func (c *Caps) Release(key string) { c.ReleaseN(key, 1) }

// ReleaseN returns what an AcquireN(key, n) took.
func (c *Caps) ReleaseN(key string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byKey[key] -= n; c.byKey[key] <= 0 {
		delete(c.byKey, key)
	}
	c.n -= n
}

// InUse returns how many are held in all.
func (c *Caps) InUse() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}
