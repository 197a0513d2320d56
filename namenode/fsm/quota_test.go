package fsm

import (
	"strings"
	"testing"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
)

// TestFSMSetQuota: CmdSetQuota is the superuser's (a supergroup member's
// too), its quota survives a snapshot, and the restored state enforces it.
func TestFSMSetQuota(t *testing.T) {
	f := New(Config{Superuser: "root", Supergroup: "supergroup"})
	if r := permApply(t, f, CmdMkdirs, &api.MkdirsCommand{Path: "/q", Perm: 0o777}); r.ErrorMsg != "" {
		t.Fatal(r.ErrorMsg)
	}
	for _, c := range []struct {
		caller *api.Caller
		kind   errs.Kind
	}{
		{&api.Caller{User: "alice"}, errs.Permission},
		{&api.Caller{User: "ops", Groups: []string{"supergroup"}}, 0},
		{&api.Caller{User: "root"}, 0},
	} {
		r := permApply(t, f, CmdSetQuota, &api.SetQuotaCommand{Caller: c.caller, Path: "/q", NamespaceQuota: 2, SpaceQuota: -1})
		if permKind(r) != c.kind {
			t.Fatalf("SetQuota as %s: %v %q, want %v", c.caller.User, permKind(r), r.ErrorMsg, c.kind)
		}
	}
	alice := &api.Caller{User: "alice"}
	if r := permApply(t, f, CmdMkdirs, &api.MkdirsCommand{Caller: alice, Path: "/q/a", Perm: 0o755}); r.ErrorMsg != "" {
		t.Fatal(r.ErrorMsg)
	}
	g := restored(t, f)
	r := permApply(t, g, CmdMkdirs, &api.MkdirsCommand{Caller: alice, Path: "/q/b", Perm: 0o755})
	if permKind(r) != errs.Exhausted || !strings.Contains(r.ErrorMsg, "NSQuotaExceededException") {
		t.Fatalf("mkdir past the quota after restore: %v %q", permKind(r), r.ErrorMsg)
	}
	cs, err := g.ContentSummary(alice, "GetContentSummary", "/q")
	if err != nil || cs.Quota != 2 || cs.DirectoryCount != 2 || cs.SpaceQuota != -1 {
		t.Fatalf("content summary after restore: %v %v", cs, err)
	}
	if liveHash(f) != liveHash(g) {
		t.Fatal("restored state differs")
	}
}
