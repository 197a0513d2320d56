package blocks

import (
	"strings"
	"testing"
	"time"

	"github.com/blockfs/blockfs/errs"
)

// goodCount is the number of good replicas of block id (what a watcher of
// "below replication" counts).
func goodCount(m *Manager, id uint64) int {
	s := m.shard(id)
	rl := s.mu.RLock()
	defer rl.RUnlock()
	return s.tally(s.blocks.get(id)).good
}

// replicateTo returns the move's Replicate command queued on sender.
func replicateTo(t *testing.T, m *Manager, sender string) Command {
	t.Helper()
	for _, c := range commands(m, sender) {
		if c.Kind == Replicate {
			return c
		}
	}
	t.Fatalf("no replicate command on %s", sender)
	return Command{}
}

func hasCommand(cs []Command, k CommandKind, id uint64) bool {
	for _, c := range cs {
		if c.Kind == k && (c.Block.BlockID == id || k == Delete && len(c.Blocks) > 0 && c.Blocks[0].BlockID == id) {
			return true
		}
	}
	return false
}

// TestMoveLifecycle: a move copies from the source, waits for the
// target's received report and then its answer to a Verify, and only then
// deletes the source replica; the block never has fewer good replicas
// than its replication, and the over-replication in between deletes
// nothing.
func TestMoveLifecycle(t *testing.T) {
	m, _ := newTestManager(t, 4)
	place(t, m, 1, 3, dn(1), dn(2), dn(3))
	h, err := m.StartMove(Move{BlockID: 1, Source: dn(1), Target: dn(4), Bandwidth: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	c := replicateTo(t, m, dn(1))
	if len(c.Targets) != 1 || c.Targets[0].ID != dn(4) || c.Bandwidth != 1<<20 {
		t.Fatalf("replicate command %+v", c)
	}
	check := func(stage string) {
		t.Helper()
		if g := goodCount(m, 1); g < 3 {
			t.Fatalf("%s: %d good replicas, below replication 3", stage, g)
		}
	}
	m.ComputeWork()
	check("copying")
	if st, _ := h.State(); st != MoveCopying {
		t.Fatalf("state %v before the copy arrived", st)
	}
	// The target received it: verified as a scheduled replication's target,
	// yet the source stays until the target answers a Verify.
	m.IncrementalReport(dn(4), []Replica{rep(1)}, nil)
	for range 3 {
		m.ComputeWork()
		check("received")
	}
	if st, _ := h.State(); st != MoveVerifying {
		t.Fatalf("state %v after the copy arrived", st)
	}
	if cs := commands(m, dn(1)); hasCommand(cs, Delete, 1) {
		t.Fatal("source deleted before the target's replica was verified")
	}
	for _, d := range []string{dn(2), dn(3)} {
		if hasCommand(commands(m, d), Delete, 1) {
			t.Fatalf("the move's extra copy cost %s its replica", d)
		}
	}
	if cs := commands(m, dn(4)); !hasCommand(cs, Verify, 1) || hasCommand(cs, Delete, 1) {
		t.Fatalf("target commands %+v: want a verify and no delete", cs)
	}
	// An answer from a node that is not the target confirms nothing.
	m.ReportVerified(dn(2), []Replica{rep(1)})
	m.ComputeWork()
	if st, _ := h.State(); st != MoveVerifying {
		t.Fatalf("state %v after a stranger's answer", st)
	}
	if n := m.ReportVerified(dn(4), []Replica{rep(1)}); n != 1 {
		t.Fatalf("target's verify answer not taken (%d)", n)
	}
	m.ComputeWork()
	check("confirmed")
	if st, why := h.State(); st != MoveDone {
		t.Fatalf("state %v (%s) after the verify answer", st, why)
	}
	if !hasCommand(commands(m, dn(1)), Delete, 1) {
		t.Fatal("source replica not scheduled for deletion")
	}
	m.IncrementalReport(dn(1), nil, []uint64{1})
	check("source gone")
	if got := sortedIDs(m.Locations(1)); strings.Join(got, ",") != "dn2,dn3,dn4" {
		t.Fatalf("locations %v", got)
	}
	if m.OpenMoves() != 0 {
		t.Fatal("move left open")
	}
}

// TestMoveTimeouts: a copy that never arrives, or a target that never
// answers its verify, drops the move after ReplicationTimeout and the
// source keeps its replica; a cancelled move withdraws its copy.
func TestMoveTimeouts(t *testing.T) {
	for _, c := range []struct {
		name    string
		receive bool
		cancel  bool
		reason  string
	}{
		{"copy times out", false, false, "timed out"},
		{"verify unanswered", true, false, "did not answer"},
		{"cancelled", false, true, "cancelled"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, clk := newTestManager(t, 4)
			place(t, m, 1, 3, dn(1), dn(2), dn(3))
			h, err := m.StartMove(Move{BlockID: 1, Source: dn(1), Target: dn(4)})
			if err != nil {
				t.Fatal(err)
			}
			if c.cancel {
				h.Cancel()
				if cs := commands(m, dn(1)); hasCommand(cs, Replicate, 1) {
					t.Fatal("cancelled copy still handed out")
				}
			} else {
				commands(m, dn(1))
			}
			if c.receive {
				m.IncrementalReport(dn(4), []Replica{rep(1)}, nil)
				m.ComputeWork()
			}
			clk.Advance(m.cfg.ReplicationTimeout + time.Second)
			heartbeatAll(m, dn(1), dn(2), dn(3), dn(4))
			m.ComputeWork()
			st, why := h.State()
			if st != MoveDropped || !strings.Contains(why, c.reason) {
				t.Fatalf("state %v (%q), want dropped (%q)", st, why, c.reason)
			}
			if hasCommand(commands(m, dn(1)), Delete, 1) || !m.IsVerified(1, dn(1)) {
				t.Fatal("the source lost its replica")
			}
			if n := m.lookup(dn(1)).streams.Load(); n != 0 {
				t.Fatalf("%d streams left on the sender", n)
			}
			// A late answer after the drop does not delete the source.
			m.ReportVerified(dn(4), []Replica{rep(1)})
			m.ComputeWork()
			if cs := commands(m, dn(1)); hasCommand(cs, Delete, 1) && !c.receive {
				t.Fatal("a dropped move deleted its source")
			}
			if g := goodCount(m, 1); g < 3 {
				t.Fatalf("%d good replicas", g)
			}
		})
	}
}

// TestMoveNeverBelowReplication: when a replica other than the source
// disappears while the copy is verified, finishing the move would leave
// the block short, so the move is dropped and the source kept.
func TestMoveNeverBelowReplication(t *testing.T) {
	m, _ := newTestManager(t, 4)
	place(t, m, 1, 3, dn(1), dn(2), dn(3))
	h, err := m.StartMove(Move{BlockID: 1, Source: dn(1), Target: dn(4)})
	if err != nil {
		t.Fatal(err)
	}
	commands(m, dn(1))
	m.IncrementalReport(dn(4), []Replica{rep(1)}, nil)
	m.ComputeWork()
	m.ReportVerified(dn(4), []Replica{rep(1)})
	m.IncrementalReport(dn(2), nil, []uint64{1}) // dn2 lost its copy
	m.ComputeWork()
	if st, why := h.State(); st != MoveDropped || !strings.Contains(why, "below its replication") {
		t.Fatalf("state %v (%q)", st, why)
	}
	if hasCommand(commands(m, dn(1)), Delete, 1) {
		t.Fatal("source deleted with the block short")
	}
	if g := goodCount(m, 1); g != 3 {
		t.Fatalf("%d good replicas, want 3", g)
	}
}

// TestStartMoveRefusals: what may not be moved is refused with a reason,
// and nothing is queued.
func TestStartMoveRefusals(t *testing.T) {
	m := newRackManager(t, 2, 3) // dn0-0..2 in /r0, dn1-0..2 in /r1
	place(t, m, 1, 3, "dn0-0", "dn0-1", "dn1-0")
	place(t, m, 2, 3, "dn0-0", "dn1-1", "dn1-2")
	m.SetExpected(3, 1, 100, 3, false) // under construction
	m.SetPipeline(3, []string{"dn0-0"})
	m.IncrementalReport("dn0-0", []Replica{rep(3)}, nil)
	if _, err := m.StartMove(Move{BlockID: 2, Source: "dn0-0", Target: "dn0-1"}); err != nil {
		t.Fatal(err) // block 2 busy from here on
	}
	m.Register(Datanode{ID: "dead", Addr: "10.9.9.9:1", Rack: "/r1", Capacity: 100 * gib})
	m.lookup("dead").snap.Load() // registered live; kill it
	killed := *m.lookup("dead").snap.Load()
	killed.State = Dead
	m.lookup("dead").snap.Store(&killed)
	for _, c := range []struct {
		name string
		mv   Move
		kind errs.Kind
		want string
	}{
		{"unknown source", Move{BlockID: 1, Source: "nope", Target: "dn0-2"}, errs.NotFound, "unknown datanode"},
		{"unknown block", Move{BlockID: 99, Source: "dn0-0", Target: "dn0-2"}, errs.NotFound, "no such block"},
		{"same node", Move{BlockID: 1, Source: "dn0-0", Target: "dn0-0"}, errs.Invalid, "same datanode"},
		{"dead target", Move{BlockID: 1, Source: "dn0-0", Target: "dead"}, errs.Precondition, "live"},
		{"target holds it", Move{BlockID: 1, Source: "dn0-0", Target: "dn0-1"}, errs.Precondition, "already holds"},
		{"source lacks it", Move{BlockID: 1, Source: "dn1-1", Target: "dn0-2"}, errs.Precondition, "no good replica"},
		// Moving the only /r1 copy into /r0 leaves the block in one rack.
		{"rack policy", Move{BlockID: 1, Source: "dn1-0", Target: "dn0-2"}, errs.Precondition, "rack policy"},
		{"under construction", Move{BlockID: 3, Source: "dn0-0", Target: "dn0-2"}, errs.Precondition, "under construction"},
		{"already moving", Move{BlockID: 2, Source: "dn1-1", Target: "dn0-2"}, errs.Precondition, "already being moved"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := m.StartMove(c.mv)
			if !errs.Is(err, c.kind) || err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %v %q", err, c.kind, c.want)
			}
		})
	}
	if m.OpenMoves() != 1 {
		t.Fatalf("%d open moves, want 1", m.OpenMoves())
	}
	// Within the rack it may go.
	if _, err := m.StartMove(Move{BlockID: 1, Source: "dn1-0", Target: "dn1-1"}); err != nil {
		t.Fatal(err)
	}
}

