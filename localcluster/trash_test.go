package localcluster_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/localcluster"
	"github.com/blockfs/blockfs/namenode"
)

// TestTrash (issue 22): with a trash interval, a delete through the trash
// moves the file under the user's .Trash/Current, where it reads back; the
// leader checkpoints Current and, once a checkpoint is older than the
// interval, deletes it for good. A path already in the trash is deleted
// at once, and without a trash nothing moves.
func TestTrash(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Config{Namenodes: 1, Datanodes: 1, Dir: t.TempDir(),
		Namenode: func(_ int, nc *namenode.Config) {
			nc.Namespace.DefaultReplication = 1
			nc.TrashInterval, nc.TrashCheckpoint = 2*time.Second, 300*time.Millisecond
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl, err := c.ClientAs("alice")
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	root, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if err := root.Mkdirs(ctx, "/user/alice", 0o755, true); err != nil {
		t.Fatal(err)
	}
	if err := root.SetOwner(ctx, "/user/alice", "alice", ""); err != nil {
		t.Fatal(err)
	}
	if err := cl.WriteFile(ctx, "/user/alice/f", []byte("hello"), client.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dst, err := cl.MoveToTrash(ctx, "/user/alice/f")
	if err != nil || dst != "/user/alice/.Trash/Current/user/alice/f" {
		t.Fatalf("move to trash: %q %v", dst, err)
	}
	if _, err := cl.Stat(ctx, "/user/alice/f"); !errs.Is(err, errs.NotFound) {
		t.Fatalf("the file is still there: %v", err)
	}
	// Checkpointed by the leader, then expunged once older than 2 s.
	var checkpoint string
	for checkpoint == "" {
		for e, err := range cl.List(ctx, "/user/alice/.Trash") {
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(e.Path, "/Current") {
				checkpoint = e.Path
			}
		}
		if ctx.Err() != nil {
			t.Fatal("the emptier never checkpointed")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got, err := cl.ReadFile(ctx, checkpoint+"/user/alice/f"); err != nil || string(got) != "hello" {
		t.Fatalf("the checkpointed file: %q %v", got, err)
	}
	for {
		if _, err := cl.Stat(ctx, checkpoint); errs.Is(err, errs.NotFound) {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the emptier never expunged the checkpoint")
		}
		time.Sleep(100 * time.Millisecond)
	}
	// In the trash already: nothing moves (the caller deletes for good).
	if err := cl.Mkdirs(ctx, "/user/alice/.Trash/keep", 0o700, true); err != nil {
		t.Fatal(err)
	}
	if dst, err := cl.MoveToTrash(ctx, "/user/alice/.Trash/keep"); dst != "" || err != nil {
		t.Fatalf("a path in the trash: %q %v", dst, err)
	}
	if _, err := cl.MoveToTrash(ctx, "/user"); !errs.Is(err, errs.Invalid) {
		t.Fatalf("the trash's ancestor: %v", err)
	}
}
