package blocks

import "testing"

// TestSafeBlocks: safe mode's counts follow the map: complete blocks, and
// those with a good replica; blocks under construction count in neither,
// and a replica lost or a block forgotten comes off.
func TestSafeBlocks(t *testing.T) {
	m, _ := newTestManager(t, 3)
	check := func(what string, safe, total int) {
		t.Helper()
		if s, n := m.SafeBlocks(); s != safe || n != total {
			t.Fatalf("%s: safe %d of %d, want %d of %d", what, s, n, safe, total)
		}
	}
	check("empty", 0, 0)
	place(t, m, 1, 3, dn(1), dn(2))
	m.SetExpected(2, 1, 100, 3, true) // complete, no replica reported yet
	m.SetExpected(3, 1, 100, 3, false)
	check("one safe, one not, one under construction", 1, 2)
	if !m.FullReport(dn(3), []Replica{rep(2)}) {
		t.Fatal("report refused")
	}
	check("block 2 reported", 2, 2)
	if !m.FullReport(dn(3), nil) {
		t.Fatal("report refused")
	}
	check("dn3 dropped block 2", 1, 2)
	m.Forget(1)
	check("block 1 forgotten", 0, 1)
}
