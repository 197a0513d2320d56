package blocks

import (
	"github.com/blockfs/blockfs/errs"
)

// Placement follows HDFS's default block placement policy over the racks
// the namenode's topology gives each datanode (Datanode.Rack; a datanode's
// own claim never decides it):
//
//   - the first replica on the writer's datanode if the writer is one (and
//     it qualifies), else on a random datanode;
//   - the second on a datanode of another rack;
//   - the third on the second's rack, another datanode;
//   - any more at random, at most (replicas-1)/racks + 2 on one rack.
//
// A datanode qualifies if it is live, normal (not decommissioning,
// decommissioned or in maintenance: admin.go), has the block's size free, is not
// excluded and does not hold the block already. Among those, one is drawn
// with probability proportional to its free space (emptier nodes fill
// first; equal ones share the load) by rejection sampling on uniform draws
// from the rack index (placeIndex): a choice costs O(replicas) expected
// draws, not O(datanodes). Only when draws keep failing (most datanodes
// full, dead or excluded) does it scan the scope once. A rule that cannot
// be met is relaxed (another rack, then any datanode) rather than leaving
// the block short.

// maxDraws bounds the random draws for one replica before the scan; a
// scope of at most scanBelow datanodes is scanned at once.
const (
	maxDraws  = 48
	scanBelow = 16
)

// ChooseTargets picks up to n distinct datanodes for the replicas of a
// new block of blockSize bytes, none of them in exclude (datanode ids),
// the first the writer's datanode (writer, "" for none) when it
// qualifies. It returns fewer than n if fewer qualify, an errs.Unavailable
// error if none does (retry: datanodes may come back or free space), an
// errs.Precondition error if some would but exclude names every one of
// them (the writer has already failed on each: as HDFS's "could only be
// written to 0 of the minReplication nodes ... node(s) are excluded", an
// answer for the writer, not a wait), and an errs.Invalid error if n < 1.
func (m *Manager) ChooseTargets(n int, blockSize uint64, exclude []string, writer string) ([]Datanode, error) {
	const op = "blocks.Manager.ChooseTargets"
	if n < 1 {
		return nil, errs.Newf(errs.Invalid, op, "", "asked for %d targets", n)
	}
	var skip func(*node) bool
	if len(exclude) > 0 {
		skip = func(x *node) bool {
			for _, id := range exclude {
				if x.id == id {
					return true
				}
			}
			return false
		}
	}
	var favored *node
	if writer != "" {
		favored = m.lookup(writer)
	}
	picked := m.choose(n, blockSize, nil, favored, skip)
	if len(picked) == 0 && skip != nil && len(m.choose(1, blockSize, nil, nil, nil)) > 0 {
		return nil, errs.Newf(errs.Precondition, op, "", "every live datanode with space is among the %d excluded", len(exclude))
	}
	if len(picked) == 0 {
		return nil, errs.New(errs.Unavailable, op, "", "no live datanodes with space")
	}
	out := make([]Datanode, len(picked))
	for i, p := range picked {
		out[i] = *p.d
	}
	return out, nil
}

type candidate struct {
	n *node
	d *Datanode
}

// chooser is one run of the policy: the replicas the block has (have) and
// those picked so far count against the per-rack bound.
type chooser struct {
	m         *Manager
	idx       *placeIndex
	blockSize uint64
	skip      func(*node) bool // excluded or holding the block; may be nil
	maxPer    int              // replicas one rack may hold
	racks     map[int]int      // rack number -> replicas there
	have      []*node
	picked    []candidate
}

