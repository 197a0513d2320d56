package blocks

import "time"

// Locations returns the live datanodes holding a good replica of blockID,
// best first: verified replicas before unverified ones before suspect ones
// (see verify.go), and within each, datanodes that heartbeat recently
// (within StaleAfter) before stale ones, then fewer failed volumes, then
// lower utilization, then id. Unknown, corrupt, stale-generation and
// invalidating replicas are never returned. The result is empty, not an
// error, for a block with no good replica. See AppendLocations for the
// allocation-free form.
func (m *Manager) Locations(blockID uint64) []Datanode {
	return m.AppendLocations(nil, blockID)
}

// AppendLocations appends Locations(blockID) to dst and returns the extended
// slice. It takes only the read lock of blockID's shard and allocates only
// when dst must grow, so callers resolving many blocks reuse one slice.
func (m *Manager) AppendLocations(dst []Datanode, blockID uint64) []Datanode {
	s := m.shard(blockID)
	start := len(dst)
	cut := [4]int{start, start, start, start} // ends of the rank segments
	rl := s.mu.RLock()
	if b := s.blocks[blockID]; b != nil && b.expected {
		for rank := 0; rank < 3; rank++ {
			for i := range b.locs {
				l := &b.locs[i]
				if serveRank(l) != rank || !b.isGood(l) {
					continue
				}
				if d := l.n.snap.Load(); d.State == Live {
					dst = append(dst, *d)
				}
			}
			cut[rank+1] = len(dst)
		}
	}
	rl.RUnlock()
	if len(dst)-start > 1 {
		staleBefore := m.cfg.Now().Add(-m.cfg.StaleAfter)
		for rank := 0; rank < 3; rank++ {
			if cut[rank+1]-cut[rank] > 1 {
				sortBest(dst[cut[rank]:cut[rank+1]], staleBefore)
			}
		}
	}
	return dst
}

// sortBest is an insertion sort (replica lists are short) by better.
func sortBest(ds []Datanode, staleBefore time.Time) {
	for i := 1; i < len(ds); i++ {
		for j := i; j > 0 && better(&ds[j], &ds[j-1], staleBefore); j-- {
			ds[j], ds[j-1] = ds[j-1], ds[j]
		}
	}
}

func better(a, b *Datanode, staleBefore time.Time) bool {
	if sa, sb := a.LastHeartbeat.Before(staleBefore), b.LastHeartbeat.Before(staleBefore); sa != sb {
		return sb
	}
	if a.FailedVolumes != b.FailedVolumes {
		return a.FailedVolumes < b.FailedVolumes
	}
	if ua, ub := a.utilization(), b.utilization(); ua != ub {
		return ua < ub
	}
	return a.ID < b.ID
}

// NeededReplication returns the number of good replicas of blockID on live
// datanodes and the replication the namespace expects (0 if the block is not
// expected).
func (m *Manager) NeededReplication(blockID uint64) (live, expected int) {
	s := m.shard(blockID)
	rl := s.mu.RLock()
	defer rl.RUnlock()
	b := s.blocks[blockID]
	if b == nil || !b.expected {
		return 0, 0
	}
	return b.tally().good, int(b.replication)
}
