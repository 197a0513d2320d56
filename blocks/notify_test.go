package blocks

import "testing"

// TestReplicasReported: the channel taken before a report is closed by a
// report that adds a replica, and only by one.
func TestReplicasReported(t *testing.T) {
	tests := []struct {
		name   string
		report func(m *Manager)
		wakes  bool
	}{
		{"incremental received", func(m *Manager) { m.IncrementalReport("dn1", []Replica{{BlockID: 7, GenStamp: 1, Length: 10}}, nil) }, true},
		{"full report with replicas", func(m *Manager) { m.FullReport("dn1", []Replica{{BlockID: 7, GenStamp: 1, Length: 10}}) }, true},
		{"deletion only", func(m *Manager) { m.IncrementalReport("dn1", nil, []uint64{7}) }, false},
		{"empty full report", func(m *Manager) { m.FullReport("dn1", nil) }, false},
		{"unknown datanode", func(m *Manager) { m.IncrementalReport("dn9", []Replica{{BlockID: 7, GenStamp: 1}}, nil) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := newTestManager(t, 2)
			ch := m.ReplicasReported()
			tt.report(m)
			select {
			case <-ch:
				if !tt.wakes {
					t.Fatal("woken by a report that added no replica")
				}
			default:
				if tt.wakes {
					t.Fatal("not woken by a report that added a replica")
				}
			}
			if tt.wakes {
				select {
				case <-m.ReplicasReported():
					t.Fatal("the channel after a wake-up is already closed")
				default:
				}
			}
		})
	}
}
