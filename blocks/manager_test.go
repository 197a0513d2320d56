package blocks

import (
	"testing"
	"time"

	"github.com/blockfs/blockfs/errs"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Config)
		ok   bool
	}{
		{"default", func(*Config) {}, true},
		{"nil clock is time.Now", func(c *Config) { c.Now = nil }, true},
		{"zero heartbeat", func(c *Config) { c.HeartbeatInterval = 0 }, false},
		{"zero missed", func(c *Config) { c.DeadAfterMissed = 0 }, false},
		{"zero stale", func(c *Config) { c.StaleAfter = 0 }, false},
		{"zero replication timeout", func(c *Config) { c.ReplicationTimeout = 0 }, false},
		{"negative grace", func(c *Config) { c.UnknownReplicaGrace = -1 }, false},
		{"zero commands", func(c *Config) { c.MaxCommandsPerHeartbeat = 0 }, false},
		{"zero streams", func(c *Config) { c.MaxReplicationStreams = 0 }, false},
		{"zero delete batch", func(c *Config) { c.MaxBlocksPerDelete = 0 }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.mod(&cfg)
			_, err := New(cfg)
			if (err == nil) != tc.ok {
				t.Fatalf("New: err = %v, want ok=%v", err, tc.ok)
			}
			if err != nil && !errs.Is(err, errs.Invalid) {
				t.Fatalf("kind = %v, want Invalid", errs.KindOf(err))
			}
		})
	}
}

func TestRegisterHeartbeat(t *testing.T) {
	m, clk := newTestManager(t, 0)
	if err := m.Register(Datanode{}); !errs.Is(err, errs.Invalid) {
		t.Fatalf("Register(empty id) = %v, want Invalid", err)
	}
	if m.Heartbeat("nope", 1, 0, 0) {
		t.Fatal("heartbeat from unregistered datanode accepted")
	}
	if m.FullReport("nope", nil) || m.IncrementalReport("nope", nil, nil) {
		t.Fatal("report from unregistered datanode accepted")
	}
	if err := m.Register(Datanode{ID: "b", Addr: "b:1", Capacity: 10, State: Dead}); err != nil {
		t.Fatal(err)
	}
	m.Register(Datanode{ID: "a", Addr: "a:1", Capacity: 10})
	if !m.WantsFullReport("a") {
		t.Fatal("new registration should want a full report")
	}
	clk.Advance(time.Second)
	if !m.Heartbeat("a", 100, 40, 1) {
		t.Fatal("heartbeat from registered datanode rejected")
	}
	got := m.Datanodes()
	if len(got) != 2 || got[0].ID != "a" || got[1].ID != "b" {
		t.Fatalf("Datanodes = %+v, want a, b", got)
	}
	a := got[0]
	if a.State != Live || a.Capacity != 100 || a.Used != 40 || a.FailedVolumes != 1 || !a.LastHeartbeat.Equal(clk.Now()) {
		t.Fatalf("a = %+v", a)
	}
	if got[1].State != Live {
		t.Fatal("Register must ignore the caller's State")
	}
	// Re-registration updates the address and keeps replicas.
	m.FullReport("a", []Replica{rep(1)})
	m.SetExpected(1, 1, 100, 1, true)
	if m.WantsFullReport("a") {
		t.Fatal("full report should clear WantsFullReport")
	}
	// Re-registration from the same address keeps replicas.
	if err := m.Register(Datanode{ID: "a", Addr: "a:1", Capacity: 100}); err != nil {
		t.Fatalf("re-register from the same address: %v", err)
	}
	if l := m.Locations(1); len(l) != 1 || l[0].Addr != "a:1" {
		t.Fatalf("after re-register Locations = %+v, want a at a:1", l)
	}
	if !m.WantsFullReport("a") {
		t.Fatal("re-registration should want a full report")
	}
	// A live id from another address is refused; once it is dead, the new
	// address takes it.
	if err := m.Register(Datanode{ID: "a", Addr: "evil:1", Capacity: 1 << 60}); !errs.Is(err, errs.Exist) {
		t.Fatalf("Register(live id, other address) = %v, want Exist", err)
	}
	if d, _ := m.Datanode("a"); d.Addr != "a:1" || d.Capacity != 100 || m.Refused(RefusedRegister) != 2 {
		t.Fatalf("refused registration changed a: %+v (refusals %d)", d, m.Refused(RefusedRegister))
	}
	clk.Advance(time.Hour)
	m.CheckLiveness()
	if err := m.Register(Datanode{ID: "a", Addr: "a:2", Capacity: 100}); err != nil {
		t.Fatalf("register a dead id from a new address: %v", err)
	}
	if d, _ := m.Datanode("a"); d.Addr != "a:2" || d.State != Live {
		t.Fatalf("a = %+v, want live at a:2", d)
	}
}

