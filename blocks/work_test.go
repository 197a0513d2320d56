package blocks

import (
	"slices"
	"testing"
	"time"
)

// drainAll returns every queued command of datanodes dn1..dnN by node.
func drainAll(m *Manager, nodes int) map[string][]Command {
	out := map[string][]Command{}
	for i := 1; i <= nodes; i++ {
		if cs := commands(m, dn(i)); len(cs) > 0 {
			out[dn(i)] = cs
		}
	}
	return out
}

// deletes returns, by datanode, the block ids in Delete commands.
func deletes(all map[string][]Command) map[string][]uint64 {
	out := map[string][]uint64{}
	for id, cs := range all {
		for _, c := range cs {
			if c.Kind == Delete {
				for _, r := range c.Blocks {
					out[id] = append(out[id], r.BlockID)
				}
			}
		}
	}
	return out
}

func replicates(all map[string][]Command) (src []string, cs []Command) {
	for id, cmds := range all {
		for _, c := range cmds {
			if c.Kind == Replicate {
				src = append(src, id)
				cs = append(cs, c)
			}
		}
	}
	return src, cs
}

func TestReplicationScheduling(t *testing.T) {
	m, clk := newTestManager(t, 5)
	place(t, m, 1, 3, dn(1), dn(2))
	if got := m.UnderReplicated(); !slices.Equal(got, []uint64{1}) {
		t.Fatalf("under = %v", got)
	}
	m.ComputeWork()
	src, cs := replicates(drainAll(m, 5))
	if len(cs) != 1 {
		t.Fatalf("want 1 replicate command, got %d", len(cs))
	}
	c := cs[0]
	if src[0] != dn(1) && src[0] != dn(2) {
		t.Fatalf("source %s does not hold the block", src[0])
	}
	if c.Block != rep(1) {
		t.Fatalf("block = %+v, want %+v", c.Block, rep(1))
	}
	if len(c.Targets) != 1 || c.Targets[0].ID == dn(1) || c.Targets[0].ID == dn(2) {
		t.Fatalf("targets %v must be one datanode not holding the block", ids(c.Targets))
	}
	if st := m.Stats(); st.PendingReplication != 1 || st.UnderReplicated != 0 {
		t.Fatalf("stats after scheduling = %+v", st)
	}
	// Not re-issued before the timeout...
	clk.Advance(DefaultConfig().ReplicationTimeout - time.Second)
	heartbeatAll(m, dn(1), dn(2), dn(3), dn(4), dn(5))
	m.ComputeWork()
	if _, cs := replicates(drainAll(m, 5)); len(cs) != 0 {
		t.Fatalf("re-issued before timeout: %+v", cs)
	}
	// ...but after it.
	clk.Advance(time.Second)
	m.ComputeWork()
	_, cs = replicates(drainAll(m, 5))
	if len(cs) != 1 {
		t.Fatalf("want the replication re-issued after timeout, got %d", len(cs))
	}
	// The target reports the replica: done, nothing more to do.
	target := cs[0].Targets[0].ID
	m.IncrementalReport(target, []Replica{rep(1)}, nil)
	if st := m.Stats(); st.PendingReplication != 0 || st.UnderReplicated != 0 {
		t.Fatalf("stats after completion = %+v", st)
	}
	if live, exp := m.NeededReplication(1); live != 3 || exp != 3 {
		t.Fatalf("live/expected = %d/%d", live, exp)
	}
	clk.Advance(time.Hour)
	heartbeatAll(m, dn(1), dn(2), dn(3), dn(4), dn(5))
	m.ComputeWork()
	if all := drainAll(m, 5); len(all) != 0 {
		t.Fatalf("unexpected commands %+v", all)
	}
}

func TestReplicationNeedsTwo(t *testing.T) {
	m, _ := newTestManager(t, 5)
	place(t, m, 1, 3, dn(3))
	m.ComputeWork()
	src, cs := replicates(drainAll(m, 5))
	if len(cs) != 1 || src[0] != dn(3) {
		t.Fatalf("want one command on dn3, got %v %+v", src, cs)
	}
	got := sortedIDs(cs[0].Targets)
	if len(got) != 2 || slices.Contains(got, dn(3)) || got[0] == got[1] {
		t.Fatalf("targets = %v", got)
	}
}

