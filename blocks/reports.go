package blocks

// FullReport replaces the set of replicas datanode id holds with rs: replicas
// not in rs are dropped, new ones added, changed ones updated. It returns
// false, ignoring the report, if id is unknown or dead (the datanode should
// register again). Replicas of blocks the namespace does not expect are held
// as unknown; replicas with another generation stamp than expected count as
// corrupt.
func (m *Manager) FullReport(id string, rs []Replica) (accepted bool) {
	n := m.lookup(id)
	if n == nil {
		return false
	}
	now := m.cfg.Now()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.snap.Load().State != Live {
		return false
	}
	var held idSet
	for i := range rs {
		held.Add(rs[i].BlockID)
	}
	var gone []uint64
	for _, b := range n.blocks.Append(make([]uint64, 0, n.blocks.Len())) {
		if !held.Has(b) {
			gone = append(gone, b)
		}
	}
	forEachShard(m, len(rs), func(i int) uint64 { return rs[i].BlockID }, func(s *shard, i int) {
		s.addReplica(n, rs[i], now, false)
	})
	forEachShard(m, len(gone), func(i int) uint64 { return gone[i] }, func(s *shard, i int) {
		s.removeReplica(n, gone[i])
	})
	n.blocks = held
	n.needFull = false
	if len(rs) > 0 {
		m.reported.fire()
	}
	n.qmu.Lock()
	for b := range n.invalidate {
		if !held.Has(b) {
			delete(n.invalidate, b) // already gone
		}
	}
	n.qmu.Unlock()
	return true
}

// IncrementalReport records that datanode id now holds received (new or
// updated replicas) and no longer holds deleted (block ids). It returns
// false, ignoring the report, if id is unknown or dead.
func (m *Manager) IncrementalReport(id string, received []Replica, deleted []uint64) (accepted bool) {
	n := m.lookup(id)
	if n == nil {
		return false
	}
	now := m.cfg.Now()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.snap.Load().State != Live {
		return false
	}
	for _, r := range received {
		n.blocks.Add(r.BlockID)
		s := m.shard(r.BlockID)
		s.mu.Lock()
		s.addReplica(n, r, now, true)
		s.shrink()
		s.mu.Unlock()
	}
	for _, b := range deleted {
		if !n.blocks.Has(b) {
			continue
		}
		n.blocks.Delete(b)
		s := m.shard(b)
		s.mu.Lock()
		s.removeReplica(n, b)
		s.shrink()
		s.mu.Unlock()
	}
	if len(received) > 0 {
		m.reported.fire()
	}
	if len(deleted) > 0 {
		n.qmu.Lock()
		for _, b := range deleted {
			delete(n.invalidate, b)
		}
		n.qmu.Unlock()
	}
	return true
}

// ReportCorrupt marks datanode datanodeID's replica of blockID corrupt: it is
// no longer served or counted, the block is queued for replication if that
// leaves it short, and ComputeWork deletes the corrupt replica once the block
// has enough good ones, at least one of them verified. It returns false if
// that replica is not in the map. Call it for reports the namenode trusts
// (the datanode itself found the replica corrupt); a client's report goes to
// ReportSuspect.
func (m *Manager) ReportCorrupt(blockID uint64, datanodeID string) (found bool) {
	return m.withReplica(blockID, datanodeID, func(s *shard, b *blockInfo, l *loc) bool {
		before := s.tally(b)
		l.set(locCorrupt, true)
		l.set(locVerified|locSuspect|locVerifying, false)
		s.verifyDone(blockID, b)
		s.settle(blockID, b, before)
		return true
	})
}

// withReplica runs fn on datanode datanodeID's replica of blockID with the
// block's shard locked, and returns what fn returns; false if the datanode
// or the replica is not in the map.
func (m *Manager) withReplica(blockID uint64, datanodeID string, fn func(s *shard, b *blockInfo, l *loc) bool) bool {
	n := m.lookup(datanodeID)
	if n == nil {
		return false
	}
	s := m.shard(blockID)
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.blocks.get(blockID)
	if b == nil {
		return false
	}
	i := s.find(b, n)
	if i < 0 {
		return false
	}
	return fn(s, b, &s.locs(b)[i])
}

// SetExpected records what the namespace says about block blockID: its
// current generation stamp, its file, its target replication and whether it
// is complete. Call it whenever any of these change (allocation, pipeline
// recovery, completion, setReplication), on every namenode as it applies the
// log. Replicas already reported stop being unknown. Under- and
// over-replication apply only to complete blocks.
func (m *Manager) SetExpected(blockID, genStamp, inode uint64, replication uint32, complete bool) {
	s := m.shard(blockID)
	s.mu.Lock()
	s.setExpected(ExpectedBlock{ID: blockID, GenStamp: genStamp, Inode: inode, Replication: replication, Complete: complete})
	s.shrink()
	s.mu.Unlock()
}

// setExpected is SetExpected with s.mu held.
func (s *shard) setExpected(e ExpectedBlock) {
	b := s.blocks.get(e.ID)
	if b == nil {
		b = &blockInfo{id: e.ID, genStamp: e.GenStamp}
		s.blocks.put(b)
	}
	before := s.tally(b)
	s.rebase(b, e.GenStamp, b.length)
	b.setState(bExpected, true)
	b.setState(bForgotten, false)
	b.setState(bComplete, e.Complete)
	b.inode, b.replication = e.Inode, uint16(min(e.Replication, 0xFFFF))
	s.settle(e.ID, b, before)
}

// Forget records that the namespace no longer has these blocks (file
// deleted, block abandoned): every replica is scheduled for deletion on its
// datanode and the blocks leave the replication queues. Replicas reported
// later are scheduled for deletion too. Unknown ids are ignored.
func (m *Manager) Forget(blockIDs ...uint64) {
	for _, id := range blockIDs {
		s := m.shard(id)
		s.mu.Lock()
		if b := s.blocks.get(id); b != nil {
			s.forget(id, b)
		}
		s.shrink()
		s.mu.Unlock()
	}
}

// forget is Forget of one block with s.mu held.
func (s *shard) forget(id uint64, b *blockInfo) {
	before := s.tally(b)
	b.setState(bExpected, false)
	b.setState(bForgotten, true)
	ls := s.locs(b)
	for i := range ls {
		s.invalidate(b, &ls[i])
	}
	s.settle(id, b, before)
}
