package blocks

import (
	"slices"
	"testing"
	"time"
)

// verifies returns, by datanode, the block ids in Verify commands.
func verifies(all map[string][]Command) map[string][]uint64 {
	out := map[string][]uint64{}
	for id, cs := range all {
		for _, c := range cs {
			if c.Kind == Verify {
				out[id] = append(out[id], c.Block.BlockID)
			}
		}
	}
	return out
}

// registerFakes registers datanodes fake1..fakeN with huge free space, as
// an attacker would to look like the best place to keep a block.
func registerFakes(t *testing.T, m *Manager, k int) []string {
	t.Helper()
	var out []string
	for i := 1; i <= k; i++ {
		id := "fake" + string(rune('0'+i))
		if err := m.Register(Datanode{ID: id, Addr: id + ":1", Capacity: 1 << 62}); err != nil {
			t.Fatal(err)
		}
		out = append(out, id)
	}
	return out
}

func TestFakeReportsDoNotDeleteRealReplicas(t *testing.T) {
	tests := []struct {
		name string
		// report sends the fakes' claim to hold rep(1).
		report func(m *Manager, id string) bool
	}{
		{"full report", func(m *Manager, id string) bool { return m.FullReport(id, []Replica{rep(1)}) }},
		{"incremental report", func(m *Manager, id string) bool { return m.IncrementalReport(id, []Replica{rep(1)}, nil) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := newTestManager(t, 3)
			place(t, m, 1, 3, dn(1), dn(2), dn(3))
			for i := 1; i <= 3; i++ {
				m.Heartbeat(dn(i), 100*gib, 90*gib, 0) // real nodes look full
			}
			fakes := registerFakes(t, m, 3)
			for _, f := range fakes {
				if !tc.report(m, f) {
					t.Fatalf("report from %s refused", f)
				}
			}
			for i := 1; i <= 3; i++ {
				if !m.IsVerified(1, dn(i)) {
					t.Fatalf("real replica on %s not verified", dn(i))
				}
			}
			for _, f := range fakes {
				if m.IsVerified(1, f) {
					t.Fatalf("fake replica on %s verified", f)
				}
			}
			// Readers get the real replicas first.
			if l := ids(m.Locations(1)); !slices.Equal(sortedIDs(m.Locations(1)[:3]), []string{dn(1), dn(2), dn(3)}) {
				t.Fatalf("locations = %v, want the verified dn1..dn3 first", l)
			}
			m.ComputeWork()
			all := drainAll(m, 3)
			if len(all) != 0 {
				t.Fatalf("commands for real datanodes: %+v", all)
			}
			for _, f := range fakes {
				cs := commands(m, f)
				if len(cs) != 1 || cs[0].Kind != Delete || cs[0].Blocks[0].BlockID != 1 {
					t.Fatalf("%s commands = %+v, want a delete of block 1", f, cs)
				}
			}
			if l := sortedIDs(m.Locations(1)); !slices.Equal(l, []string{dn(1), dn(2), dn(3)}) {
				t.Fatalf("locations = %v", l)
			}
		})
	}
}

func TestOverReplicationWithoutVerifiedCopyVerifiesFirst(t *testing.T) {
	// A restarted namenode learns every replica from full reports: none is
	// verified, so nothing is deleted until a datanode confirms its copy.
	m, _ := newTestManager(t, 4)
	m.SetExpected(1, 1, 100, 2, true)
	for i := 1; i <= 4; i++ {
		m.FullReport(dn(i), []Replica{rep(1)})
	}
	m.Heartbeat(dn(4), 100*gib, 99*gib, 0) // the fullest
	m.ComputeWork()
	all := drainAll(m, 4)
	if d := deletes(all); len(d) != 0 {
		t.Fatalf("deleted with no verified copy: %v", d)
	}
	if v := verifies(all); len(v) != 4 {
		t.Fatalf("verifies = %v, want one per replica", v)
	}
	// Not ordered again while outstanding.
	m.ComputeWork()
	if all := drainAll(m, 4); len(all) != 0 {
		t.Fatalf("re-ordered while outstanding: %+v", all)
	}
	if st := m.Stats(); st.Verifying != 1 {
		t.Fatalf("stats = %+v", st)
	}
	// Only dn4 answers: one verified copy is fewer than the replication,
	// so nothing goes yet (the unverified ones may be the only real ones).
	if k := m.ReportVerified(dn(4), []Replica{rep(1)}); k != 1 {
		t.Fatalf("ReportVerified accepted %d", k)
	}
	m.ComputeWork()
	if d := deletes(drainAll(m, 4)); len(d) != 0 {
		t.Fatalf("deleted with 1 of 2 copies verified: %v", d)
	}
	// dn1 answers too: two verified, so the two unverified ones go, and
	// dn4 stays though it is the fullest.
	if k := m.ReportVerified(dn(1), []Replica{rep(1)}); k != 1 {
		t.Fatalf("ReportVerified accepted %d", k)
	}
	m.ComputeWork()
	d := deletes(drainAll(m, 4))
	if len(d) != 2 || d[dn(4)] != nil || d[dn(1)] != nil {
		t.Fatalf("deletes = %v, want dn2 and dn3", d)
	}
}