func TestReplicationStreamsAndCommandLimit(t *testing.T) {
	clk := newFakeClock()
	cfg := testConfig(clk)
	cfg.MaxReplicationStreams = 2
	cfg.MaxCommandsPerHeartbeat = 1
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 4; i++ {
		m.Register(Datanode{ID: dn(i), Capacity: 100 * gib})
	}
	for id := uint64(1); id <= 10; id++ {
		place(t, m, id, 2, dn(1)) // dn1 is the only source
	}
	m.ComputeWork()
	if st := m.Stats(); st.PendingReplication != 2 || st.UnderReplicated != 8 {
		t.Fatalf("stats = %+v, want 2 pending (stream limit), 8 waiting", st)
	}
	if cs := m.PendingCommands(dn(1)); len(cs) != 1 {
		t.Fatalf("first heartbeat got %d commands, want 1", len(cs))
	}
	if cs := m.PendingCommands(dn(1)); len(cs) != 1 {
		t.Fatalf("second heartbeat got %d commands, want 1", len(cs))
	}
	if cs := m.PendingCommands(dn(1)); len(cs) != 0 {
		t.Fatalf("third heartbeat got %d commands, want 0", len(cs))
	}
}

func TestOverReplication(t *testing.T) {
	m, _ := newTestManager(t, 4)
	// Written to four (all verified), then the replication lowered to two.
	place(t, m, 1, 4, dn(1), dn(2), dn(3), dn(4))
	m.SetExpected(1, 1, 100, 2, true)
	m.Heartbeat(dn(1), 100*gib, 10*gib, 0)
	m.Heartbeat(dn(2), 100*gib, 95*gib, 0) // fullest
	m.Heartbeat(dn(3), 100*gib, 80*gib, 0) // next fullest
	m.Heartbeat(dn(4), 100*gib, 20*gib, 0)
	if st := m.Stats(); st.OverReplicated != 1 {
		t.Fatalf("stats = %+v", st)
	}
	m.ComputeWork()
	got := deletes(drainAll(m, 4))
	want := map[string][]uint64{dn(2): {1}, dn(3): {1}}
	if len(got) != 2 || !slices.Equal(got[dn(2)], want[dn(2)]) || !slices.Equal(got[dn(3)], want[dn(3)]) {
		t.Fatalf("deletes = %v, want %v", got, want)
	}
	if l := sortedIDs(m.Locations(1)); !slices.Equal(l, []string{dn(1), dn(4)}) {
		t.Fatalf("locations = %v", l)
	}
	if st := m.Stats(); st.OverReplicated != 0 || st.Replicas != 2 || st.UnderReplicated != 0 {
		t.Fatalf("stats = %+v", st)
	}
	// Nothing more once the deletions are confirmed.
	m.IncrementalReport(dn(2), nil, []uint64{1})
	m.IncrementalReport(dn(3), nil, []uint64{1})
	m.ComputeWork()
	if all := drainAll(m, 4); len(all) != 0 {
		t.Fatalf("unexpected commands %+v", all)
	}
}

func TestForget(t *testing.T) {
	m, _ := newTestManager(t, 5)
	place(t, m, 1, 3, dn(1), dn(2), dn(3))
	place(t, m, 2, 3, dn(4)) // under-replicated
	place(t, m, 3, 3, dn(1), dn(2), dn(3))
	m.ComputeWork()
	// Block 2's replicate command is queued on dn4; forget blocks 1 and 2
	// before dn4 heartbeats.
	m.Forget(1, 2, 12345)
	if got := m.UnderReplicated(); len(got) != 0 {
		t.Fatalf("under = %v", got)
	}
	if st := m.Stats(); st.Blocks != 1 || st.PendingReplication != 0 || st.PendingDeletion != 4 {
		t.Fatalf("stats = %+v", st)
	}
	if l := m.Locations(1); len(l) != 0 {
		t.Fatalf("forgotten block served from %v", ids(l))
	}
	m.ComputeWork()
	all := drainAll(m, 5)
	if _, cs := replicates(all); len(cs) != 0 {
		t.Fatalf("replicate of forgotten block handed out: %+v", cs)
	}
	got := deletes(all)
	want := map[string][]uint64{dn(1): {1}, dn(2): {1}, dn(3): {1}, dn(4): {2}}
	if len(got) != len(want) {
		t.Fatalf("deletes = %v, want %v", got, want)
	}
	for k, v := range want {
		if !slices.Equal(got[k], v) {
			t.Fatalf("deletes = %v, want %v", got, want)
		}
	}
	if l := sortedIDs(m.Locations(3)); len(l) != 3 {
		t.Fatalf("block 3 untouched, got %v", l)
	}
	// A late report of a forgotten block is deleted again; confirmations
	// drop it from the map.
	m.IncrementalReport(dn(5), []Replica{rep(1)}, nil)
	m.ComputeWork()
	if got := deletes(drainAll(m, 5)); !slices.Equal(got[dn(5)], []uint64{1}) {
		t.Fatalf("late replica not deleted: %v", got)
	}
	for i := 1; i <= 5; i++ {
		m.IncrementalReport(dn(i), nil, []uint64{1, 2})
	}
	if st := m.Stats(); st.Blocks != 1 || st.Unknown != 0 || st.PendingDeletion != 0 {
		t.Fatalf("stats = %+v", st)
	}
}

