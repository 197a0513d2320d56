package decommission

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/blocks"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/namenode/fsm"
	"github.com/blockfs/blockfs/namespace"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time          { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// events tells the block map the FSM's admin table, as the namenode does.
type events struct{ m *blocks.Manager }

func (events) Expect(namespace.Block, namespace.ID, uint32, bool) {}
func (events) Forget([]namespace.Block)                           {}
func (e events) AdminStates(es []*api.AdminStateEntry)            { e.m.SetAdminStates(ToAdmin(es)) }

type fixture struct {
	m   *blocks.Manager
	f   *fsm.FSM
	s   *Service
	clk *clock
	dns []string
}

const blk = 1 << 20

// newFixture: datanodes dn1..dn5 over two racks, blocks 1..6 on dn1, dn2,
// dn4 (dn1 and dn2 in /r0), every replica written and fully reported.
func newFixture(t *testing.T, exclude string) *fixture {
	t.Helper()
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	cfg := blocks.DefaultConfig()
	cfg.Now, cfg.Seed = clk.Now, 7
	m, err := blocks.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	x := &fixture{m: m, clk: clk}
	for i := 1; i <= 5; i++ {
		id := fmt.Sprintf("dn%d", i)
		x.dns = append(x.dns, id)
		if err := m.Register(blocks.Datanode{ID: id, Addr: fmt.Sprintf("10.0.0.%d:9866", i), Rack: fmt.Sprintf("/r%d", (i-1)/3), Capacity: 1 << 40}); err != nil {
			t.Fatal(err)
		}
	}
	holders := []string{"dn1", "dn2", "dn4"}
	var rs []blocks.Replica
	for b := uint64(1); b <= 6; b++ {
		r := blocks.Replica{BlockID: b, GenStamp: 1, Length: blk, Inode: 9}
		rs = append(rs, r)
		m.SetExpected(b, 1, 9, 3, false)
		m.SetPipeline(b, holders)
		for _, h := range holders {
			m.IncrementalReport(h, []blocks.Replica{r}, nil)
		}
		m.SetExpected(b, 1, 9, 3, true)
	}
	for _, id := range x.dns {
		var mine []blocks.Replica
		if slices.Contains(holders, id) {
			mine = rs
		}
		m.FullReport(id, mine)
	}
	x.f = fsm.New(fsm.Config{Superuser: "root", Supergroup: "supergroup", Events: events{m}})
	x.s, err = New(Config{Blocks: m, States: x.f.AdminStates, ExcludeFile: exclude, Self: "namenode/nn1", Now: clk.Now,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Propose: func(_ context.Context, _ string, t fsm.CmdType, msg proto.Message) (*api.CommandResult, uint64, error) {
			data, err := fsm.Encode(t, msg)
			if err != nil {
				return nil, 0, err
			}
			return x.f.ApplyUnlogged(data), 1, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func (x *fixture) state(id string) string {
	for _, e := range x.f.AdminStates() {
		if e.DatanodeId == id {
			return e.State.String()
		}
	}
	return api.AdminState_ADMIN_NORMAL.String()
}

// copyAll runs the leader's replication until nothing is left to copy:
// every Replicate command lands on its targets.
func (x *fixture) copyAll() {
	for range 10 {
		x.m.ComputeWork()
		for _, id := range x.dns {
			for _, c := range x.m.PendingCommands(id) {
				if c.Kind != blocks.Replicate {
					continue
				}
				for _, t := range c.Targets {
					x.m.IncrementalReport(t.ID, []blocks.Replica{c.Block}, nil)
				}
			}
		}
	}
}

// TestMonitorTransitions: Decommissioning becomes Decommissioned only once
// its blocks are copied; a maintenance goes InMaintenance once its blocks
// keep their minimum, and Normal at its expiry; the monitor never undoes
// an operator's change.
func TestMonitorTransitions(t *testing.T) {
	x := newFixture(t, "")
	ctx := context.Background()
	if _, err := x.s.Decommission(ctx, "user/root", []string{"10.0.0.1:9866"}); err != nil {
		t.Fatal(err)
	}
	if got := x.state("dn1"); got != "ADMIN_DECOMMISSIONING" {
		t.Fatalf("dn1 %s", got)
	}
	x.s.Tick(ctx)
	if got := x.state("dn1"); got != "ADMIN_DECOMMISSIONING" {
		t.Fatalf("dn1 %s before its blocks are copied", got)
	}
	info := &api.DatanodeInfo{}
	d, _ := x.m.Datanode("dn1")
	x.s.Fill(info, d)
	if info.AdminState != "DECOMMISSION_INPROGRESS" || info.BlocksLeft != 6 || info.BytesLeft != 6*blk {
		t.Fatalf("progress %+v", info)
	}
	x.copyAll()
	x.s.Tick(ctx)
	if got := x.state("dn1"); got != "ADMIN_DECOMMISSIONED" {
		t.Fatalf("dn1 %s after copies", got)
	}
	// Maintenance of dn2: each block keeps dn4 and the new copy.
	until := x.clk.Now().Add(time.Hour)
	if _, err := x.s.Maintenance(ctx, "user/root", []string{"dn2"}, until, 0); err != nil {
		t.Fatal(err)
	}
	if got := x.state("dn2"); got != "ADMIN_ENTERING_MAINTENANCE" {
		t.Fatalf("dn2 %s", got)
	}
	x.s.Tick(ctx)
	if got := x.state("dn2"); got != "ADMIN_IN_MAINTENANCE" {
		t.Fatalf("dn2 %s", got)
	}
	x.clk.Advance(2 * time.Hour)
	x.s.Tick(ctx)
	if got := x.state("dn2"); got != "ADMIN_NORMAL" {
		t.Fatalf("dn2 %s after expiry", got)
	}
	if _, err := x.s.Recommission(ctx, "user/root", []string{"dn1"}); err != nil || x.state("dn1") != "ADMIN_NORMAL" {
		t.Fatalf("recommission: %v, %s", err, x.state("dn1"))
	}
}

// TestRefusals: bad input is refused with its kind and changes nothing.
func TestRefusals(t *testing.T) {
	x := newFixture(t, "")
	ctx := context.Background()
	before := x.f.Hash()
	cases := []struct {
		name string
		call func() error
		kind errs.Kind
		says string
	}{
		{"unknown", func() error { _, err := x.s.Decommission(ctx, "u", []string{"dn9"}); return err }, errs.Invalid, "dn9"},
		{"none", func() error { _, err := x.s.Decommission(ctx, "u", nil); return err }, errs.Invalid, "no datanode"},
		{"too many", func() error { _, err := x.s.Decommission(ctx, "u", []string{"dn1", "dn2", "dn3"}); return err }, errs.Precondition, "6 blocks"},
		{"last of a rack", func() error { _, err := x.s.Decommission(ctx, "u", []string{"dn4", "dn5"}); return err }, errs.Precondition, "one rack"},
		{"maintenance in the past", func() error {
			_, err := x.s.Maintenance(ctx, "u", []string{"dn1"}, x.clk.Now().Add(-time.Minute), 1)
			return err
		}, errs.Invalid, "future"},
		{"maintenance unknown", func() error {
			_, err := x.s.Maintenance(ctx, "u", []string{"nope"}, x.clk.Now().Add(time.Hour), 1)
			return err
		}, errs.Invalid, "nope"},
		{"recommission unknown", func() error { _, err := x.s.Recommission(ctx, "u", []string{"nope"}); return err }, errs.Invalid, "nope"},
		{"refresh without a file", func() error { _, err := x.s.RefreshNodes(ctx, "u"); return err }, errs.Precondition, "--hosts-exclude"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.call()
			if !errs.Is(err, c.kind) || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("got %v, want %v saying %q", err, c.kind, c.says)
			}
			if x.f.Hash() != before || len(x.f.AdminStates()) != 0 {
				t.Fatal("a refusal changed the table")
			}
		})
	}
}

// TestExcludeFile: RefreshNodes decommissions what the file names and
// recommissions what it no longer names (never a datanode decommissioned
// by hand); a file that does not parse is refused at load and at refresh,
// the old list kept; a reload (SIGHUP) is applied by the next Tick.
func TestExcludeFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "exclude")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("# retire\n10.0.0.3:9866  # by address\n")
	x := newFixture(t, path)
	ctx := context.Background()
	if _, err := x.s.Decommission(ctx, "user/root", []string{"dn5"}); err != nil {
		t.Fatal(err)
	}
	if _, err := x.s.RefreshNodes(ctx, "user/root"); err != nil {
		t.Fatal(err)
	}
	if x.state("dn3") != "ADMIN_DECOMMISSIONING" {
		t.Fatalf("dn3 %s", x.state("dn3"))
	}
	x.s.Tick(ctx) // dn3 and dn5 hold nothing: decommissioned at once
	if x.state("dn3") != "ADMIN_DECOMMISSIONED" {
		t.Fatalf("dn3 %s", x.state("dn3"))
	}
	write("dn3 dn4\n")
	before := x.f.Hash()
	if _, err := x.s.RefreshNodes(ctx, "user/root"); !errs.Is(err, errs.Invalid) || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("bad file: %v", err)
	}
	if err := x.s.ReloadExclude(); !errs.Is(err, errs.Invalid) {
		t.Fatalf("bad file on reload: %v", err)
	}
	x.s.Tick(ctx)
	if x.f.Hash() != before {
		t.Fatal("a bad file changed the states")
	}
	write("\n")
	if err := x.s.ReloadExclude(); err != nil {
		t.Fatal(err)
	}
	x.s.Tick(ctx)
	if x.state("dn3") != "ADMIN_NORMAL" || x.state("dn5") != "ADMIN_DECOMMISSIONED" {
		t.Fatalf("after the file emptied: dn3 %s, dn5 %s", x.state("dn3"), x.state("dn5"))
	}
	// A name not registered yet: the leader's rounds keep trying until it
	// registers.
	write("dn9\n")
	if err := x.s.ReloadExclude(); err != nil {
		t.Fatal(err)
	}
	x.s.Tick(ctx)
	if err := x.m.Register(blocks.Datanode{ID: "dn9", Addr: "10.0.0.9:9866", Rack: "/r1", Capacity: 1 << 40}); err != nil {
		t.Fatal(err)
	}
	x.m.FullReport("dn9", nil)
	x.s.Tick(ctx)
	if got := x.state("dn9"); got != "ADMIN_DECOMMISSIONING" && got != "ADMIN_DECOMMISSIONED" {
		t.Fatalf("dn9 after it registered: %s", got)
	}
	write("dn2:x\n")
	if _, err := New(Config{Blocks: x.m, States: x.f.AdminStates, ExcludeFile: path}); !errs.Is(err, errs.Invalid) {
		t.Fatalf("load of a bad file: %v", err)
	}
	if _, err := New(Config{Blocks: x.m, States: x.f.AdminStates, ExcludeFile: filepath.Join(dir, "none")}); err == nil {
		t.Fatal("a missing file loaded")
	}
}
