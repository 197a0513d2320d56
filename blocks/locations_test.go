package blocks

import (
	"slices"
	"testing"
	"time"
)

// referenceLocations is Locations as it was before LocationReader, kept
// here as the specification the reader must match: good replicas on live
// datanodes, by serve rank (verified, unverified, suspect), then fresh
// before stale, fewer failed volumes, lower utilization, id; each datanode
// copied out.
func referenceLocations(m *Manager, id uint64) []Datanode {
	s := m.shard(id)
	rl := s.mu.RLock()
	var segs [3][]Datanode
	if b := s.blocks.get(id); b != nil && b.expected() {
		for _, l := range s.locs(b) {
			if d := s.node(l).snap.Load(); s.isGood(b, l) && d.State == Live {
				segs[serveRank(l)] = append(segs[serveRank(l)], *d)
			}
		}
	}
	rl.RUnlock()
	staleBefore := m.cfg.Now().Add(-m.cfg.StaleAfter)
	var out []Datanode
	for _, seg := range segs {
		slices.SortStableFunc(seg, func(a, b Datanode) int {
			as, bs := a.LastHeartbeat.Before(staleBefore), b.LastHeartbeat.Before(staleBefore)
			switch {
			case as != bs:
				if bs {
					return -1
				}
				return 1
			case a.FailedVolumes != b.FailedVolumes:
				return int(a.FailedVolumes) - int(b.FailedVolumes)
			case a.utilization() != b.utilization():
				if a.utilization() < b.utilization() {
					return -1
				}
				return 1
			}
			return stringsCompare(a.ID, b.ID)
		})
		out = append(out, seg...)
	}
	return out
}