// Followers never run ComputeWork: Forget schedules deletes, and the
// datanodes' reports (after the leader's commands) clear them.
func TestFollowerForgetClearedByReports(t *testing.T) {
	m, _ := newTestManager(t, 2)
	place(t, m, 1, 2, dn(1), dn(2))
	m.Forget(1)
	if st := m.Stats(); st.PendingDeletion != 2 {
		t.Fatalf("stats = %+v", st)
	}
	m.IncrementalReport(dn(1), nil, []uint64{1})
	m.FullReport(dn(2), nil)
	if st := m.Stats(); st.PendingDeletion != 0 || st.Unknown != 0 {
		t.Fatalf("stats = %+v", st)
	}
}

func TestUnknownReplicaGrace(t *testing.T) {
	grace := DefaultConfig().UnknownReplicaGrace
	tests := []struct {
		name        string
		wait        time.Duration
		adopt       bool // SetExpected arrives before ComputeWork
		wantDeleted bool
	}{
		{"within grace", grace - time.Second, false, false},
		{"at grace", grace, false, true},
		{"long after", 10 * grace, false, true},
		{"adopted before grace", grace - time.Second, true, false},
		{"adopted late but before ComputeWork", 10 * grace, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, clk := newTestManager(t, 2)
			m.FullReport(dn(1), []Replica{rep(1)})
			clk.Advance(tc.wait)
			heartbeatAll(m, dn(1), dn(2))
			if tc.adopt {
				m.SetExpected(1, 1, 100, 1, true)
			}
			m.ComputeWork()
			got := deletes(drainAll(m, 2))
			if deleted := slices.Equal(got[dn(1)], []uint64{1}); deleted != tc.wantDeleted {
				t.Fatalf("deletes = %v, want deleted=%v", got, tc.wantDeleted)
			}
			if tc.adopt {
				if l := ids(m.Locations(1)); !slices.Equal(l, []string{dn(1)}) {
					t.Fatalf("adopted block locations = %v", l)
				}
			}
		})
	}
}

func TestCorruptReplicaFlow(t *testing.T) {
	m, _ := newTestManager(t, 5)
	place(t, m, 1, 3, dn(1), dn(2), dn(3))
	if m.ReportCorrupt(1, dn(5)) || m.ReportCorrupt(99, dn(1)) || m.ReportCorrupt(1, "nope") {
		t.Fatal("ReportCorrupt of a replica not in the map returned true")
	}
	if !m.ReportCorrupt(1, dn(1)) {
		t.Fatal("ReportCorrupt returned false")
	}
	if l := sortedIDs(m.Locations(1)); !slices.Equal(l, []string{dn(2), dn(3)}) {
		t.Fatalf("locations = %v", l)
	}
	if got := m.UnderReplicated(); !slices.Equal(got, []uint64{1}) {
		t.Fatalf("under = %v", got)
	}
	if st := m.Stats(); st.Corrupt != 1 || st.Replicas != 2 {
		t.Fatalf("stats = %+v", st)
	}
	m.ComputeWork()
	all := drainAll(m, 5)
	if d := deletes(all); len(d) != 0 {
		t.Fatalf("corrupt replica deleted before the block has enough good ones: %v", d)
	}
	src, cs := replicates(all)
	if len(cs) != 1 || src[0] == dn(1) {
		t.Fatalf("want one replicate from a good holder, got %v", src)
	}
	tgt := cs[0].Targets[0].ID
	if slices.Contains([]string{dn(1), dn(2), dn(3)}, tgt) {
		t.Fatalf("target %s already holds a replica", tgt)
	}
	m.IncrementalReport(tgt, []Replica{rep(1)}, nil)
	m.ComputeWork()
	if d := deletes(drainAll(m, 5)); len(d) != 1 || !slices.Equal(d[dn(1)], []uint64{1}) {
		t.Fatalf("deletes = %v, want block 1 on dn1", d)
	}
	if st := m.Stats(); st.Corrupt != 0 || st.Replicas != 3 || st.UnderReplicated != 0 {
		t.Fatalf("stats = %+v", st)
	}
}