func TestReportVerifiedOnlyWhenAsked(t *testing.T) {
	m, clk := newTestManager(t, 2)
	m.SetExpected(1, 1, 100, 1, true)
	m.FullReport(dn(1), []Replica{rep(1)})
	m.FullReport(dn(2), []Replica{rep(1)})
	tests := []struct {
		name string
		dn   string
		r    Replica
	}{
		{"nobody asked", dn(1), rep(1)},
		{"unknown datanode", "nope", rep(1)},
		{"unknown block", dn(1), rep(7)},
	}
	for _, tc := range tests {
		if k := m.ReportVerified(tc.dn, []Replica{tc.r}); k != 0 || m.IsVerified(tc.r.BlockID, tc.dn) {
			t.Fatalf("%s: accepted", tc.name)
		}
	}
	m.ComputeWork() // over-replicated, no verified copy: verify both
	if v := verifies(drainAll(m, 2)); len(v) != 2 {
		t.Fatalf("verifies = %v", v)
	}
	wrong := rep(1)
	wrong.Length++
	if k := m.ReportVerified(dn(1), []Replica{wrong}); k != 0 {
		t.Fatal("answer about another length accepted")
	}
	// An answer after the verify was given up does not count either.
	clk.Advance(DefaultConfig().ReplicationTimeout)
	heartbeatAll(m, dn(1), dn(2))
	m.ComputeWork()
	drainAll(m, 2)
	clk.Advance(DefaultConfig().ReplicationTimeout)
	heartbeatAll(m, dn(1), dn(2))
	m.ComputeWork() // gives the second round up too, then orders a third
	if v := verifies(drainAll(m, 2)); len(v) != 2 {
		t.Fatalf("verifies were not ordered again after timing out: %v", v)
	}
	if k := m.ReportVerified(dn(2), []Replica{rep(1)}); k != 1 || !m.IsVerified(1, dn(2)) {
		t.Fatal("requested answer not accepted")
	}
	if got := m.Refused(RefusedVerified); got != 4 {
		t.Fatalf("refused verified = %d, want 4", got)
	}
}

func TestSuspectReplica(t *testing.T) {
	type step int
	const (
		answerVerified step = iota
		answerCorrupt
	)
	tests := []struct {
		name       string
		answer     step
		wantDelete bool
	}{
		{"healthy replica stays", answerVerified, false},
		{"corrupt replica is replaced, then deleted", answerCorrupt, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := newTestManager(t, 4)
			place(t, m, 1, 3, dn(1), dn(2), dn(3))
			if m.ReportSuspect(1, 2, dn(1)) || m.ReportSuspect(1, 1, dn(4)) || m.ReportSuspect(9, 1, dn(1)) {
				t.Fatal("suspect report of a replica not in the map accepted")
			}
			if !m.ReportSuspect(1, 1, dn(1)) {
				t.Fatal("ReportSuspect = false")
			}
			// Still good: counted and served (last), nothing under-replicated.
			if l := ids(m.Locations(1)); len(l) != 3 || l[2] != dn(1) {
				t.Fatalf("locations = %v, want dn1 last", l)
			}
			if st := m.Stats(); st.Replicas != 3 || st.UnderReplicated != 0 || st.Suspect != 1 {
				t.Fatalf("stats = %+v", st)
			}
			m.ComputeWork()
			all := drainAll(m, 4)
			if v := verifies(all); len(v) != 1 || !slices.Equal(v[dn(1)], []uint64{1}) || len(deletes(all)) != 0 {
				t.Fatalf("commands = %+v, want only a verify of block 1 on dn1", all)
			}
			switch tc.answer {
			case answerVerified:
				if m.ReportVerified(dn(1), []Replica{rep(1)}) != 1 {
					t.Fatal("answer not accepted")
				}
			case answerCorrupt:
				m.ReportCorrupt(1, dn(1))
			}
			m.ComputeWork()
			all = drainAll(m, 4)
			if tc.answer == answerCorrupt {
				_, cs := replicates(all)
				if len(cs) != 1 || cs[0].Targets[0].ID != dn(4) {
					t.Fatalf("want a replication to dn4, got %+v", all)
				}
				m.IncrementalReport(dn(4), []Replica{rep(1)}, nil)
				m.ComputeWork()
				all = drainAll(m, 4)
			}
			d := deletes(all)
			if got := len(d) == 1 && slices.Equal(d[dn(1)], []uint64{1}); got != tc.wantDelete || (!tc.wantDelete && len(d) != 0) {
				t.Fatalf("deletes = %v, want delete on dn1: %v", d, tc.wantDelete)
			}
			if st := m.Stats(); st.Suspect != 0 || st.Verifying != 0 || st.Replicas != 3 {
				t.Fatalf("stats = %+v", st)
			}
		})
	}
}

