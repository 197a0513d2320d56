package blocks

import (
	"fmt"
	"testing"
)

// TestReplicaCountAndMissing: a datanode's count is what it reported; a
// complete block whose only holder died is missing, one with a live holder
// left is only under-replicated.
func TestReplicaCountAndMissing(t *testing.T) {
	m, clk := newTestManager(t, 3)
	place(t, m, 1, 2, dn(1), dn(2)) // two holders
	place(t, m, 2, 1, dn(3))        // one holder, which dies
	place(t, m, 3, 2, dn(1))        // under-replicated, not missing
	for _, c := range []struct {
		id   string
		want int
		ok   bool
	}{{dn(1), 2, true}, {dn(2), 1, true}, {dn(3), 1, true}, {"dn9", 0, false}} {
		if got, ok := m.ReplicaCount(c.id); got != c.want || ok != c.ok {
			t.Errorf("ReplicaCount(%s) = %d, %v; want %d, %v", c.id, got, ok, c.want, c.ok)
		}
	}
	if got := m.Missing(); got != 0 {
		t.Fatalf("missing before a death = %d, want 0", got)
	}
	for range m.cfg.DeadAfterMissed + 1 {
		clk.Advance(m.cfg.HeartbeatInterval)
		heartbeatAll(m, dn(1), dn(2))
	}
	m.CheckLiveness()
	if d, _ := m.Datanode(dn(3)); d.State != Dead {
		t.Fatalf("%s is %v, want dead", dn(3), d.State)
	}
	if got := m.Missing(); got != 1 {
		t.Fatalf("missing after %s died = %d, want 1 (under-replicated: %v)", dn(3), got, m.UnderReplicated())
	}
}

// TestQueuesShrink: a queue that held many blocks is rebuilt once it has
// mostly emptied, and keeps its contents.
func TestQueuesShrink(t *testing.T) {
	for _, c := range []struct {
		name      string
		grow, end int
		rebuilt   bool
	}{
		{"small never rebuilt", 1000, 0, false},
		{"large emptied", 8 * shrinkMin, 10, true},
		{"large half full", 8 * shrinkMin, 4 * shrinkMin, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := map[uint64]struct{}{}
			for i := range c.grow {
				m[uint64(i)] = struct{}{}
			}
			for i := c.end; i < c.grow; i++ {
				delete(m, uint64(i))
			}
			before := m
			peak := c.grow // as notePeaks saw it
			m2 := shrunk(m, &peak)
			rebuilt := fmt.Sprintf("%p", m2) != fmt.Sprintf("%p", before)
			if rebuilt != c.rebuilt {
				t.Fatalf("rebuilt %v, want %v", rebuilt, c.rebuilt)
			}
			if len(m2) != c.end {
				t.Fatalf("%d entries after, want %d", len(m2), c.end)
			}
			for i := range c.end {
				if _, ok := m2[uint64(i)]; !ok {
					t.Fatalf("entry %d lost", i)
				}
			}
		})
	}
}
