package blocks

// ReplicaCount returns how many replicas datanode id last reported
// holding, and whether the datanode is registered. For status pages.
func (m *Manager) ReplicaCount(id string) (int, bool) {
	n := m.lookup(id)
	if n == nil {
		return 0, false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.blocks.Len(), true
}

// Missing returns how many under-replicated blocks have no good replica
// left (HDFS's "missing blocks"): no datanode serves them. It reads the
// under-replicated queue, not every block.
func (m *Manager) Missing() int {
	missing := 0
	for _, id := range m.UnderReplicated() {
		if live, _ := m.NeededReplication(id); live == 0 {
			missing++
		}
	}
	return missing
}
