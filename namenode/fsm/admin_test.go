package fsm

import (
	"bytes"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/namespace"
)

// pinnedAdminStates are the rows TestSnapshotBytesPinned's state holds.
func pinnedAdminStates() []*api.AdminStateEntry {
	return []*api.AdminStateEntry{
		{DatanodeId: "dn1", State: api.AdminState_ADMIN_DECOMMISSIONING, SetBy: "user/root", SetUnixMs: 1000},
		{DatanodeId: "dn2", State: api.AdminState_ADMIN_IN_MAINTENANCE, ExpiryUnixMs: 5000, MinReplicas: 2, SetBy: "user/root", SetUnixMs: 1000},
	}
}

// adminRecorder is BlockEvents that keeps the last table it was told.
type adminRecorder struct{ last []*api.AdminStateEntry }

func (*adminRecorder) Expect(namespace.Block, namespace.ID, uint32, bool) {}
func (*adminRecorder) Forget([]namespace.Block)                           {}
func (r *adminRecorder) AdminStates(es []*api.AdminStateEntry)            { r.last = es }

func adminIDs(es []*api.AdminStateEntry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.DatanodeId+"="+e.State.String())
	}
	return out
}

// TestSetAdminState: the table changes only by CmdSetAdminState, all or
// none; bad rows are refused with nothing changed; NORMAL removes a row;
// a from-state guards the leader's automatic transitions; the block
// events learn the whole table.
func TestSetAdminState(t *testing.T) {
	rec := &adminRecorder{}
	f := New(Config{Superuser: "root", Supergroup: "supergroup", Events: rec})
	now := time.UnixMilli(1_000_000)
	dec := func(id string) *api.AdminStateEntry {
		return &api.AdminStateEntry{DatanodeId: id, State: api.AdminState_ADMIN_DECOMMISSIONING}
	}
	ok := AdminStateCommand([]*api.AdminStateEntry{dec("dn1"), dec("dn2")}, nil, "user/root", now)
	if r := permApply(t, f, CmdSetAdminState, ok); r.ErrorMsg != "" {
		t.Fatal(r.ErrorMsg)
	}
	want := []string{"dn1=ADMIN_DECOMMISSIONING", "dn2=ADMIN_DECOMMISSIONING"}
	if got := adminIDs(f.AdminStates()); !slices.Equal(got, want) {
		t.Fatalf("table %v", got)
	}
	if got := adminIDs(rec.last); !slices.Equal(got, want) {
		t.Fatalf("events told %v", got)
	}
	before := f.Hash()
	decommissioning := api.AdminState_ADMIN_DECOMMISSIONING
	normal := api.AdminState_ADMIN_NORMAL
	bad := []struct {
		name string
		cmd  *api.SetAdminStateCommand
		kind errs.Kind
	}{
		{"empty", &api.SetAdminStateCommand{}, errs.Invalid},
		{"no id", AdminStateCommand([]*api.AdminStateEntry{dec("")}, nil, "u", now), errs.Invalid},
		{"unstamped", &api.SetAdminStateCommand{Entries: []*api.AdminStateEntry{dec("dn3")}}, errs.Invalid},
		{"twice", AdminStateCommand([]*api.AdminStateEntry{dec("dn3"), dec("dn3")}, nil, "u", now), errs.Invalid},
		{"unknown state", AdminStateCommand([]*api.AdminStateEntry{{DatanodeId: "dn3", State: 9}}, nil, "u", now), errs.Invalid},
		{"maintenance without expiry", AdminStateCommand([]*api.AdminStateEntry{{DatanodeId: "dn3", State: api.AdminState_ADMIN_IN_MAINTENANCE, MinReplicas: 1}}, nil, "u", now), errs.Invalid},
		{"decommission with expiry", AdminStateCommand([]*api.AdminStateEntry{{DatanodeId: "dn3", State: decommissioning, ExpiryUnixMs: 5}}, nil, "u", now), errs.Invalid},
		// One of two is not in the from state: neither changes.
		{"from", AdminStateCommand([]*api.AdminStateEntry{{DatanodeId: "dn1", State: api.AdminState_ADMIN_DECOMMISSIONED}, {DatanodeId: "dn3", State: api.AdminState_ADMIN_DECOMMISSIONED}}, &decommissioning, "u", now), errs.Precondition},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			r := permApply(t, f, CmdSetAdminState, tc.cmd)
			if permKind(r) != tc.kind {
				t.Fatalf("got %v %q, want %v", permKind(r), r.ErrorMsg, tc.kind)
			}
			if f.Hash() != before || len(f.AdminStates()) != 2 {
				t.Fatal("a refused command changed the table")
			}
		})
	}
	done := AdminStateCommand([]*api.AdminStateEntry{{DatanodeId: "dn1", State: api.AdminState_ADMIN_DECOMMISSIONED}}, &decommissioning, "nn1", now)
	if r := permApply(t, f, CmdSetAdminState, done); r.ErrorMsg != "" {
		t.Fatal(r.ErrorMsg)
	}
	back := AdminStateCommand([]*api.AdminStateEntry{{DatanodeId: "dn2", State: normal}}, nil, "user/root", now)
	if r := permApply(t, f, CmdSetAdminState, back); r.ErrorMsg != "" {
		t.Fatal(r.ErrorMsg)
	}
	if got := adminIDs(rec.last); !slices.Equal(got, []string{"dn1=ADMIN_DECOMMISSIONED"}) {
		t.Fatalf("after transitions %v", got)
	}
	if f.Hash() == before {
		t.Fatal("the hash does not cover the table")
	}
}

