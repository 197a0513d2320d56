package namenode_test

import (
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/namenode"
)

// TestRetriedWriteAppliesOnce: a write retried with the same client and
// call id (a client that lost the answer) gets the first answer again on
// any node, before and after a snapshot restore; a new call id is a new
// write.
func TestRetriedWriteAppliesOnce(t *testing.T) {
	x := startCluster(t, 3, nil)
	call := func(node int, callID string, p string) error {
		ctx := metadata.AppendToOutgoingContext(x.root(), namenode.ClientIDKey, "client-1", namenode.CallIDKey, callID)
		_, err := x.client(node).Create(ctx, &api.CreateRequest{Path: p})
		return err
	}
	l, f := x.leader(), x.follower()
	if err := call(l, "1", "/once"); err != nil {
		t.Fatal(err)
	}
	for _, node := range []int{l, f} {
		if err := call(node, "1", "/once"); err != nil {
			t.Fatalf("retry on node %d: %v, want the first answer (success)", node, err)
		}
	}
	wantCode(t, call(l, "2", "/once"), codes.AlreadyExists, "/once")
	// A failed call's retry gets the same failure.
	wantCode(t, call(f, "3", "/no/parent"), codes.NotFound, "")
	wantCode(t, call(l, "3", "/no/parent"), codes.NotFound, "")

	// The cache survives a snapshot and restart.
	for i := range x.conns {
		if _, err := api.NewAdminClient(x.conns[i]).Snapshot(x.root(), &api.SnapshotRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := x.c.StopNamenode(f); err != nil {
		t.Fatal(err)
	}
	if err := x.c.RestartNamenode(t.Context(), f); err != nil {
		t.Fatal(err)
	}
	x.converge()
	if err := call(f, "1", "/once"); err != nil {
		t.Fatalf("retry after a restart from snapshot: %v", err)
	}
}

// TestRetryCacheIsPerUser: another user who replays someone's (client id,
// call id) is not handed that call's cached answer; the call runs as them
// and meets the permission checks.
func TestRetryCacheIsPerUser(t *testing.T) {
	x := startCluster(t, 3, nil)
	l := x.leader()
	named := func(user, p string) error {
		ctx := metadata.AppendToOutgoingContext(x.as(user), namenode.ClientIDKey, "client-1", namenode.CallIDKey, "7")
		_, err := x.client(l).Create(ctx, &api.CreateRequest{Path: p})
		return err
	}
	if err := named("root", "/rootfile"); err != nil {
		t.Fatal(err)
	}
	if err := named("root", "/rootfile"); err != nil {
		t.Fatalf("root's own retry: %v", err)
	}
	wantCode(t, named("mallory", "/rootfile"), codes.PermissionDenied, "mallory")
}
