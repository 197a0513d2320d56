package blocks

import (
	"sort"
	"sync/atomic"

	"github.com/blockfs/blockfs/topology"
)

// placeIndex is the datanodes grouped by rack for placement: immutable,
// rebuilt (under regMu) when a datanode first registers, comes back in
// another rack, or the topology is reloaded. Liveness and free space are
// read from each node's snapshot at choice time, so heartbeats never
// rebuild it.
type placeIndex struct {
	all       []*node   // every registered datanode
	racks     [][]*node // by rack number
	rackNames []string  // by rack number, sorted
	rackOf    []int32   // rack number by node.num
}

// buildPlaceIndex groups the registry's nodes by their snapshots' racks.
func buildPlaceIndex(r *registry) *placeIndex {
	idx := &placeIndex{all: r.byNum, rackOf: make([]int32, len(r.byNum))}
	byName := map[string]int{}
	for _, x := range r.sorted {
		rack := x.snap.Load().rackOrDefault()
		if _, ok := byName[rack]; !ok {
			byName[rack] = 0
			idx.rackNames = append(idx.rackNames, rack)
		}
	}
	sort.Strings(idx.rackNames)
	idx.racks = make([][]*node, len(idx.rackNames))
	for i, name := range idx.rackNames {
		byName[name] = i
	}
	for _, x := range r.byNum {
		i := byName[x.snap.Load().rackOrDefault()]
		idx.rackOf[x.num] = int32(i)
		idx.racks[i] = append(idx.racks[i], x)
	}
	return idx
}

// rack is n's rack number in the index, -1 for a node registered after
// the index was built.
func (idx *placeIndex) rack(n *node) int32 {
	if int(n.num) < len(idx.rackOf) {
		return idx.rackOf[n.num]
	}
	return -1
}

// rackOrDefault is d's rack, topology.DefaultRack when it has none (a
// Datanode registered without the namenode's topology, as in tests).
func (d *Datanode) rackOrDefault() string {
	if d.Rack == "" {
		return topology.DefaultRack
	}
	return d.Rack
}

// raiseMaxFree makes m.maxFree at least free.
func raiseMaxFree(max *atomic.Uint64, free uint64) {
	for {
		cur := max.Load()
		if free <= cur || max.CompareAndSwap(cur, free) {
			return
		}
	}
}

// Relocate sets every registered datanode's rack to rackOf(id, addr), as
// a reloaded topology says, and rebuilds the placement index. Replicas
// already placed stay where they are; the replication monitor counts
// blocks whose replicas now span too few racks (Stats.MisReplicated).
func (m *Manager) Relocate(rackOf func(id, addr string) string) {
	m.regMu.Lock()
	defer m.regMu.Unlock()
	r := m.reg.Load()
	for _, x := range r.byNum {
		x.mu.Lock()
		d := *x.snap.Load()
		d.Rack = rackOf(d.ID, d.Addr)
		x.snap.Store(&d)
		x.mu.Unlock()
	}
	m.place.Store(buildPlaceIndex(r))
}

// Racks returns the racks with at least one registered datanode, sorted.
func (m *Manager) Racks() []string { return m.place.Load().rackNames }
