package rwlock

import "sync/atomic"

// Counter is a monotonic counter that many goroutines add to without
// sharing a cache line: each adds to the stripe of its slot (the same
// per-P slot a Mutex reader uses), and Load sums the stripes. An atomic
// counter that every core increments is a line that bounces between them
// on every add; a counter bumped once per read request is enough to keep
// two cores from doing twice the reads of one.
type Counter struct {
	stripes [rwShards]struct {
		n atomic.Uint64
		_ [120]byte // one stripe per 128 bytes: adjacent-line prefetch pairs lines
	}
}

// Add adds d.
func (c *Counter) Add(d uint64) { c.stripes[Slot()].n.Add(d) }

// Load returns the sum of every Add so far (of those that completed
// before Load started, at least).
func (c *Counter) Load() uint64 {
	var sum uint64
	for i := range c.stripes {
		sum += c.stripes[i].n.Load()
	}
	return sum
}
