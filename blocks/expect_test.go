package blocks

import (
	"testing"
	"time"
)

// TestExpectReplicas: a block made complete while its other replicas are
// still being written is not scheduled for replication while they are on
// their way; their reports end the wait without being taken as verified
// on the writer's word; a writer that named datanodes which never report
// delays the block's re-replication by ReplicationTimeout and no more;
// names it cannot mean (unknown, holding the block already, beyond the
// block's replication) are dropped; an expectation for a block that never
// becomes complete is forgotten.
func TestExpectReplicas(t *testing.T) {
	cases := []struct {
		name    string
		holders []string
		expect  []string
		pending bool // the block waits for the named datanodes
	}{
		{"the others on their way", []string{dn(1)}, []string{dn(2), dn(3)}, true},
		{"unknown datanodes", []string{dn(1)}, []string{"dn9", "dnX"}, false},
		{"a holder named", []string{dn(1), dn(2)}, []string{dn(2)}, false},
		{"nothing named", []string{dn(1)}, nil, false},
		{"fully replicated", []string{dn(1), dn(2), dn(3)}, []string{dn(4)}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := newTestManager(t, 5)
			m.ExpectReplicas(1, tc.expect)
			putFileBlock(t, m, 1, 3, tc.holders...)
			under := len(tc.holders) < 3
			if st := m.Stats(); (st.PendingReplication == 1) != tc.pending || (st.UnderReplicated == 1) != (under && !tc.pending) {
				t.Fatalf("stats %+v: want pending %v, under-replicated %v", st, tc.pending, under && !tc.pending)
			}
			m.ComputeWork()
			if cmds := drainAll(m, 5); (len(cmds) > 0) != (under && !tc.pending) {
				t.Fatalf("commands %+v: want some only for an under-replicated block nobody is writing", cmds)
			}
		})
	}

	t.Run("their reports end the wait, unverified", func(t *testing.T) {
		m, _ := newTestManager(t, 5)
		m.ExpectReplicas(1, []string{dn(2), dn(3), dn(4)}) // one more than the block lacks: dropped
		putFileBlock(t, m, 1, 3, dn(1))
		for _, d := range []string{dn(2), dn(3)} {
			m.IncrementalReport(d, []Replica{rep(1)}, nil)
		}
		if st := m.Stats(); st.PendingReplication != 0 || st.UnderReplicated != 0 {
			t.Fatalf("stats after the reports %+v: want nothing pending or under-replicated", st)
		}
		if got := m.count(1).verified; got != 0 {
			t.Fatalf("%d verified replicas: a writer's word verifies none", got)
		}
	})

	t.Run("names that never report", func(t *testing.T) {
		m, clk := newTestManager(t, 5)
		putFileBlock(t, m, 1, 3, dn(1))
		m.ExpectReplicas(1, []string{dn(2), dn(3)}) // a retried PutFile: the block is complete already
		clk.Advance(DefaultConfig().ReplicationTimeout - time.Second)
		heartbeatAll(m, dn(1), dn(2), dn(3), dn(4), dn(5))
		m.ComputeWork()
		if cmds := drainAll(m, 5); len(cmds) != 0 {
			t.Fatalf("commands %+v while the replicas are on their way", cmds)
		}
		clk.Advance(time.Second)
		m.ComputeWork()
		if cmds := drainAll(m, 5); len(cmds) == 0 {
			t.Fatal("no command once the wait expired: the block is still under-replicated")
		}
	})
	t.Run("a block that never becomes complete", func(t *testing.T) {
		for _, drop := range []bool{true, false} {
			m, clk := newTestManager(t, 5)
			m.ExpectReplicas(1, []string{dn(2), dn(3)})
			if drop {
				m.DropExpected(1) // its PutFile failed
			} else {
				clk.Advance(DefaultConfig().ReplicationTimeout)
				m.ComputeWork()
			}
			putFileBlock(t, m, 1, 3, dn(1)) // another file of the id, much later
			if st := m.Stats(); st.PendingReplication != 0 || st.UnderReplicated != 1 {
				t.Fatalf("dropped %v: stats %+v, want the old expectation gone", drop, st)
			}
		}
	})
}

// putFileBlock makes block id complete as PutFile does: no pipeline
// record, its replicas reported by holders.
func putFileBlock(t *testing.T, m *Manager, id uint64, r uint32, holders ...string) {
	t.Helper()
	for _, h := range holders {
		if !m.IncrementalReport(h, []Replica{rep(id)}, nil) {
			t.Fatalf("report from %s rejected", h)
		}
	}
	m.SetExpected(id, 1, 100, r, true)
}

// count is a test's look at block id's live count.
func (m *Manager) count(id uint64) liveCount {
	s := m.shard(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count(s.blocks.get(id))
}
