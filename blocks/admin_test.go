package blocks

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blockfs/blockfs/errs"
)

// fullReport sends datanode id's full report of the blocks given.
func fullReport(t *testing.T, m *Manager, id string, blocks ...uint64) {
	t.Helper()
	rs := make([]Replica, len(blocks))
	for i, b := range blocks {
		rs[i] = rep(b)
	}
	if !m.FullReport(id, rs) {
		t.Fatalf("full report from %s refused", id)
	}
}

// runReplications runs ComputeWork and makes every replicate command it
// queued land: its targets report the block received. It returns the
// targets and the sources used.
func runReplications(t *testing.T, m *Manager, who []string) (targets, sources []string) {
	t.Helper()
	m.ComputeWork()
	for _, id := range who {
		for _, c := range commands(m, id) {
			if c.Kind == Delete && len(c.Blocks) > 0 {
				t.Fatalf("%s was told to delete %v", id, c.Blocks)
			}
			if c.Kind != Replicate {
				continue
			}
			sources = append(sources, id)
			for _, d := range c.Targets {
				targets = append(targets, d.ID)
				if !m.IncrementalReport(d.ID, []Replica{c.Block}, nil) {
					t.Fatalf("report from %s refused", d.ID)
				}
			}
		}
	}
	return targets, sources
}

// TestDecommissionCounting: the replicas of a decommissioning datanode are
// served (last) but do not count, so its blocks are re-replicated onto
// normal nodes respecting racks, never onto it, never deleted from it as
// excess; it is done only when every block has its full replication
// elsewhere; recommissioning makes its copies count again.
func TestDecommissionCounting(t *testing.T) {
	m := newRackManager(t, 2, 3)
	all := ids(m.Datanodes())
	const x = "dn0-0"
	var held []uint64
	for id := uint64(1); id <= 20; id++ {
		place(t, m, id, 3, x, "dn1-0", "dn1-1")
		held = append(held, id)
	}
	for _, id := range all {
		var mine []uint64
		for _, b := range held {
			if id == x || id == "dn1-0" || id == "dn1-1" {
				mine = append(mine, b)
			}
		}
		fullReport(t, m, id, mine...)
	}
	if p, ok := m.AdminProgress(x, true); ok {
		t.Fatalf("a normal node has progress %+v", p)
	}
	if st := m.Stats(); st.UnderReplicated != 0 {
		t.Fatalf("under-replicated before: %d", st.UnderReplicated)
	}
	m.SetAdminStates(map[string]Admin{x: {State: AdminDecommissioning}})
	if d, _ := m.Datanode(x); d.Admin.State != AdminDecommissioning {
		t.Fatalf("state %v", d.Admin.State)
	}
	if st := m.Stats(); st.UnderReplicated != 20 {
		t.Fatalf("under-replicated after decommission: %d, want 20", st.UnderReplicated)
	}
	if locs := ids(m.Locations(1)); len(locs) != 3 || locs[2] != x {
		t.Fatalf("locations %v: the decommissioning replica must be served, last", locs)
	}
	for range 200 {
		got, _ := m.ChooseTargets(3, blkSize, nil, x)
		if slices.Contains(ids(got), x) {
			t.Fatalf("a decommissioning node was chosen: %v", ids(got))
		}
	}
	p, _ := m.AdminProgress(x, true)
	if p.Done() || p.Blocks != 20 || p.Bytes != 20*blkSize || !p.Reported {
		t.Fatalf("progress %+v", p)
	}
	for round := 0; round < 20 && m.Stats().UnderReplicated+m.Stats().PendingReplication > 0; round++ {
		targets, _ := runReplications(t, m, all)
		for _, tg := range targets {
			if tg == x || !strings.HasPrefix(tg, "dn0-") {
				// The block keeps dn1-0, dn1-1: its third copy must go to rack 0.
				t.Fatalf("replication target %s", tg)
			}
		}
	}
	p, _ = m.AdminProgress(x, true)
	if !p.Done() {
		t.Fatalf("progress after re-replication %+v", p)
	}
	for _, b := range held {
		locs := ids(m.Locations(b))
		if len(locs) != 4 || locs[3] != x {
			t.Fatalf("block %d locations %v", b, locs)
		}
	}
	if st := m.Stats(); st.OverReplicated != 0 {
		t.Fatalf("over-replicated while decommissioned: %d (its copies must not be excess)", st.OverReplicated)
	}
	m.SetAdminStates(map[string]Admin{x: {State: AdminDecommissioned}})
	m.ComputeWork()
	if cs := commands(m, x); len(cs) != 0 {
		t.Fatalf("commands for the decommissioned node: %v", cs)
	}
	// Back to normal: its copies count again, the blocks are over.
	m.SetAdminStates(nil)
	if st := m.Stats(); st.OverReplicated != 20 {
		t.Fatalf("over-replicated after recommission: %d", st.OverReplicated)
	}
}