// TestMoveStreams: a sender runs at most MaxReplicationStreams copies, and
// a target takes at most as many moves; a finished copy frees its stream.
func TestMoveStreams(t *testing.T) {
	m, _ := newTestManager(t, 5)
	limit := m.cfg.MaxReplicationStreams
	for id := uint64(1); id <= uint64(limit)+1; id++ {
		place(t, m, id, 1, dn(1))
	}
	for id := uint64(1); id <= uint64(limit); id++ {
		if _, err := m.StartMove(Move{BlockID: id, Source: dn(1), Target: dn(2 + int(id)%2)}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := m.StartMove(Move{BlockID: uint64(limit) + 1, Source: dn(1), Target: dn(4)})
	if !errs.Is(err, errs.Precondition) || !strings.Contains(err.Error(), "free replication stream") {
		t.Fatalf("a sender past its streams: %v", err)
	}
	m.IncrementalReport(dn(2), []Replica{rep(2)}, nil) // one copy arrived
	if _, err := m.StartMove(Move{BlockID: uint64(limit) + 1, Source: dn(1), Target: dn(4)}); err != nil {
		t.Fatalf("the stream of a finished copy is not free: %v", err)
	}
	m2, _ := newTestManager(t, 3+limit)
	for i := 1; i <= limit+1; i++ {
		place(t, m2, uint64(i), 1, dn(2+i))
	}
	for i := 1; i <= limit; i++ {
		if _, err := m2.StartMove(Move{BlockID: uint64(i), Source: dn(2 + i), Target: dn(1)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m2.StartMove(Move{BlockID: uint64(limit + 1), Source: dn(3 + limit), Target: dn(1)}); err == nil || !strings.Contains(err.Error(), "coming in") {
		t.Fatalf("a target past its moves: %v", err)
	}
}

// TestMovable: the blocks offered to the planner are the movable ones,
// with their good holders.
func TestMovable(t *testing.T) {
	m, _ := newTestManager(t, 4)
	place(t, m, 1, 2, dn(1), dn(2))
	place(t, m, 2, 2, dn(1), dn(3))
	place(t, m, 3, 3, dn(1)) // under-replicated
	got := m.Movable(dn(1), 10)
	if len(got) != 2 {
		t.Fatalf("movable %+v", got)
	}
	for _, h := range got {
		if len(h.Holders) != 2 || h.Replication != 2 || h.Length != blkSize {
			t.Fatalf("holding %+v", h)
		}
	}
	if _, err := m.StartMove(Move{BlockID: 1, Source: dn(1), Target: dn(4)}); err != nil {
		t.Fatal(err)
	}
	if got := m.Movable(dn(1), 10); len(got) != 1 || got[0].BlockID != 2 {
		t.Fatalf("movable with block 1 moving: %+v", got)
	}
	if got := m.Movable(dn(1), 0); got != nil {
		t.Fatal("limit 0 returned blocks")
	}
}

// TestMoveDroppedWhenNotLive: a move whose target or source dies is
// dropped at the next ComputeWork, and the source keeps its replica.
func TestMoveDroppedWhenNotLive(t *testing.T) {
	for _, dead := range []int{1, 4} {
		t.Run(dn(dead), func(t *testing.T) {
			m, clk := newTestManager(t, 4)
			place(t, m, 1, 3, dn(1), dn(2), dn(3))
			h, err := m.StartMove(Move{BlockID: 1, Source: dn(1), Target: dn(4)})
			if err != nil {
				t.Fatal(err)
			}
			commands(m, dn(1))
			m.IncrementalReport(dn(4), []Replica{rep(1)}, nil)
			clk.Advance(m.cfg.deadAfter() / 2)
			for i := 1; i <= 4; i++ {
				if i != dead {
					heartbeatAll(m, dn(i))
				}
			}
			clk.Advance(m.cfg.deadAfter()/2 + time.Second)
			m.CheckLiveness()
			m.ComputeWork()
			if st, why := h.State(); st != MoveDropped || !strings.Contains(why, "not live") {
				t.Fatalf("state %v (%q)", st, why)
			}
			if dead == 4 && (hasCommand(commands(m, dn(1)), Delete, 1) || !m.IsVerified(1, dn(1))) {
				t.Fatal("the source lost its replica")
			}
		})
	}
}

// TestMovePacedCopyTime: a slow move's copy gets the time its sender's
// streams take at the bandwidth beyond ReplicationTimeout before it is
// dropped, and no more.
func TestMovePacedCopyTime(t *testing.T) {
	m, clk := newTestManager(t, 4)
	place(t, m, 1, 3, dn(1), dn(2), dn(3))
	bw := blkSize / 10 // a 64 MiB block in 10 s, 4 streams in 40 s
	h, err := m.StartMove(Move{BlockID: 1, Source: dn(1), Target: dn(4), Bandwidth: bw})
	if err != nil {
		t.Fatal(err)
	}
	commands(m, dn(1))
	step := func(d time.Duration) {
		clk.Advance(d)
		heartbeatAll(m, dn(1), dn(2), dn(3), dn(4))
		m.ComputeWork()
	}
	for range 7 {
		step(m.cfg.ReplicationTimeout / 6) // ReplicationTimeout and a bit
	}
	if st, why := h.State(); st != MoveCopying {
		t.Fatalf("a paced copy dropped after the plain timeout: %v %q", st, why)
	}
	for range 12 {
		step(5 * time.Second)
	}
	if st, why := h.State(); st != MoveDropped || !strings.Contains(why, "timed out") {
		t.Fatalf("state %v (%q) long past the paced time", st, why)
	}
}

// TestMoveOfUnverifiedBlockOrdersVerify: on a leader that did not see a
// block written, its replicas are known only from reports, so none may be
// copied; a move is refused, and the holders are asked to verify theirs.
// Once they answer, the move starts. (A balancer on a new leader had
// stalled on such blocks until it gave up.)
func TestMoveOfUnverifiedBlockOrdersVerify(t *testing.T) {
	m, _ := newTestManager(t, 4)
	m.SetExpected(1, 1, 100, 2, true)
	for _, h := range []string{dn(1), dn(2)} {
		if !m.FullReport(h, []Replica{rep(1)}) {
			t.Fatalf("report from %s rejected", h)
		}
	}
	_, err := m.StartMove(Move{BlockID: 1, Source: dn(1), Target: dn(3)})
	if !errs.Is(err, errs.Precondition) || !strings.Contains(err.Error(), "verified holder") {
		t.Fatalf("a move of a block with only reported replicas: %v", err)
	}
	asked := 0
	for _, h := range []string{dn(1), dn(2)} {
		for _, c := range commands(m, h) {
			if c.Kind == Verify && c.Block.BlockID == 1 {
				asked++
			}
		}
	}
	if asked != 2 {
		t.Fatalf("%d verifies ordered, want one per holder", asked)
	}
	for _, h := range []string{dn(1), dn(2)} {
		if n := m.ReportVerified(h, []Replica{rep(1)}); n != 1 {
			t.Fatalf("%s's verify answer accepted for %d replicas", h, n)
		}
	}
	if _, err := m.StartMove(Move{BlockID: 1, Source: dn(1), Target: dn(3)}); err != nil {
		t.Fatalf("the move after the verify: %v", err)
	}
}
