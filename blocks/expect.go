package blocks

import "time"

// ExpectReplicas records, before the block exists in the namespace, that
// datanodes ids are still writing replicas of block blockID: PutFile goes
// once MinReplication replicas are stored and the others finish
// meanwhile, so their reports may reach the leader after the block is
// complete. As HDFS adds a completed block's expected locations to its
// pending reconstructions, they count as replicas on their way from the
// moment the block is complete until they report or ReplicationTimeout
// passes, so the block is not queued for re-replication (and a Verify or
// Replicate ordered) in the moment before their reports arrive.
//
// The ids are a client's word, so they are never more than on their way:
// a report from one is not thereby verified, and when the block becomes
// complete only live registered datanodes not holding it are kept, no
// more than the block's replication less its good replicas. A lying
// client can only delay the re-replication of its own new block by
// ReplicationTimeout. An expectation whose block never becomes complete
// (the PutFile was refused; DropExpected, or ComputeWork after
// ReplicationTimeout) is forgotten; one for a block with replication
// work pending already is dropped.
func (m *Manager) ExpectReplicas(blockID uint64, ids []string) {
	if len(ids) == 0 {
		return
	}
	reg := m.reg.Load()
	e := &pending{expiry: m.cfg.Now().Add(m.cfg.ReplicationTimeout), expectOnly: true}
	for _, id := range ids {
		if n := reg.byID[id]; n != nil && !e.has(n) {
			e.targets = append(e.targets, n)
		}
	}
	if len(e.targets) == 0 {
		return
	}
	s := m.shard(blockID)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expect[blockID] = e
	if b := s.blocks.get(blockID); b != nil && b.expected() && b.complete() {
		s.settle(blockID, b, s.tally(b)) // a retried PutFile: the block is complete already
	}
}

// DropExpected forgets ExpectReplicas' record for block blockID (its
// PutFile failed).
func (m *Manager) DropExpected(blockID uint64) {
	s := m.shard(blockID)
	s.mu.Lock()
	delete(s.expect, blockID)
	s.mu.Unlock()
}

// takeExpected turns complete block b's expectation, if any, into its
// pending record: the targets still live and not holding a good replica,
// up to what b lacks. Caller holds s.mu.
func (s *shard) takeExpected(id uint64, b *blockInfo) {
	e := s.expect[id]
	if e == nil {
		return
	}
	delete(s.expect, id)
	if s.pending[id] != nil {
		return
	}
	room := int(b.replication) - s.count(b).normal
	kept := e.targets[:0]
	for _, n := range e.targets {
		if len(kept) < room && n.snap.Load().State == Live && s.find(b, n) < 0 {
			kept = append(kept, n)
		}
	}
	if e.targets = kept; len(kept) > 0 {
		s.pending[id] = e
	}
}

// expireExpected forgets expectations whose block did not become complete
// in time. Caller holds s.mu.
func (s *shard) expireExpected(now time.Time) {
	for id, e := range s.expect {
		if !now.Before(e.expiry) {
			delete(s.expect, id)
		}
	}
}
