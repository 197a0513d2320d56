package hsnapshot

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/namenode/fsm"
)

// fakeCore records what the door proposes and answers a fixed result.
type fakeCore struct {
	proposed []fsm.CmdType
	msgs     []proto.Message
	result   *api.CommandResult
	audited  []string
}

func (f *fakeCore) Propose(_ context.Context, _ string, t fsm.CmdType, msg proto.Message) (*api.CommandResult, *api.ResponseHeader, error) {
	f.proposed = append(f.proposed, t)
	f.msgs = append(f.msgs, msg)
	return f.result, &api.ResponseHeader{}, nil
}
func (f *fakeCore) Caller(context.Context) *api.Caller { return &api.Caller{User: "alice"} }
func (f *fakeCore) Read(context.Context, string, *api.ReadOptions) (*api.Caller, *api.ResponseHeader, error) {
	return &api.Caller{User: "alice"}, &api.ResponseHeader{}, nil
}
func (f *fakeCore) Audited(_ context.Context, cmd, _, _ string, err error) {
	if err != nil {
		cmd += "!"
	}
	f.audited = append(f.audited, cmd)
}
func (f *fakeCore) NowMs() int64  { return 42 }
func (f *fakeCore) FSM() *fsm.FSM { return fsm.New(fsm.Config{Superuser: "root"}) }

// TestDoorProposes: each write becomes its own command with the caller,
// the path and (CreateSnapshot) the node's time; a bad path is refused
// before anything is proposed; every call is audited.
func TestDoorProposes(t *testing.T) {
	ctx := context.Background()
	f := &fakeCore{result: &api.CommandResult{Status: &api.FileStatus{Path: "/d/.snapshot/s"}}}
	s := New(f)
	r, err := s.CreateSnapshot(ctx, &api.CreateSnapshotRequest{Path: "/d", Name: "s"})
	if err != nil || r.SnapshotPath != "/d/.snapshot/s" {
		t.Fatalf("CreateSnapshot: %v %v", r, err)
	}
	if c := f.msgs[0].(*api.CreateSnapshotCommand); c.MtimeUnixMs != 42 || c.Caller.User != "alice" || c.Path != "/d" || c.Name != "s" {
		t.Fatalf("proposed %v", c)
	}
	calls := []func() error{
		func() error { _, err := s.AllowSnapshot(ctx, &api.AllowSnapshotRequest{Path: "/d"}); return err },
		func() error { _, err := s.DisallowSnapshot(ctx, &api.DisallowSnapshotRequest{Path: "/d"}); return err },
		func() error {
			_, err := s.DeleteSnapshot(ctx, &api.DeleteSnapshotRequest{Path: "/d", Name: "s"})
			return err
		},
		func() error {
			_, err := s.RenameSnapshot(ctx, &api.RenameSnapshotRequest{Path: "/d", OldName: "s", NewName: "t"})
			return err
		},
	}
	for _, call := range calls {
		if err := call(); err != nil {
			t.Fatal(err)
		}
	}
	want := []fsm.CmdType{fsm.CmdCreateSnapshot, fsm.CmdAllowSnapshot, fsm.CmdDisallowSnapshot, fsm.CmdDeleteSnapshot, fsm.CmdRenameSnapshot}
	if len(f.proposed) != len(want) {
		t.Fatalf("proposed %v, want %v", f.proposed, want)
	}
	for i := range want {
		if f.proposed[i] != want[i] {
			t.Fatalf("proposed %v, want %v", f.proposed, want)
		}
	}
	if _, err := s.AllowSnapshot(ctx, &api.AllowSnapshotRequest{Path: "d//x"}); errs.KindOf(err) != errs.Invalid {
		t.Fatalf("a bad path: %v", err)
	}
	if len(f.proposed) != len(want) {
		t.Fatal("a bad path was proposed")
	}
	ls, err := s.GetSnapshottableDirListing(ctx, &api.GetSnapshottableDirListingRequest{})
	if err != nil || len(ls.Dirs) != 0 {
		t.Fatalf("listing of an empty namespace: %v %v", ls, err)
	}
	if got := len(f.audited); got != 7 || f.audited[5] != "allowSnapshot!" {
		t.Fatalf("audited %v", f.audited)
	}
}