// choose picks n more replicas for a block whose current replicas are
// have, the first favored if it qualifies (nil: none).
func (m *Manager) choose(n int, blockSize uint64, have []*node, favored *node, skip func(*node) bool) []candidate {
	idx := m.place.Load()
	total := n + len(have)
	c := &chooser{m: m, idx: idx, blockSize: blockSize, skip: skip, racks: make(map[int]int, 4), have: have,
		picked: make([]candidate, 0, n)}
	c.maxPer = total
	if r := len(idx.racks); r > 1 {
		c.maxPer = (total-1)/r + 2
	}
	for _, h := range have {
		c.racks[c.rack(h)]++
	}
	for len(c.picked) < n {
		k := len(have) + len(c.picked) // the replica's position in the block
		var got *candidate
		switch {
		case k == 0 && favored != nil && c.ok(favored):
			got = c.take(favored)
		case k == 0:
			got = c.pick(-1, -1)
		case len(idx.racks) > 1 && c.oneRack():
			got = c.pick(-1, c.rack(c.first())) // a block in one rack spreads first
		case k == 2 && c.rack(c.second()) >= 0:
			got = c.pick(c.rack(c.second()), -1) // the second's rack
		}
		if got == nil {
			got = c.pick(-1, -1)
		}
		if got == nil {
			break
		}
	}
	return c.picked
}

// rack is x's rack number in the index, -1 for a node registered after
// the index was taken.
func (c *chooser) rack(x *node) int { return int(c.idx.rack(x)) }

// oneRack reports whether all the block's replicas so far share a rack.
func (c *chooser) oneRack() bool {
	r := c.rack(c.first())
	for i := 1; i < len(c.have)+len(c.picked); i++ {
		if c.rack(c.nth(i)) != r {
			return false
		}
	}
	return true
}

// first and second are the block's first two replicas (have, then picked).
func (c *chooser) first() *node  { return c.nth(0) }
func (c *chooser) second() *node { return c.nth(1) }

func (c *chooser) nth(i int) *node {
	if i < len(c.have) {
		return c.have[i]
	}
	return c.picked[i-len(c.have)].n
}

// ok reports whether x may take the next replica.
func (c *chooser) ok(x *node) bool {
	d := x.snap.Load()
	if d.State != Live || d.Admin.State != AdminNormal || d.free() < c.blockSize || c.racks[c.rack(x)] >= c.maxPer || (c.skip != nil && c.skip(x)) {
		return false
	}
	for _, h := range c.have {
		if h == x {
			return false
		}
	}
	for _, p := range c.picked {
		if p.n == x {
			return false
		}
	}
	return true
}

func (c *chooser) take(x *node) *candidate {
	c.racks[c.rack(x)]++
	c.picked = append(c.picked, candidate{n: x, d: x.snap.Load()})
	return &c.picked[len(c.picked)-1]
}

// pick draws one qualifying datanode, in rack in (-1: any) and not in
// rack notIn (-1: none), weighted by free space; nil if there is none.
func (c *chooser) pick(in, notIn int) *candidate {
	scope := c.idx.all
	if in >= 0 {
		scope = c.idx.racks[in]
	}
	if len(scope) <= scanBelow {
		return c.scan(scope, notIn) // as cheap as a few draws, and never misses
	}
	maxFree := float64(c.m.maxFree.Load()) + 1
	c.m.randMu.Lock()
	for range maxDraws {
		x := scope[c.m.rng.IntN(len(scope))]
		if c.rack(x) == notIn || !c.ok(x) {
			continue
		}
		// Accept with probability free/maxFree: a draw weighted by free
		// space. maxFree is at least every node's free space (it is
		// raised at every heartbeat), so this never exceeds 1.
		if c.m.rng.Float64()*maxFree < float64(x.snap.Load().free())+1 {
			c.m.randMu.Unlock()
			return c.take(x)
		}
	}
	c.m.randMu.Unlock()
	return c.scan(scope, notIn)
}

// scan is pick's fallback: a weighted draw among the datanodes of scope
// that qualify, in two passes (sum the weights, then walk to the draw) so
// that it allocates nothing.
func (c *chooser) scan(scope []*node, notIn int) *candidate {
	total := 0.0
	for _, x := range scope {
		if c.rack(x) != notIn && c.ok(x) {
			total += float64(x.snap.Load().free()) + 1
		}
	}
	if total == 0 {
		return nil
	}
	c.m.randMu.Lock()
	r := c.m.rng.Float64() * total
	c.m.randMu.Unlock()
	var last *node
	for _, x := range scope {
		if c.rack(x) == notIn || !c.ok(x) {
			continue
		}
		last = x
		w := float64(x.snap.Load().free()) + 1
		if r < w {
			return c.take(x)
		}
		r -= w
	}
	return c.take(last) // rounding left r past the end
}
