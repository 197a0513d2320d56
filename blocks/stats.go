package blocks

import "sort"

// Stats returns counts of datanodes, blocks, replicas and every queue. Each
// shard is read consistently, the whole only approximately (shards are read
// one after another); it is for metrics and monitoring.
func (m *Manager) Stats() Stats {
	var st Stats
	for _, n := range m.nodes() {
		d := n.snap.Load()
		if d.State != Live {
			st.Dead++
			continue
		}
		st.Live++
		st.Capacity += d.Capacity
		st.Used += d.Used
		st.PendingDeletion += n.pendingDeletes()
	}
	for i := range m.shards {
		s := &m.shards[i]
		rl := s.mu.RLock()
		st.Blocks += s.nBlocks
		st.Replicas += s.nGood
		st.Corrupt += s.nBad
		st.UnderReplicated += len(s.under)
		st.OverReplicated += len(s.over)
		st.PendingReplication += len(s.pending)
		st.Unknown += len(s.unknown)
		st.Suspect += len(s.suspect)
		st.Verifying += len(s.verifying)
		st.MisReplicated += len(s.misplaced)
		rl.RUnlock()
	}
	return st
}

// UnderReplicated returns the ids in the under-replicated queue, sorted:
// complete blocks with fewer good replicas (plus scheduled replications)
// than expected. For tests and fsck; it copies the whole queue.
func (m *Manager) UnderReplicated() []uint64 {
	var ids []uint64
	for i := range m.shards {
		s := &m.shards[i]
		rl := s.mu.RLock()
		for id := range s.under {
			ids = append(ids, id)
		}
		rl.RUnlock()
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// SafeBlocks returns how many complete blocks the namespace expects
// (total) and how many of them have at least one good replica reported
// (safe): safe mode's threshold is safe/total. Blocks under construction
// count in neither, as in HDFS. It reads one counter pair per shard.
func (m *Manager) SafeBlocks() (safe, total int) {
	for i := range m.shards {
		s := &m.shards[i]
		rl := s.mu.RLock()
		safe += s.nSafe
		total += s.nComplete
		rl.RUnlock()
	}
	return safe, total
}
