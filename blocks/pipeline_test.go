package blocks

import "testing"

// TestPipelineDecidesVerified: while a block is written, only the datanodes
// chosen for its pipeline become verified by reporting it received, even a
// fake that reports first; after the block completes the record is gone.
func TestPipelineDecidesVerified(t *testing.T) {
	m, _ := newTestManager(t, 3)
	fakes := registerFakes(t, m, 1)
	m.SetExpected(1, 1, 100, 3, false)
	m.SetPipeline(1, []string{dn(1), dn(2), dn(3), "never-registered"})
	// The fake races the pipeline: its report arrives first.
	for _, id := range append(fakes, dn(1), dn(2), dn(3)) {
		if !m.IncrementalReport(id, []Replica{rep(1)}, nil) {
			t.Fatalf("report from %s refused", id)
		}
	}
	if m.IsVerified(1, fakes[0]) {
		t.Fatal("a datanode outside the pipeline became verified")
	}
	for i := 1; i <= 3; i++ {
		if !m.IsVerified(1, dn(i)) {
			t.Fatalf("pipeline member %s not verified", dn(i))
		}
	}
	m.SetExpected(1, 1, 100, 3, true)
	s := m.shard(1)
	s.mu.Lock()
	_, still := s.writing[1]
	s.mu.Unlock()
	if still {
		t.Fatal("pipeline record kept after the block completed")
	}
	// A pipeline for a block already complete is not recorded.
	m.SetPipeline(1, []string{fakes[0]})
	s.mu.Lock()
	_, still = s.writing[1]
	s.mu.Unlock()
	if still {
		t.Fatal("pipeline recorded for a complete block")
	}
	// Forgetting a block under construction drops its record too.
	m.SetExpected(2, 1, 100, 3, false)
	m.SetPipeline(2, []string{dn(1)})
	m.Forget(2)
	s = m.shard(2)
	s.mu.Lock()
	_, still = s.writing[2]
	s.mu.Unlock()
	if still {
		t.Fatal("pipeline record kept after Forget")
	}
}
