package blocks

import (
	"fmt"
	"testing"
)

// newRackManager registers racks x perRack datanodes, dn<r>-<i> in rack
// /r<r>, each with 100 GiB free.
func newRackManager(t testing.TB, racks, perRack int) *Manager {
	t.Helper()
	m, _ := newTestManager(t, 0)
	for r := range racks {
		for i := range perRack {
			d := Datanode{ID: fmt.Sprintf("dn%d-%d", r, i), Addr: fmt.Sprintf("10.%d.0.%d:9866", r, i), Rack: fmt.Sprintf("/r%d", r), Capacity: 100 * gib}
			if err := m.Register(d); err != nil {
				t.Fatal(err)
			}
		}
	}
	return m
}

func rackCounts(ds []Datanode) map[string]int {
	out := map[string]int{}
	for _, d := range ds {
		out[d.rackOrDefault()]++
	}
	return out
}

// TestChooseTargetsRacks: HDFS's default policy. Three replicas span two
// racks, the second in another rack than the first and the third beside
// the second; the writer's datanode comes first; more replicas keep at
// most (replicas-1)/racks + 2 in a rack; one rack places as before.
func TestChooseTargetsRacks(t *testing.T) {
	m := newRackManager(t, 3, 4)
	for trial := range 300 {
		got, err := m.ChooseTargets(3, blkSize, nil, "")
		if err != nil || len(got) != 3 {
			t.Fatalf("trial %d: %v %v", trial, ids(got), err)
		}
		if got[0].Rack == got[1].Rack || got[1].Rack != got[2].Rack || got[1].ID == got[2].ID {
			t.Fatalf("trial %d: racks %s %s %s", trial, got[0].Rack, got[1].Rack, got[2].Rack)
		}
	}
	for trial := range 50 {
		got, _ := m.ChooseTargets(3, blkSize, nil, "dn2-3")
		if got[0].ID != "dn2-3" || got[1].Rack == "/r2" {
			t.Fatalf("trial %d: writer dn2-3 got %v", trial, ids(got))
		}
	}
	// The writer that is full is not first.
	m.Heartbeat("dn2-3", 100*gib, 100*gib, 0)
	if got, _ := m.ChooseTargets(1, blkSize, nil, "dn2-3"); got[0].ID == "dn2-3" {
		t.Fatal("a full writer took the first replica")
	}
	for trial := range 100 {
		got, _ := m.ChooseTargets(7, blkSize, nil, "")
		for rack, n := range rackCounts(got) {
			if max := (7-1)/3 + 2; n > max {
				t.Fatalf("trial %d: %d replicas in %s, at most %d", trial, n, rack, max)
			}
		}
	}
	// Excluding a whole rack still places all three, on the other two.
	ex := []string{"dn0-0", "dn0-1", "dn0-2", "dn0-3"}
	for trial := range 50 {
		got, _ := m.ChooseTargets(3, blkSize, ex, "")
		if len(got) != 3 || rackCounts(got)["/r0"] != 0 || len(rackCounts(got)) != 2 {
			t.Fatalf("trial %d: %v", trial, ids(got))
		}
	}
	// One rack: three distinct nodes, no rule to break.
	one := newRackManager(t, 1, 3)
	if got, _ := one.ChooseTargets(3, blkSize, nil, ""); len(got) != 3 {
		t.Fatalf("one rack: %v", ids(got))
	}
}

// TestReplicationSpreadsRacks: a block whose two replicas share a rack
// gets its third in another rack; racks count replicas it has.
func TestReplicationSpreadsRacks(t *testing.T) {
	m := newRackManager(t, 2, 3)
	have := []*node{m.lookup("dn0-0"), m.lookup("dn0-1")}
	for trial := range 100 {
		got := m.choose(1, blkSize, have, nil, nil)
		if len(got) != 1 || got[0].d.Rack != "/r1" {
			t.Fatalf("trial %d: %v", trial, got)
		}
	}
}

// TestRelocate: a reloaded topology moves datanodes between racks, and
// placement follows at once.
func TestRelocate(t *testing.T) {
	m := newRackManager(t, 1, 4)
	if r := m.Racks(); len(r) != 1 {
		t.Fatalf("racks %v", r)
	}
	m.Relocate(func(id, addr string) string {
		if id == "dn0-0" || id == "dn0-1" {
			return "/a"
		}
		return "/b"
	})
	if r := m.Racks(); len(r) != 2 || r[0] != "/a" || r[1] != "/b" {
		t.Fatalf("racks after relocate %v", r)
	}
	for trial := range 50 {
		got, _ := m.ChooseTargets(3, blkSize, nil, "")
		if len(rackCounts(got)) != 2 {
			t.Fatalf("trial %d: %v in one rack", trial, ids(got))
		}
	}
	// A datanode registering again in another rack moves too.
	d, _ := m.Datanode("dn0-2")
	d.Rack = "/c"
	if err := m.Register(d); err != nil {
		t.Fatal(err)
	}
	if r := m.Racks(); len(r) != 3 {
		t.Fatalf("racks after re-register %v", r)
	}
}

// BenchmarkChooseTargets measures one AddBlock's target choice (3
// replicas, HDFS's policy over 10 racks) as the cluster grows; ns/op at
// 10,000 datanodes should stay within 2x of 10.
func BenchmarkChooseTargets(b *testing.B) {
	for _, n := range []int{10, 100, 1000, 10000} {
		b.Run(fmt.Sprintf("datanodes=%d", n), func(b *testing.B) {
			racks := min(10, n)
			m := newRackManager(b, racks, n/racks)
			// Usage as a real cluster has it: not all alike.
			for i, d := range m.Datanodes() {
				m.Heartbeat(d.ID, 100*gib, uint64(i%50)*gib, 0)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.ChooseTargets(3, blkSize, nil, ""); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestMisReplicatedFixed: a block with its three replicas in one rack of
// two (placed before a topology change, say) is counted mis-replicated;
// the monitor copies it to the other rack, then deletes an excess replica
// from the crowded rack, never the lone one in the other.
func TestMisReplicatedFixed(t *testing.T) {
	m := newRackManager(t, 2, 3)
	place(t, m, 1, 3, "dn0-0", "dn0-1", "dn0-2")
	if st := m.Stats(); st.MisReplicated != 1 || st.UnderReplicated != 0 {
		t.Fatalf("stats %+v", st)
	}
	m.ComputeWork()
	var target string
	for _, src := range []string{"dn0-0", "dn0-1", "dn0-2"} {
		for _, c := range m.PendingCommands(src) {
			if c.Kind == Replicate && len(c.Targets) == 1 {
				target = c.Targets[0].ID
			}
		}
	}
	if target == "" || target[:3] != "dn1" {
		t.Fatalf("replication target %q, want one in /r1", target)
	}
	if !m.IncrementalReport(target, []Replica{rep(1)}, nil) {
		t.Fatal("report refused")
	}
	m.ComputeWork()
	deleted := ""
	for _, id := range []string{"dn0-0", "dn0-1", "dn0-2", target} {
		for _, c := range m.PendingCommands(id) {
			if c.Kind == Delete {
				deleted = id
			}
		}
	}
	if deleted == "" || deleted == target {
		t.Fatalf("deleted from %q, want one of rack /r0", deleted)
	}
	if st := m.Stats(); st.MisReplicated != 0 {
		t.Fatalf("still mis-replicated: %+v", st)
	}
}
