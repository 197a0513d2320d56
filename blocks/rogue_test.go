package blocks

import (
	"slices"
	"testing"
)

// Issue 21, finding 3: after a namenode restart no replica is verified, and
// three fake datanodes reporting the real block "received" were counted
// verified (the block had fewer verified copies than its replication), so
// the three real, unverified replicas ranked first for deletion as excess.
func TestFakeReceivedAfterRestartDeletesNoRealReplica(t *testing.T) {
	m, _ := newTestManager(t, 3) // a restarted namenode: an empty map
	fakes := registerFakes(t, m, 3)
	m.SetExpected(1, 1, 100, 3, true)
	for i := 1; i <= 3; i++ {
		m.FullReport(dn(i), []Replica{rep(1)})
	}
	for _, f := range fakes {
		m.IncrementalReport(f, []Replica{rep(1)}, nil)
		if m.IsVerified(1, f) {
			t.Fatalf("%s verified by a received report without a pipeline", f)
		}
	}
	real := []string{dn(1), dn(2), dn(3)}
	var gone []string
	for round := 0; round < 3; round++ {
		m.ComputeWork()
		for _, id := range real {
			for _, c := range commands(m, id) {
				switch c.Kind {
				case Delete:
					t.Fatalf("round %d: real replica on %s deleted: %+v", round, id, c)
				case Verify:
					m.ReportVerified(id, []Replica{c.Block})
				}
			}
		}
		for _, f := range fakes { // the fakes answer nothing
			for _, c := range commands(m, f) {
				if c.Kind == Delete {
					gone = append(gone, f)
				}
			}
		}
	}
	// Once the three real replicas are verified, the fakes are the excess.
	slices.Sort(gone)
	if !slices.Equal(gone, fakes) {
		t.Fatalf("deleted on %v, want every fake", gone)
	}
	for _, id := range real {
		if !m.IsVerified(1, id) {
			t.Fatalf("real replica on %s not verified", id)
		}
	}
}

// Issue 21, finding 2 (the block map's half): a datanode that only reports
// a replica of a block being written is not among its pipeline, which block
// recovery chooses its primary from.
func TestReporterIsNotPipeline(t *testing.T) {
	m, _ := newTestManager(t, 3)
	m.Register(Datanode{ID: "dn0rogue", Addr: "rogue:1", Capacity: 1 << 40})
	m.SetExpected(1, 1, 100, 3, false)
	m.SetPipeline(1, []string{dn(3), dn(1), dn(2)})
	m.IncrementalReport("dn0rogue", []Replica{rep(1)}, nil)
	got, known := m.Pipeline(1)
	if !known || !slices.Equal(ids(got), []string{dn(3), dn(1), dn(2)}) {
		t.Fatalf("Pipeline = %v %v, want dn3 dn1 dn2 in pipeline order", ids(got), known)
	}
	if _, known := m.Pipeline(2); known {
		t.Fatal("a pipeline for a block never written")
	}
}

// TestPipelineKeptForLateReports: Complete may commit before the
// pipeline's reports arrive; they still verify, and the record goes once
// every member has.
func TestPipelineKeptForLateReports(t *testing.T) {
	m, _ := newTestManager(t, 3)
	m.SetExpected(1, 1, 100, 3, false)
	m.SetPipeline(1, []string{dn(1), dn(2), dn(3), "not-yet-registered"})
	m.SetExpected(1, 1, 100, 3, true)
	for i := 1; i <= 3; i++ {
		m.IncrementalReport(dn(i), []Replica{rep(1)}, nil)
		if !m.IsVerified(1, dn(i)) {
			t.Fatalf("late report from pipeline member %s not verified", dn(i))
		}
	}
	if _, known := m.Pipeline(1); known {
		t.Fatal("pipeline record kept after every live member reported")
	}
}
