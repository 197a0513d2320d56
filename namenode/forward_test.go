package namenode_test

import (
	"context"
	"testing"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/client"
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

// TestForwardedWriteNamesLeader: a follower's answer to a write it
// forwarded names the leader's address, which a client configured with
// every namenode then calls directly; the leader's own answers name none.
func TestForwardedWriteNamesLeader(t *testing.T) {
	x := startCluster(t, 3, nil)
	l, f := x.leader(), x.follower()
	leaderAddr := x.c.NamenodeAddrs()[l]
	cases := []struct {
		name string
		via  int
		want string
	}{
		{"through a follower", f, leaderAddr},
		{"through the leader", l, ""},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := x.client(tc.via).Mkdirs(x.root(), &api.MkdirsRequest{Path: "/fwd" + string(rune('a'+i)), Parents: true})
			if err != nil {
				t.Fatal(err)
			}
			if got := r.GetHeader().GetLeader(); got != tc.want {
				t.Fatalf("header names leader %q, want %q", got, tc.want)
			}
		})
	}
	cfg := client.DefaultConfig(x.c.NamenodeAddrs()[f], leaderAddr)
	cfg.User = "root"
	cl, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.Mkdirs(context.Background(), "/fwd-client", 0o755, true); err != nil {
		t.Fatal(err)
	}
	if got := cl.CurrentNamenode(); got != leaderAddr {
		t.Fatalf("after a forwarded write the client calls %s, want the leader %s", got, leaderAddr)
	}
}