func stringsCompare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestReaderMatchesReference: for replicas that are live, stale, dead,
// suspect, corrupt, unverified, of an old generation or on a datanode with
// failed volumes, LocationReader lists the same datanodes in the same order
// as the reference, each with the live state and description its snapshot
// holds, and Locations and AppendLocations (built on it) agree.
func TestReaderMatchesReference(t *testing.T) {
	const block = 7
	usage := func(m *Manager) { // dn1 fullest ... dn5 emptiest
		for i := 1; i <= 5; i++ {
			m.Heartbeat(dn(i), 100*gib, uint64(60-10*i)*gib, 0)
		}
	}
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, m *Manager, clk *fakeClock)
		want  []string
	}{
		{"live", func(t *testing.T, m *Manager, clk *fakeClock) {}, []string{dn(5), dn(4), dn(3), dn(2), dn(1)}},
		{"stale", func(t *testing.T, m *Manager, clk *fakeClock) {
			clk.Advance(m.cfg.StaleAfter + time.Second)
			heartbeatAll(m, dn(1), dn(2), dn(3), dn(4)) // dn5 is stale
		}, []string{dn(4), dn(3), dn(2), dn(1), dn(5)}},
		{"dead", func(t *testing.T, m *Manager, clk *fakeClock) {
			clk.Advance(m.cfg.deadAfter() + time.Second)
			heartbeatAll(m, dn(1), dn(2), dn(3), dn(5))
			m.CheckLiveness() // dn4 dies: its replica is dropped
			if d, _ := m.Datanode(dn(4)); d.State != Dead {
				t.Fatalf("dn4 is %v", d.State)
			}
		}, []string{dn(5), dn(3), dn(2), dn(1)}},
		{"suspect", func(t *testing.T, m *Manager, clk *fakeClock) {
			if !m.ReportSuspect(block, 1, dn(5)) {
				t.Fatal("suspect report refused")
			}
		}, []string{dn(4), dn(3), dn(2), dn(1), dn(5)}},
		{"corrupt", func(t *testing.T, m *Manager, clk *fakeClock) {
			if !m.ReportCorrupt(block, dn(3)) {
				t.Fatal("corrupt report refused")
			}
		}, []string{dn(5), dn(4), dn(2), dn(1)}},
		{"unverified", func(t *testing.T, m *Manager, clk *fakeClock) {
			// A full report of a replica this namenode did not see
			// written: good but unverified, so after the verified ones.
			m.Register(Datanode{ID: dn(6), Addr: "10.0.0.6:9866", Capacity: 100 * gib})
			m.FullReport(dn(6), []Replica{rep(block)})
		}, []string{dn(5), dn(4), dn(3), dn(2), dn(1), dn(6)}},
		{"old generation", func(t *testing.T, m *Manager, clk *fakeClock) {
			m.SetExpected(block, 2, 100, 5, true)
			r := rep(block)
			r.GenStamp = 2
			m.IncrementalReport(dn(2), []Replica{r}, nil)
		}, []string{dn(2)}},
		{"failed volumes", func(t *testing.T, m *Manager, clk *fakeClock) {
			m.Heartbeat(dn(5), 100*gib, 10*gib, 2)
			m.Heartbeat(dn(4), 100*gib, 20*gib, 1)
		}, []string{dn(3), dn(2), dn(1), dn(4), dn(5)}},
		{"mixed", func(t *testing.T, m *Manager, clk *fakeClock) {
			m.ReportCorrupt(block, dn(1))
			m.ReportSuspect(block, 1, dn(5))
			clk.Advance(m.cfg.StaleAfter + time.Second)
			heartbeatAll(m, dn(1), dn(2), dn(4), dn(5)) // dn3 is stale
		}, []string{dn(4), dn(2), dn(3), dn(5)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, clk := newTestManager(t, 5)
			usage(m)
			place(t, m, block, 5, dn(1), dn(2), dn(3), dn(4), dn(5))
			tc.setup(t, m, clk)

			ref := referenceLocations(m, block)
			if got := ids(ref); !slices.Equal(got, tc.want) {
				t.Fatalf("reference = %v, want %v", got, tc.want)
			}
			r := m.Reader()
			nums := r.Append([]uint32{99}, block) // appends
			if nums[0] != 99 || len(nums) != len(ref)+1 {
				t.Fatalf("Append = %v, want 99 then %d replicas", nums, len(ref))
			}
			for i, num := range nums[1:] {
				d := r.Datanode(num)
				if *d != ref[i] {
					t.Errorf("replica %d: %+v, want %+v", i, *d, ref[i])
				}
				if d.State != Live {
					t.Errorf("replica %d on %s: state %v", i, d.ID, d.State)
				}
				if n := m.lookup(d.ID); n.num != num {
					t.Errorf("%s: number %d, want %d", d.ID, num, n.num)
				}
			}
			if got := m.Locations(block); !slices.Equal(got, ref) {
				t.Errorf("Locations = %v, want %v", ids(got), ids(ref))
			}
		})
	}
}

// TestReaderLaterRegistration: a reader made before a datanode registers
// still lists that datanode's replicas, in id order among equals.
func TestReaderLaterRegistration(t *testing.T) {
	m, _ := newTestManager(t, 20) // more datanodes than a reader holds inline
	place(t, m, 1, 4, dn(3), dn(11))
	r := m.Reader()
	if err := m.Register(Datanode{ID: "dn0", Addr: "10.0.1.0:9866", Capacity: 100 * gib}); err != nil {
		t.Fatal(err)
	}
	place(t, m, 1, 4, "dn0")
	var got []string
	for _, num := range r.Append(nil, 1) {
		got = append(got, r.Datanode(num).ID)
	}
	if want := ids(referenceLocations(m, 1)); !slices.Equal(got, want) {
		t.Fatalf("reader = %v, want %v", got, want)
	}
	if !slices.Equal(got, []string{"dn0", dn(11), dn(3)}) {
		t.Fatalf("reader = %v", got)
	}
	// A reset reader (as a pool reuses it) forgets what it saw.
	m.Heartbeat(dn(11), 100*gib, 90*gib, 0)
	r.Reset(m)
	got = got[:0]
	for _, num := range r.Append(nil, 1) {
		got = append(got, r.Datanode(num).ID)
	}
	if !slices.Equal(got, []string{"dn0", dn(3), dn(11)}) {
		t.Fatalf("reset reader = %v", got)
	}
}
