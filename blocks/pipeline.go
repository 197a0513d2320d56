package blocks

import "slices"

// The write pipeline of a block under construction. The namenode that
// serves AddBlock chooses the datanodes and puts their ids in the Raft
// command, so every namenode learns them as it applies the log. While the
// block is being written, a "received" report makes a replica verified only
// if its datanode is one of them: a datanode that was not asked to store the
// block cannot race the pipeline and look like a real copy.

// SetPipeline records the datanodes chosen to write block blockID. Ids of
// datanodes not registered here are skipped. The record is dropped when the
// block completes or is forgotten.
func (m *Manager) SetPipeline(blockID uint64, datanodes []string) {
	ns := make([]*node, 0, len(datanodes))
	for _, id := range datanodes {
		if n := m.lookup(id); n != nil {
			ns = append(ns, n)
		}
	}
	s := m.shard(blockID)
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.blocks.get(blockID); b == nil || !b.expected() || b.complete() {
		return // only settle drops a record: keep none it would not see
	}
	s.writing[blockID] = ns
}

// inPipeline reports whether block id has a recorded pipeline (known) and
// whether datanode number num is in it. Caller holds s.mu.
func (s *shard) inPipeline(id uint64, num uint32) (member, known bool) {
	w, ok := s.writing[id]
	if !ok {
		return false, false
	}
	return slices.ContainsFunc(w, func(n *node) bool { return n.num == num }), true
}

// WriteTargets returns the live datanodes that may hold a replica of block
// blockID being written or recovered: those of its recorded pipeline and
// those that reported a replica of it under any generation stamp (a
// replica being written is not reported, so the pipeline is the only
// record of it). Block recovery asks each of them for its replica.
func (m *Manager) WriteTargets(blockID uint64) []Datanode {
	s := m.shard(blockID)
	s.mu.Lock()
	var ns []*node
	ns = append(ns, s.writing[blockID]...)
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