func TestLiveness(t *testing.T) {
	cfg := DefaultConfig()
	deadAfter := time.Duration(cfg.DeadAfterMissed) * cfg.HeartbeatInterval
	tests := []struct {
		name    string
		silence time.Duration
		want    State
	}{
		{"one missed", cfg.HeartbeatInterval, Live},
		{"N-1 missed", deadAfter - cfg.HeartbeatInterval, Live},
		{"exactly N intervals", deadAfter, Live},
		{"just past N", deadAfter + time.Nanosecond, Dead},
		{"long gone", time.Hour, Dead},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, clk := newTestManager(t, 2)
			clk.Advance(tc.silence)
			heartbeatAll(m, dn(2)) // dn2 keeps heartbeating
			m.CheckLiveness()
			if d, _ := m.Datanode(dn(1)); d.State != tc.want {
				t.Fatalf("dn1 state = %v, want %v", d.State, tc.want)
			}
			if d, _ := m.Datanode(dn(2)); d.State != Live {
				t.Fatal("dn2 heartbeated and should be live")
			}
			st := m.Stats()
			if wantDead := int(tc.want); st.Dead != wantDead || st.Live != 2-wantDead {
				t.Fatalf("stats live=%d dead=%d", st.Live, st.Dead)
			}
		})
	}
}

func TestDeadNodeComesBack(t *testing.T) {
	m, clk := newTestManager(t, 3)
	place(t, m, 7, 3, dn(1), dn(2), dn(3))
	clk.Advance(time.Minute)
	heartbeatAll(m, dn(2), dn(3))
	m.CheckLiveness()
	if d, _ := m.Datanode(dn(1)); d.State != Dead {
		t.Fatal("dn1 should be dead")
	}
	if m.FullReport(dn(1), []Replica{rep(7)}) {
		t.Fatal("full report from a dead datanode accepted")
	}
	if live, _ := m.NeededReplication(7); live != 2 {
		t.Fatalf("live replicas = %d, want 2", live)
	}
	// Heartbeat: live again, but its replica counts only after a full report.
	if !m.Heartbeat(dn(1), 100*gib, 0, 0) {
		t.Fatal("heartbeat from dead datanode rejected")
	}
	if d, _ := m.Datanode(dn(1)); d.State != Live {
		t.Fatal("dn1 should be live after heartbeat")
	}
	if !m.WantsFullReport(dn(1)) {
		t.Fatal("revived datanode should want a full report")
	}
	if live, _ := m.NeededReplication(7); live != 2 {
		t.Fatalf("before full report live = %d, want 2", live)
	}
	m.FullReport(dn(1), []Replica{rep(7)})
	if live, _ := m.NeededReplication(7); live != 3 {
		t.Fatalf("after full report live = %d, want 3", live)
	}
	if u := m.UnderReplicated(); len(u) != 0 {
		t.Fatalf("under-replicated = %v, want none", u)
	}
}

// A datanode that stops heartbeating turns dead and its blocks show up in
// the under-replicated queue.
func TestSilentDatanodeBlocksUnderReplicated(t *testing.T) {
	m, clk := newTestManager(t, 4)
	place(t, m, 1, 3, dn(1), dn(2), dn(3)) // on the victim
	place(t, m, 2, 3, dn(1), dn(2), dn(4)) // on the victim
	place(t, m, 3, 3, dn(2), dn(3), dn(4)) // not on the victim
	place(t, m, 4, 1, dn(1))               // only copy on the victim: missing
	m.SetExpected(5, 1, 100, 3, false)     // under construction: not checked
	m.IncrementalReport(dn(1), []Replica{rep(5)}, nil)
	if u := m.UnderReplicated(); len(u) != 0 {
		t.Fatalf("under-replicated before = %v", u)
	}
	cfg := DefaultConfig()
	for i := 0; i <= cfg.DeadAfterMissed; i++ {
		clk.Advance(cfg.HeartbeatInterval)
		heartbeatAll(m, dn(2), dn(3), dn(4))
		m.CheckLiveness()
	}
	if d, _ := m.Datanode(dn(1)); d.State != Dead {
		t.Fatalf("dn1 = %v, want dead", d.State)
	}
	if got, want := m.UnderReplicated(), []uint64{1, 2, 4}; !equal(got, want) {
		t.Fatalf("under-replicated = %v, want %v", got, want)
	}
	for _, id := range []uint64{1, 2} {
		if live, exp := m.NeededReplication(id); live != 2 || exp != 3 {
			t.Fatalf("block %d: live/expected = %d/%d, want 2/3", id, live, exp)
		}
		for _, d := range m.Locations(id) {
			if d.ID == dn(1) {
				t.Fatalf("block %d still located on dead dn1", id)
			}
		}
	}
	st := m.Stats()
	if st.Live != 3 || st.Dead != 1 || st.UnderReplicated != 3 || st.Replicas != 7 {
		t.Fatalf("stats = %+v", st)
	}
}

func equal(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
