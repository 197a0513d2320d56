package namenode_test

import (
	"testing"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
)

// TestForwardedRefusalKept: a write sent to a follower while the leader is
// in safe mode is refused as the leader refused it (SafeModeException, a
// definite "not done"), not as "leader unreachable" (Unavailable, an
// outcome the client cannot know, which it would have to treat as perhaps
// applied).
func TestForwardedRefusalKept(t *testing.T) {
	x := startCluster(t, 3, nil)
	l, f := x.leader(), x.follower()
	if _, err := api.NewAdminClient(x.conns[l]).SafeMode(x.root(), &api.SafeModeRequest{Action: api.SafeModeAction_SAFE_MODE_ENTER}); err != nil {
		t.Fatal(err)
	}
	_, err := x.client(f).Mkdirs(x.root(), &api.MkdirsRequest{Path: "/refused", Parents: true})
	if err == nil {
		t.Fatal("a write through a follower succeeded with the leader in safe mode")
	}
	if e := errs.FromStatus(err, nil); !errs.IsSafeMode(e) {
		t.Fatalf("a write through a follower with the leader in safe mode: %v (kind %v), want SafeModeException", err, errs.KindOf(e))
	}
}