func TestLastReplicaCorruptIsKept(t *testing.T) {
	m, _ := newTestManager(t, 3)
	place(t, m, 1, 1, dn(1))
	m.ReportCorrupt(1, dn(1))
	m.ComputeWork()
	if all := drainAll(m, 3); len(all) != 0 {
		t.Fatalf("commands for a block with no good replica: %+v", all)
	}
	if got := m.UnderReplicated(); !slices.Equal(got, []uint64{1}) {
		t.Fatalf("under = %v", got)
	}
}

func TestStaleGenStampIsCorrupt(t *testing.T) {
	m, _ := newTestManager(t, 4)
	m.SetExpected(1, 2, 100, 3, false)
	m.SetPipeline(1, []string{dn(1), dn(2), dn(3), dn(4)})
	stale := Replica{BlockID: 1, GenStamp: 1, Length: 10, Inode: 100}
	fresh := Replica{BlockID: 1, GenStamp: 2, Length: 20, Inode: 100}
	m.IncrementalReport(dn(1), []Replica{stale}, nil)
	for i := 2; i <= 4; i++ {
		m.IncrementalReport(dn(i), []Replica{fresh}, nil)
	}
	m.SetExpected(1, 2, 100, 3, true)
	if st := m.Stats(); st.Corrupt != 1 || st.Replicas != 3 {
		t.Fatalf("stats = %+v", st)
	}
	m.ComputeWork()
	d := deletes(drainAll(m, 4))
	if len(d) != 1 || !slices.Equal(d[dn(1)], []uint64{1}) {
		t.Fatalf("deletes = %v, want block 1 on dn1", d)
	}
}

func TestDeleteBatching(t *testing.T) {
	clk := newFakeClock()
	cfg := testConfig(clk)
	cfg.MaxBlocksPerDelete = 3
	m, _ := New(cfg)
	m.Register(Datanode{ID: dn(1), Capacity: 100 * gib})
	var rs []Replica
	for id := uint64(1); id <= 7; id++ {
		rs = append(rs, rep(id))
	}
	m.FullReport(dn(1), rs)
	for id := uint64(1); id <= 7; id++ {
		m.SetExpected(id, 1, 100, 1, true)
	}
	m.Forget(1, 2, 3, 4, 5, 6, 7)
	var got []int
	for i := 0; i < 4; i++ {
		m.ComputeWork()
		for _, c := range m.PendingCommands(dn(1)) {
			got = append(got, len(c.Blocks))
		}
	}
	if !slices.Equal(got, []int{3, 3, 1}) {
		t.Fatalf("delete batch sizes = %v, want [3 3 1]", got)
	}
}

func TestReplicationToDeadTargetRescheduled(t *testing.T) {
	clk := newFakeClock()
	cfg := testConfig(clk)
	cfg.ReplicationTimeout = time.Hour
	m, _ := New(cfg)
	for i := 1; i <= 4; i++ {
		m.Register(Datanode{ID: dn(i), Capacity: 100 * gib})
	}
	place(t, m, 1, 2, dn(1))
	m.ComputeWork()
	_, cs := replicates(drainAll(m, 4))
	if len(cs) != 1 {
		t.Fatalf("want 1 replicate, got %d", len(cs))
	}
	target := cs[0].Targets[0].ID
	// The target dies well before the replication timeout.
	clk.Advance(DefaultConfig().HeartbeatInterval*time.Duration(DefaultConfig().DeadAfterMissed) + 1)
	for i := 1; i <= 4; i++ {
		if dn(i) != target {
			heartbeatAll(m, dn(i))
		}
	}
	m.CheckLiveness()
	m.ComputeWork()
	_, cs = replicates(drainAll(m, 4))
	if len(cs) != 1 || cs[0].Targets[0].ID == target {
		t.Fatalf("want a new replicate avoiding dead %s, got %+v", target, cs)
	}
}