func TestLastReplicaNeverInvalidated(t *testing.T) {
	tests := []struct {
		name   string
		report func(m *Manager)
	}{
		{"client report", func(m *Manager) { m.ReportSuspect(1, 1, dn(1)) }},
		{"datanode report", func(m *Manager) { m.ReportCorrupt(1, dn(1)) }},
		{"client then datanode", func(m *Manager) { m.ReportSuspect(1, 1, dn(1)); m.ReportCorrupt(1, dn(1)) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, clk := newTestManager(t, 1) // nowhere to replicate to
			place(t, m, 1, 3, dn(1))
			tc.report(m)
			for round := 0; round < 3; round++ {
				m.ComputeWork()
				if d := deletes(drainAll(m, 1)); len(d) != 0 {
					t.Fatalf("round %d: last replica deleted: %v", round, d)
				}
				clk.Advance(time.Minute)
				heartbeatAll(m, dn(1))
			}
		})
	}
}

func TestCorruptWithOnlyUnverifiedGoodCopiesIsKept(t *testing.T) {
	// dn1 holds the real copy and finds it corrupt; fakes claim the block.
	// Until one of the claims is verified, the real (corrupt) copy stays.
	m, _ := newTestManager(t, 1)
	place(t, m, 1, 2, dn(1))
	fakes := registerFakes(t, m, 2)
	for _, f := range fakes {
		m.FullReport(f, []Replica{rep(1)})
	}
	m.ReportCorrupt(1, dn(1))
	m.ComputeWork()
	all := drainAll(m, 1)
	if d := deletes(all); len(d) != 0 {
		t.Fatalf("corrupt copy deleted with no verified good one: %v", d)
	}
	for _, f := range fakes {
		if cs := commands(m, f); len(cs) != 1 || cs[0].Kind != Verify {
			t.Fatalf("%s commands = %+v, want a verify", f, cs)
		}
	}
}

func TestReplicationTargetIsVerified(t *testing.T) {
	m, _ := newTestManager(t, 3)
	place(t, m, 1, 2, dn(1))
	// A full report of dn3 now would not be a write the namenode saw.
	m.ComputeWork()
	_, cs := replicates(drainAll(m, 3))
	if len(cs) != 1 {
		t.Fatalf("replicates = %+v", cs)
	}
	tgt := cs[0].Targets[0].ID
	m.IncrementalReport(tgt, []Replica{rep(1)}, nil)
	if !m.IsVerified(1, tgt) {
		t.Fatalf("replication target %s not verified", tgt)
	}
	// Past the replication, a received report is no longer a pipeline write.
	other := dn(2)
	if tgt == dn(2) {
		other = dn(3)
	}
	m.IncrementalReport(other, []Replica{rep(1)}, nil)
	if m.IsVerified(1, other) {
		t.Fatalf("surplus replica on %s verified", other)
	}
	// A new generation resets verification.
	m.SetExpected(1, 2, 100, 2, true)
	if m.IsVerified(1, dn(1)) {
		t.Fatal("stale replica still verified")
	}
}

func TestReset(t *testing.T) {
	m, _ := newTestManager(t, 2)
	const n = resetBatch + 10 // more than one batch
	for id := uint64(1); id <= n; id++ {
		m.SetExpected(id, 1, 100, 2, true)
	}
	m.IncrementalReport(dn(1), []Replica{rep(1), rep(2), rep(n)}, nil)
	m.IncrementalReport(dn(2), []Replica{rep(2), rep(n + 5)}, nil) // n+5: unknown
	// The restored namespace has only the even blocks, and a new one.
	r := m.BeginReset()
	for id := uint64(2); id <= n; id += 2 {
		r.Add(ExpectedBlock{ID: id, GenStamp: 1, Inode: 100, Replication: 2, Complete: true})
	}
	r.Add(ExpectedBlock{ID: n + 1, GenStamp: 1, Inode: 100, Replication: 1})
	if got := r.Finish(); got != n/2 {
		t.Fatalf("forgot %d blocks, want %d", got, n/2)
	}
	st := m.Stats()
	if st.Blocks != n/2+1 || st.Unknown != 1 {
		t.Fatalf("stats = %+v, want %d blocks, 1 unknown", st, n/2+1)
	}
	if l := m.Locations(1); len(l) != 0 {
		t.Fatalf("forgotten block served: %v", ids(l))
	}
	if l := sortedIDs(m.Locations(2)); !slices.Equal(l, []string{dn(1), dn(2)}) {
		t.Fatalf("kept block locations = %v", l)
	}
	// The replicas of forgotten blocks are deletion work for the leader.
	m.ComputeWork()
	d := deletes(drainAll(m, 2))
	if !slices.Equal(d[dn(1)], []uint64{1}) || len(d[dn(2)]) != 0 {
		t.Fatalf("deletes = %v, want block 1 on dn1", d)
	}
}
