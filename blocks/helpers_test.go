package blocks

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// fakeClock is an injectable clock; tests advance it instead of sleeping.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

const (
	gib     = uint64(1) << 30
	blkSize = uint64(64) << 20
)

func testConfig(clk *fakeClock) Config {
	cfg := DefaultConfig()
	cfg.Now = clk.Now
	cfg.Seed = 42
	return cfg
}

// newTestManager returns a Manager with datanodes dn1..dnN registered, each
// with 100 GiB capacity and nothing used.
func newTestManager(t testing.TB, nodes int) (*Manager, *fakeClock) {
	t.Helper()
	clk := newFakeClock()
	m, err := New(testConfig(clk))
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= nodes; i++ {
		if err := m.Register(Datanode{ID: dn(i), Addr: fmt.Sprintf("10.0.0.%d:9866", i), Capacity: 100 * gib}); err != nil {
			t.Fatal(err)
		}
	}
	return m, clk
}

func dn(i int) string { return fmt.Sprintf("dn%d", i) }

func rep(id uint64) Replica { return Replica{BlockID: id, GenStamp: 1, Length: blkSize, Inode: 100} }

// place makes block id expected (gen 1, complete, replication r) as its
// pipeline, the given datanodes, wrote it: they report it received while it
// is under construction, so their replicas are verified.
func place(t testing.TB, m *Manager, id uint64, r uint32, holders ...string) {
	t.Helper()
	m.SetExpected(id, 1, 100, r, false)
	m.SetPipeline(id, holders)
	for _, h := range holders {
		if !m.IncrementalReport(h, []Replica{rep(id)}, nil) {
			t.Fatalf("report from %s rejected", h)
		}
	}
	m.SetExpected(id, 1, 100, r, true)
}

func ids(ds []Datanode) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	return out
}

func sortedIDs(ds []Datanode) []string {
	out := ids(ds)
	slices.Sort(out)
	return out
}

// heartbeatAll heartbeats every listed datanode with its current usage.
func heartbeatAll(m *Manager, who ...string) {
	for _, id := range who {
		d, _ := m.Datanode(id)
		m.Heartbeat(id, d.Capacity, d.Used, d.FailedVolumes)
	}
}

// commands drains every command queued for id.
func commands(m *Manager, id string) []Command {
	var all []Command
	for {
		cs := m.PendingCommands(id)
		if len(cs) == 0 {
			return all
		}
		all = append(all, cs...)
	}
}
