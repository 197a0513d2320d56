package blocks

import "slices"

// The write pipeline of a block under construction. The namenode that
// serves AddBlock (or UpdatePipeline) chooses the datanodes and puts their
// ids in the Raft command, so every namenode learns them as it applies the
// log. The record is the block's expected locations, as in HDFS's
// BlockUnderConstruction: a "received" report makes a replica verified only
// if its datanode is in it, and block recovery chooses its primary among
// them (Pipeline). A datanode that only reports a replica is never one of
// them, so it can neither race the pipeline and look like a real copy nor
// become the primary that decides the block's length.
//
// The record outlives the block's completion until every live member has
// reported a verified replica (pipelineDone): Complete may commit before
// the datanodes' incremental reports arrive, and those late reports are
// still the pipeline's.

// SetPipeline records the datanodes chosen to write block blockID, in
// pipeline order. Ids of datanodes not registered here yet are kept (a
// namenode replaying its log at startup hears of the datanodes later). The
// record is dropped when the block is forgotten, or complete and every
// live member holds a verified replica.
func (m *Manager) SetPipeline(blockID uint64, datanodes []string) {
	ids := slices.Clone(datanodes)
	s := m.shard(blockID)
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.blocks.get(blockID); b == nil || !b.expected() || b.complete() {
		return // only settle drops a record: keep none it would not see
	}
	s.writing[blockID] = ids
}

// inPipeline reports whether block id has a recorded pipeline (known) and
// whether datanode number num is in it. Caller holds s.mu.
func (s *shard) inPipeline(id uint64, num uint32) (member, known bool) {
	w, ok := s.writing[id]
	if !ok {
		return false, false
	}
	n := s.m.reg.Load().byNum[num]
	return slices.Contains(w, n.id), true
}

// pipelineDone reports whether complete block b's pipeline record has
// served its purpose: every member is gone (not registered or not live)
// or holds a verified good replica. Caller holds s.mu.
func (s *shard) pipelineDone(b *blockInfo) bool {
	reg := s.m.reg.Load()
	for _, id := range s.writing[b.id] {
		n := reg.byID[id]
		if n == nil || n.snap.Load().State != Live {
			continue
		}
		if i := s.find(b, n); i < 0 || !s.locs(b)[i].has(locVerified) || !s.isGood(b, s.locs(b)[i]) {
			return false
		}
	}
	return true
}

// Pipeline returns the live datanodes of block blockID's recorded
// pipeline, in pipeline order, and whether a pipeline is recorded at all.
// Block recovery asks these, and only these, for their replicas: a
// datanode that merely reported the block is not among them.
func (m *Manager) Pipeline(blockID uint64) (targets []Datanode, known bool) {
	s := m.shard(blockID)
	rl := s.mu.RLock()
	ids, known := s.writing[blockID]
	rl.RUnlock()
	reg := m.reg.Load()
	for _, id := range ids {
		if n := reg.byID[id]; n != nil {
			if d := n.snap.Load(); d.State == Live {
				targets = append(targets, *d)
			}
		}
	}
	return targets, known
}

// WriteTargets returns the live datanodes that may hold a replica of block
// blockID: those of its recorded pipeline and those that reported a
// replica of it under any generation stamp (a replica being written is
// not reported, so the pipeline is the only record of it). Append and
// readers of a block being written use it; block recovery uses Pipeline,
// and falls back to these only when no pipeline is recorded.
func (m *Manager) WriteTargets(blockID uint64) []Datanode {
	s := m.shard(blockID)
	s.mu.Lock()
	reg := m.reg.Load()
	var ns []*node
	for _, id := range s.writing[blockID] {
		if n := reg.byID[id]; n != nil {
			ns = append(ns, n)
		}
	}
	if b := s.blocks.get(blockID); b != nil {
		for _, l := range s.locs(b) {
			if n := s.node(l); !l.has(locInvalidating) && !slices.Contains(ns, n) {
				ns = append(ns, n)
			}
		}
	}
	s.mu.Unlock()
	out := make([]Datanode, 0, len(ns))
	for _, n := range ns {
		if d := n.snap.Load(); d.State == Live {
			out = append(out, *d)
		}
	}
	return out
}
