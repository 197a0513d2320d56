package fsm

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
)

// apply encodes and applies one command on f, returning its result.
func permApply(t *testing.T, f *FSM, typ CmdType, msg proto.Message) *api.CommandResult {
	t.Helper()
	data, err := Encode(typ, msg)
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.applyOne(data)
}

func permKind(r *api.CommandResult) errs.Kind { return errs.Kind(r.ErrorKind) }

// TestFSMWriterSurvivesSnapshot: the writer recorded at Create is in the
// FSM snapshot, so a restored namenode refuses other clients too.
func TestFSMWriterSurvivesSnapshot(t *testing.T) {
	f := New(Config{Superuser: "root", Supergroup: "supergroup"})
	bob := &api.Caller{User: "bob", ClientId: "b1"}
	if r := permApply(t, f, CmdMkdirs, &api.MkdirsCommand{Path: "/pub", Perm: 0o777}); r.ErrorMsg != "" {
		t.Fatal(r.ErrorMsg) // nil caller: the namenode itself
	}
	r := permApply(t, f, CmdCreate, &api.CreateCommand{Caller: bob, Path: "/pub/f", Perm: 0o644, Replication: 1, BlockSize: 1024})
	if r.ErrorMsg != "" || r.Status.Owner != "bob" || r.Status.Group != "supergroup" {
		t.Fatalf("create: %v %v", r.ErrorMsg, r.Status)
	}
	id := r.Status.InodeId

	g := restored(t, f)
	for _, c := range []struct {
		caller *api.Caller
		kind   errs.Kind
	}{
		{&api.Caller{User: "eve", ClientId: "e1"}, errs.Permission},
		{&api.Caller{User: "bob", ClientId: "b2"}, errs.Permission},
		{&api.Caller{User: "root", ClientId: "r1"}, errs.Permission},
		{bob, 0},
	} {
		r := permApply(t, g, CmdAddBlock, &api.AddBlockCommand{Caller: c.caller, Path: "/pub/f", InodeId: id})
		if permKind(r) != c.kind {
			t.Fatalf("AddBlock as %s/%s after restore: %v %q, want %v", c.caller.User, c.caller.ClientId, permKind(r), r.ErrorMsg, c.kind)
		}
	}
}

// TestFSMCallers: supergroup members are superusers; a caller without a
// user name is refused everything, reads included.
func TestFSMCallers(t *testing.T) {
	f := New(Config{Superuser: "root", Supergroup: "supergroup"})
	for _, c := range []struct {
		caller *api.Caller
		kind   errs.Kind
	}{
		{&api.Caller{User: "carol", Groups: []string{"supergroup"}}, 0},
		{&api.Caller{User: "dave", Groups: []string{"staff"}}, errs.Permission},
		{&api.Caller{}, errs.Unauthenticated},
	} {
		r := permApply(t, f, CmdMkdirs, &api.MkdirsCommand{Caller: c.caller, Path: "/" + c.caller.User + "x", Perm: 0o755})
		if permKind(r) != c.kind {
			t.Fatalf("mkdirs as %q: %v %q, want %v", c.caller.User, permKind(r), r.ErrorMsg, c.kind)
		}
	}
	defer f.mu.RLock().RUnlock()
	if _, err := f.as(&api.Caller{}, "list", "/"); errs.KindOf(err) != errs.Unauthenticated {
		t.Fatalf("read as nobody: %v", err)
	}
}