// TestDecommissionOpenBlocks (HDFS-17658): a block being written through
// the decommissioning node, not yet reported, and the last block of an
// open file hold it back until they are complete and copied.
func TestDecommissionOpenBlocks(t *testing.T) {
	m, _ := newTestManager(t, 5)
	all := []string{dn(1), dn(2), dn(3), dn(4), dn(5)}
	x := dn(1)
	// Block 1: mid-write, nobody has reported it.
	m.SetExpected(1, 1, 100, 3, false)
	m.SetPipeline(1, []string{x, dn(2), dn(3)})
	// Block 2: hflushed, open; the node reported its replica.
	m.SetExpected(2, 1, 200, 3, false)
	m.SetPipeline(2, []string{dn(2), x, dn(4)})
	for _, id := range []string{x, dn(2), dn(4)} {
		m.IncrementalReport(id, []Replica{{BlockID: 2, GenStamp: 1, Length: blkSize, Inode: 200}}, nil)
	}
	for _, id := range all {
		if !m.FullReport(id, nil) && id != x {
			t.Fatal("report refused")
		}
	}
	m.IncrementalReport(x, []Replica{{BlockID: 2, GenStamp: 1, Length: blkSize, Inode: 200}}, nil)
	m.IncrementalReport(dn(2), []Replica{{BlockID: 2, GenStamp: 1, Length: blkSize, Inode: 200}}, nil)
	m.IncrementalReport(dn(4), []Replica{{BlockID: 2, GenStamp: 1, Length: blkSize, Inode: 200}}, nil)
	m.SetAdminStates(map[string]Admin{x: {State: AdminDecommissioning}})
	p, _ := m.AdminProgress(x, true)
	if p.Done() || p.UnderConstruction != 2 || p.OpenFiles != 2 || p.Blocks != 2 {
		t.Fatalf("progress with two open blocks %+v", p)
	}
	for range 3 {
		runReplications(t, m, all)
	}
	if p, _ := m.AdminProgress(x, true); p.Done() {
		t.Fatalf("done while blocks are open: %+v", p)
	}
	// The writers finish: the replicas are reported, the files complete.
	for _, id := range []string{x, dn(2), dn(3)} {
		m.IncrementalReport(id, []Replica{rep(1)}, nil)
	}
	m.SetExpected(1, 1, 100, 3, true)
	m.SetExpected(2, 1, 200, 3, true)
	if p, _ := m.AdminProgress(x, true); p.Done() || p.UnderConstruction != 0 || p.Blocks != 2 {
		t.Fatalf("closed but not copied: %+v", p)
	}
	for range 5 {
		runReplications(t, m, all)
	}
	if p, _ := m.AdminProgress(x, true); !p.Done() {
		t.Fatalf("not done once copied: %+v", p)
	}
}

// TestMaintenanceNoCopies: a block with a replica in maintenance is not
// re-replicated while enough normal copies remain, even when the node
// dies; its replicas are not served while it is dead; ending maintenance
// of a dead node brings the normal rules back.
func TestMaintenanceNoCopies(t *testing.T) {
	m, clk := newTestManager(t, 4)
	all := []string{dn(1), dn(2), dn(3), dn(4)}
	x := dn(1)
	for id := uint64(1); id <= 5; id++ {
		place(t, m, id, 3, x, dn(2), dn(3))
	}
	m.SetAdminStates(map[string]Admin{x: {State: AdminEnteringMaintenance, Expiry: clk.Now().Add(time.Hour), MinReplicas: 1}})
	fullReport(t, m, x, 1, 2, 3, 4, 5)
	if p, _ := m.AdminProgress(x, true); !p.Done() {
		t.Fatalf("entering maintenance with 2 normal copies each: %+v", p)
	}
	m.SetAdminStates(map[string]Admin{x: {State: AdminInMaintenance, Expiry: clk.Now().Add(time.Hour), MinReplicas: 1}})
	for range 2 { // two heartbeats
		clk.Advance(3 * time.Second)
		heartbeatAll(m, all...)
		if tg, _ := runReplications(t, m, all); len(tg) != 0 {
			t.Fatalf("maintenance scheduled copies to %v", tg)
		}
	}
	// It dies: still no copies, and it is not served.
	clk.Advance(time.Minute)
	heartbeatAll(m, dn(2), dn(3), dn(4))
	m.CheckLiveness()
	if d, _ := m.Datanode(x); d.State != Dead {
		t.Fatal("not dead")
	}
	if tg, _ := runReplications(t, m, all); len(tg) != 0 {
		t.Fatalf("the death of a node in maintenance scheduled copies to %v", tg)
	}
	if locs := ids(m.Locations(1)); slices.Contains(locs, x) {
		t.Fatalf("dead maintenance node served: %v", locs)
	}
	// With min-replicas 3 the two normal copies are not enough.
	m.SetAdminStates(map[string]Admin{x: {State: AdminInMaintenance, MinReplicas: 3}})
	if st := m.Stats(); st.UnderReplicated != 5 {
		t.Fatalf("min-replicas 3: under-replicated %d, want 5", st.UnderReplicated)
	}
	m.SetAdminStates(map[string]Admin{x: {State: AdminInMaintenance, MinReplicas: 1}})
	// Maintenance ends while it is dead: its replicas go, copies follow.
	m.SetAdminStates(nil)
	if st := m.Stats(); st.UnderReplicated != 5 {
		t.Fatalf("after maintenance of a dead node: under-replicated %d, want 5", st.UnderReplicated)
	}
	if tg, _ := runReplications(t, m, all); len(tg) != 5 {
		t.Fatalf("copies after maintenance: %v", tg)
	}
}

