package namenode_test

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/namenode"
)

// TestHDFSSnapshotRefusals: the namespace refuses, on leader and follower
// alike, AllowSnapshot and DisallowSnapshot to a user who is not a
// superuser, the other snapshot calls to one who does not own the
// directory, and any write under .snapshot; nothing changes. A Raft
// snapshot and restart keep the namespace snapshot.
func TestHDFSSnapshotRefusals(t *testing.T) {
	x := startCluster(t, 3, func(i int, c *namenode.Config) { c.Raft.SnapshotEvery = 64 })
	l := x.leader()
	x.mkdir(l, "/home/alice")
	cl := x.client(l)
	if _, err := cl.SetOwner(x.root(), &api.SetOwnerRequest{Path: "/home/alice", Owner: "alice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.AllowSnapshot(x.root(), &api.AllowSnapshotRequest{Path: "/home/alice"}); err != nil {
		t.Fatal(err)
	}
	r, err := cl.CreateSnapshot(x.as("alice"), &api.CreateSnapshotRequest{Path: "/home/alice", Name: "s1"})
	if err != nil || r.SnapshotPath != "/home/alice/.snapshot/s1" {
		t.Fatalf("CreateSnapshot: %v %v", r, err)
	}
	for _, i := range []int{l, x.follower()} {
		c := x.client(i)
		_, err := c.AllowSnapshot(x.as("alice"), &api.AllowSnapshotRequest{Path: "/home"})
		wantCode(t, err, codes.PermissionDenied, "Superuser privilege is required")
		_, err = c.DisallowSnapshot(x.as("alice"), &api.DisallowSnapshotRequest{Path: "/home/alice"})
		wantCode(t, err, codes.PermissionDenied, "Superuser privilege is required")
		_, err = c.CreateSnapshot(x.as("bob"), &api.CreateSnapshotRequest{Path: "/home/alice", Name: "s2"})
		wantCode(t, err, codes.PermissionDenied, "owner")
		_, err = c.DeleteSnapshot(x.as("bob"), &api.DeleteSnapshotRequest{Path: "/home/alice", Name: "s1"})
		wantCode(t, err, codes.PermissionDenied, "owner")
		_, err = c.RenameSnapshot(x.as("bob"), &api.RenameSnapshotRequest{Path: "/home/alice", OldName: "s1", NewName: "s2"})
		wantCode(t, err, codes.PermissionDenied, "owner")
		_, err = c.Mkdirs(x.as("alice"), &api.MkdirsRequest{Path: "/home/alice/.snapshot/s1/x"})
		wantCode(t, err, codes.PermissionDenied, "Modification on a read-only snapshot is disallowed")
		_, err = c.CreateSnapshot(x.as("alice"), &api.CreateSnapshotRequest{Path: "/home/alice", Name: "s1"})
		wantCode(t, err, codes.AlreadyExists, "same name")
		_, err = c.Delete(x.root(), &api.DeleteRequest{Path: "/home", Recursive: true})
		wantCode(t, err, codes.FailedPrecondition, "is snapshottable and already has snapshots")
		_, err = c.CreateSnapshot(x.as("alice"), &api.CreateSnapshotRequest{Path: "relative", Name: "s1"})
		wantCode(t, err, codes.InvalidArgument, "")
		ls, err := c.GetSnapshottableDirListing(x.as("bob"), &api.GetSnapshottableDirListingRequest{})
		if err != nil || len(ls.Dirs) != 0 {
			t.Fatalf("bob lists %v %v", ls, err)
		}
	}
	// Every node takes a Raft snapshot; one restarts from it and reads
	// the namespace snapshot from the image.
	x.converge()
	for i := range x.conns {
		if _, err := api.NewAdminClient(x.conns[i]).Snapshot(x.root(), &api.SnapshotRequest{}); err != nil {
			t.Fatalf("snapshot on %d: %v", i, err)
		}
	}
	nl := (x.leader() + 1) % 3
	if err := x.c.StopNamenode(nl); err != nil {
		t.Fatal(err)
	}
	if err := x.c.RestartNamenode(context.Background(), nl); err != nil {
		t.Fatal(err)
	}
	x.converge()
	stale := &api.ReadOptions{Consistency: api.ReadConsistency_READ_CONSISTENCY_STALE}
	ls, err := x.client(nl).GetSnapshottableDirListing(x.as("alice"), &api.GetSnapshottableDirListingRequest{Read: stale})
	if err != nil || len(ls.Dirs) != 1 || ls.Dirs[0].Status.Path != "/home/alice" || ls.Dirs[0].SnapshotCount != 1 || ls.Dirs[0].ParentPath != "/home" {
		t.Fatalf("restarted node lists %v %v", ls, err)
	}
	st, err := x.client(nl).GetFileInfo(x.as("alice"), &api.GetFileInfoRequest{Path: "/home/alice/.snapshot/s1", Read: stale})
	if err != nil || !st.Status.IsDir {
		t.Fatalf("restarted node stats the snapshot: %v %v", st, err)
	}
}
