package blocks

// Holding is one block a datanode holds, as the balancer plans with it.
type Holding struct {
	BlockID     uint64
	Length      uint64
	Replication int
	// Holders are the datanodes with a good replica (the one asked
	// included), by id.
	Holders []string
}

// Movable returns up to limit blocks of datanode id that StartMove may
// move off it now (see move.go: complete, at their replication, nothing
// else under way), starting at a random place in its block list so that
// repeated plans do not keep offering the same blocks. Nil for an unknown
// or dead datanode.
func (m *Manager) Movable(id string, limit int) []Holding {
	n := m.lookup(id)
	if n == nil || limit <= 0 {
		return nil
	}
	n.mu.Lock()
	if n.snap.Load().State != Live {
		n.mu.Unlock()
		return nil
	}
	held := n.blocks.Append(make([]uint64, 0, n.blocks.Len()))
	n.mu.Unlock()
	if len(held) == 0 {
		return nil
	}
	m.randMu.Lock()
	start := m.rng.IntN(len(held))
	m.randMu.Unlock()
	var out []Holding
	for k := range held {
		if len(out) >= limit {
			break
		}
		bid := held[(start+k)%len(held)]
		s := m.shard(bid)
		rl := s.mu.RLock()
		if h, ok := s.holding(bid, n); ok {
			out = append(out, h)
		}
		rl.RUnlock()
	}
	return out
}

// holding describes block id for Movable if n holds a good replica of it
// and it may be moved. Caller holds s.mu (read or write).
func (s *shard) holding(id uint64, n *node) (Holding, bool) {
	b := s.blocks.get(id)
	if b == nil || !b.expected() || s.unmovable(b) != "" {
		return Holding{}, false
	}
	i := s.find(b, n)
	if i < 0 || !s.isGood(b, s.locs(b)[i]) {
		return Holding{}, false
	}
	h := Holding{BlockID: id, Length: b.length, Replication: int(b.replication)}
	for _, l := range s.locs(b) {
		if s.isGood(b, l) {
			h.Holders = append(h.Holders, s.node(l).id)
		}
	}
	return h, true
}
