package blocks

import (
	"slices"
	"testing"
)

func TestReports(t *testing.T) {
	type step struct {
		node     string
		full     []uint64 // FullReport (non-nil)
		received []uint64 // IncrementalReport
		deleted  []uint64
	}
	tests := []struct {
		name  string
		steps []step
		want  map[uint64][]string // block -> holders
	}{
		{
			name:  "full report adds",
			steps: []step{{node: "dn1", full: []uint64{1, 2}}, {node: "dn2", full: []uint64{2}}},
			want:  map[uint64][]string{1: {"dn1"}, 2: {"dn1", "dn2"}, 3: {}},
		},
		{
			name: "full report replaces",
			steps: []step{
				{node: "dn1", full: []uint64{1, 2}},
				{node: "dn1", full: []uint64{2, 3}},
			},
			want: map[uint64][]string{1: {}, 2: {"dn1"}, 3: {"dn1"}},
		},
		{
			name:  "empty full report clears",
			steps: []step{{node: "dn1", full: []uint64{1, 2}}, {node: "dn1", full: []uint64{}}},
			want:  map[uint64][]string{1: {}, 2: {}},
		},
		{
			name: "incremental adds and deletes",
			steps: []step{
				{node: "dn1", received: []uint64{1, 2}},
				{node: "dn2", received: []uint64{1}},
				{node: "dn1", deleted: []uint64{1, 99}},
			},
			want: map[uint64][]string{1: {"dn2"}, 2: {"dn1"}},
		},
		{
			name: "full report after incrementals",
			steps: []step{
				{node: "dn1", received: []uint64{1, 2, 3}},
				{node: "dn1", full: []uint64{3}},
				{node: "dn1", received: []uint64{1}},
			},
			want: map[uint64][]string{1: {"dn1"}, 2: {}, 3: {"dn1"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := newTestManager(t, 3)
			for id := uint64(1); id <= 3; id++ {
				m.SetExpected(id, 1, 100, 3, true)
			}
			for _, s := range tc.steps {
				var ok bool
				if s.full != nil {
					rs := make([]Replica, len(s.full))
					for i, id := range s.full {
						rs[i] = rep(id)
					}
					ok = m.FullReport(s.node, rs)
				} else {
					var rs []Replica
					for _, id := range s.received {
						rs = append(rs, rep(id))
					}
					ok = m.IncrementalReport(s.node, rs, s.deleted)
				}
				if !ok {
					t.Fatalf("report %+v rejected", s)
				}
			}
			total := 0
			for id, want := range tc.want {
				got := sortedIDs(m.Locations(id))
				if !slices.Equal(got, want) {
					t.Errorf("block %d on %v, want %v", id, got, want)
				}
				if live, _ := m.NeededReplication(id); live != len(want) {
					t.Errorf("block %d live = %d, want %d", id, live, len(want))
				}
				total += len(want)
			}
			if st := m.Stats(); st.Replicas != total {
				t.Errorf("Stats.Replicas = %d, want %d", st.Replicas, total)
			}
		})
	}
}

func TestLocationsFilterAndOrder(t *testing.T) {
	m, clk := newTestManager(t, 4)
	place(t, m, 1, 4, dn(1), dn(2), dn(3), dn(4)) // all four verified
	// Usage decides the order: dn3 emptiest, dn1 fullest.
	m.Heartbeat(dn(1), 100*gib, 90*gib, 0)
	m.Heartbeat(dn(2), 100*gib, 50*gib, 0)
	m.Heartbeat(dn(3), 100*gib, 10*gib, 0)
	m.Heartbeat(dn(4), 100*gib, 20*gib, 0)
	if got, want := ids(m.Locations(1)), []string{dn(3), dn(4), dn(2), dn(1)}; !slices.Equal(got, want) {
		t.Fatalf("order = %v, want %v", got, want)
	}
	// Failed volumes rank below healthy ones.
	m.Heartbeat(dn(3), 100*gib, 10*gib, 1)
	if got, want := ids(m.Locations(1)), []string{dn(4), dn(2), dn(1), dn(3)}; !slices.Equal(got, want) {
		t.Fatalf("order = %v, want %v", got, want)
	}
	// A stale datanode (no recent heartbeat) goes last.
	clk.Advance(DefaultConfig().StaleAfter + 1)
	m.Heartbeat(dn(1), 100*gib, 90*gib, 0)
	m.Heartbeat(dn(2), 100*gib, 50*gib, 0)
	m.Heartbeat(dn(3), 100*gib, 10*gib, 1)
	if got, want := ids(m.Locations(1)), []string{dn(2), dn(1), dn(3), dn(4)}; !slices.Equal(got, want) {
		t.Fatalf("order with stale dn4 = %v, want %v", got, want)
	}
	// Corrupt replicas are excluded; dead datanodes are excluded.
	m.ReportCorrupt(1, dn(2))
	clk.Advance(31e9)
	heartbeatAll(m, dn(1), dn(2), dn(3))
	m.CheckLiveness()
	if got, want := sortedIDs(m.Locations(1)), []string{dn(1), dn(3)}; !slices.Equal(got, want) {
		t.Fatalf("locations = %v, want %v", got, want)
	}
	// Unknown blocks and stale generations are never served.
	m.IncrementalReport(dn(1), []Replica{rep(50)}, nil)
	if l := m.Locations(50); len(l) != 0 {
		t.Fatalf("unknown block served: %v", ids(l))
	}
	m.SetExpected(1, 2, 100, 3, true) // pipeline recovery bumped the genstamp
	if l := m.Locations(1); len(l) != 0 {
		t.Fatalf("stale replicas served: %v", ids(l))
	}
	m.IncrementalReport(dn(3), []Replica{{BlockID: 1, GenStamp: 2, Length: 1}}, nil)
	if got := ids(m.Locations(1)); !slices.Equal(got, []string{dn(3)}) {
		t.Fatalf("after recovery locations = %v, want [dn3]", got)
	}
	// AppendLocations appends.
	dst := m.AppendLocations([]Datanode{{ID: "x"}}, 1)
	if got := ids(dst); !slices.Equal(got, []string{"x", dn(3)}) {
		t.Fatalf("AppendLocations = %v", got)
	}
}

func TestSetExpectedAdoptsUnknown(t *testing.T) {
	m, _ := newTestManager(t, 2)
	m.IncrementalReport(dn(1), []Replica{rep(9)}, nil)
	m.IncrementalReport(dn(2), []Replica{rep(9)}, nil)
	if st := m.Stats(); st.Unknown != 1 || st.Blocks != 0 || st.Replicas != 0 {
		t.Fatalf("stats = %+v, want 1 unknown", st)
	}
	m.SetExpected(9, 1, 100, 2, true)
	if got := sortedIDs(m.Locations(9)); !slices.Equal(got, []string{dn(1), dn(2)}) {
		t.Fatalf("locations = %v", got)
	}
	if st := m.Stats(); st.Unknown != 0 || st.Blocks != 1 || st.Replicas != 2 {
		t.Fatalf("stats = %+v", st)
	}
}