// TestCheckDecommission: every bad input is refused with its kind, names
// the blocks, and changes nothing.
func TestCheckDecommission(t *testing.T) {
	m := newRackManager(t, 2, 3)
	// One more rack of a single node.
	if err := m.Register(Datanode{ID: "lone", Addr: "10.9.0.1:9866", Rack: "/r9", Capacity: 100 * gib}); err != nil {
		t.Fatal(err)
	}
	for id := uint64(1); id <= 12; id++ {
		place(t, m, id, 3, "dn0-0", "dn1-0", "dn1-1")
	}
	place(t, m, 100, 2, "lone", "dn0-1")
	for _, id := range ids(m.Datanodes()) {
		heartbeatAll(m, id)
	}
	tests := []struct {
		name  string
		ids   []string
		kind  errs.Kind
		named []string
	}{
		{"unknown", []string{"nope"}, errs.Invalid, nil},
		{"none", nil, errs.Invalid, nil},
		{"too many", []string{"dn0-0", "dn0-1", "dn0-2", "dn1-0", "dn1-1"}, errs.Precondition, []string{"12 blocks", "first [1 2 3 4 5 6 7 8 9 10] and 2 more"}},
		{"one rack left", []string{"dn1-0", "dn1-1", "dn1-2", "lone"}, errs.Precondition, []string{"all in one rack", "13 blocks"}},
		{"fine", []string{"dn0-0"}, 0, nil},
		{"fine too", []string{"lone", "dn0-1"}, 0, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := m.Stats()
			err := m.CheckDecommission(tc.ids)
			if tc.kind == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var e *errs.Error
			if !errors.As(err, &e) || e.Kind != tc.kind {
				t.Fatalf("got %v, want kind %v", err, tc.kind)
			}
			for _, s := range tc.named {
				if !strings.Contains(err.Error(), s) {
					t.Fatalf("%q does not say %q", err, s)
				}
			}
			if after := m.Stats(); after != before {
				t.Fatalf("stats changed: %+v -> %+v", before, after)
			}
			for _, d := range m.Datanodes() {
				if d.Admin.State != AdminNormal {
					t.Fatalf("%s is %v", d.ID, d.Admin.State)
				}
			}
		})
	}
	// A dead datanode.
	m2, clk2 := newTestManager(t, 4)
	clk2.Advance(time.Hour)
	heartbeatAll(m2, dn(1), dn(2), dn(3))
	m2.CheckLiveness()
	if err := m2.CheckDecommission([]string{dn(4)}); errs.KindOf(err) != errs.Precondition || !strings.Contains(err.Error(), "dead") {
		t.Fatalf("dead: %v", err)
	}
	if err := m2.CheckMaintenance([]string{dn(4)}); errs.KindOf(err) != errs.Precondition {
		t.Fatalf("maintenance of a dead node: %v", err)
	}
}

// TestAdminStateBeforeRegister: a datanode that registers after the table
// names it takes its state from the table.
func TestAdminStateBeforeRegister(t *testing.T) {
	m, _ := newTestManager(t, 3)
	m.SetAdminStates(map[string]Admin{"late": {State: AdminDecommissioning}})
	if err := m.Register(Datanode{ID: "late", Addr: "10.0.0.9:9866", Capacity: 100 * gib}); err != nil {
		t.Fatal(err)
	}
	d, _ := m.Datanode("late")
	if d.Admin.State != AdminDecommissioning {
		t.Fatalf("state %v", d.Admin.State)
	}
	for range 100 {
		got, _ := m.ChooseTargets(3, blkSize, nil, "")
		if slices.Contains(ids(got), "late") {
			t.Fatal("chosen")
		}
	}
	if c := m.AdminCounts(); c[AdminDecommissioning] != 1 || c[AdminNormal] != 3 {
		t.Fatalf("counts %v", c)
	}
}