// TestAdminStatesSurviveSnapshot: the table is in the snapshot
// (BFSNAP05), restores identically and is told to the block events; a
// BFSNAP04 snapshot (no admin section) restores with no admin states,
// replacing those the node had.
// withoutReservations drops the empty reservations section (one zero
// byte, right before the namespace image) from a snapshot, as formats
// before BFSNAP06 lack it.
func withoutReservations(t *testing.T, b []byte) []byte {
	t.Helper()
	i := bytes.Index(b, []byte("BFSNSIMG"))
	if i < 1 || b[i-1] != 0 {
		t.Fatal("no empty reservations section before the image")
	}
	return append(b[:i-1:i-1], b[i:]...)
}

func TestAdminStatesSurviveSnapshot(t *testing.T) {
	f := New(Config{Superuser: "root", Supergroup: "supergroup"})
	for _, e := range pinnedAdminStates() {
		if r := permApply(t, f, CmdSetAdminState, &api.SetAdminStateCommand{Entries: []*api.AdminStateEntry{e}}); r.ErrorMsg != "" {
			t.Fatal(r.ErrorMsg)
		}
	}
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	data := snapshotBytes(t, snap)
	if string(data[:8]) != snapshotMagic {
		t.Fatalf("magic %q", data[:8])
	}
	// The same state written as BFSNAP05: no reservations section.
	v5 := withoutReservations(t, append([]byte(snapshotMagicV5), data[8:]...))
	if h := New(Config{Superuser: "root", Supergroup: "supergroup"}); h.Restore(io.NopCloser(bytes.NewReader(v5))) != nil || h.Hash() != f.Hash() {
		t.Fatal("BFSNAP05 restore failed or differs")
	}
	rec := &adminRecorder{}
	g := New(Config{Superuser: "root", Supergroup: "supergroup", Events: rec})
	if err := g.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	if g.Hash() != f.Hash() || len(g.AdminStates()) != 2 || len(rec.last) != 2 || rec.last[1].MinReplicas != 2 {
		t.Fatalf("restored table differs: %v, told %v", g.AdminStates(), rec.last)
	}
	// The same empty state written as BFSNAP04: no admin section.
	e := New(Config{Superuser: "root", Supergroup: "supergroup"})
	esnap, err := e.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	cur := snapshotBytes(t, esnap)
	var head byteBuffer
	if err := writeSnapshotHead(&head, e.st, e.AppliedIndex()); err != nil {
		t.Fatal(err)
	}
	n := len(head.b)
	v4 := withoutReservations(t, append(append([]byte(snapshotMagicV4), cur[8:n-4]...), cur[n:]...))
	if err := g.Restore(io.NopCloser(bytes.NewReader(v4))); err != nil {
		t.Fatal(err)
	}
	if len(g.AdminStates()) != 0 || len(rec.last) != 0 || g.Hash() != e.Hash() {
		t.Fatalf("BFSNAP04 restore left admin states: %v", g.AdminStates())
	}
	// A truncated admin section is corrupt and changes nothing.
	var fhead byteBuffer
	if err := writeSnapshotHead(&fhead, f.st, f.AppliedIndex()); err != nil {
		t.Fatal(err)
	}
	if err := f.Restore(io.NopCloser(bytes.NewReader(data[:len(fhead.b)-3]))); errs.KindOf(err) != errs.Corrupt {
		t.Fatalf("truncated: %v", err)
	}
	if len(f.AdminStates()) != 2 {
		t.Fatal("a refused restore changed the table")
	}
}
