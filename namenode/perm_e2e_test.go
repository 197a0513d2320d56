package namenode_test

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/namenode"
)

var permCallSeq atomic.Uint64

// asClient returns a context for one call made as user from the client
// with id client (a fresh call id each time, so the retry cache never
// answers it).
func (x *tc) asClient(user, client string) context.Context {
	return metadata.AppendToOutgoingContext(x.t.Context(), namenode.UserKey, user,
		namenode.ClientIDKey, client, namenode.CallIDKey, strconv.FormatUint(permCallSeq.Add(1), 10))
}

// dump renders the whole namespace, as the superuser sees it, one line per
// inode: everything a refused operation must leave as it was.
func (x *tc) dump(c api.ClientServiceClient) string {
	x.t.Helper()
	var lines []string
	var walk func(p string)
	walk = func(p string) {
		r, err := c.ListStatus(x.root(), &api.ListStatusRequest{Path: p})
		if err != nil {
			x.t.Fatal(err)
		}
		for _, e := range r.Entries {
			lines = append(lines, fmt.Sprintf("%s id=%d %s:%s %o mtime=%d len=%d blocks=%d uc=%v",
				e.Path, e.InodeId, e.Owner, e.Group, e.Mode, e.MtimeUnixMs, e.Length, e.Blocks, e.UnderConstruction))
			if e.IsDir {
				walk(e.Path)
			}
		}
	}
	walk("/")
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// permSetup builds, as root and then as bob and eve:
//
//	/tmp                root 01777
//	/tmp/bob.txt        bob 0644 complete
//	/tmp/eve.txt        eve 0644 complete
//	/home/bob           bob 0755
//	/home/bob/open      bob 0644 under construction by bob on client "bob-1", one block
//	/pub                root 0777 (not sticky)
//	/pub/tree/sub/f     bob (directories 0755, file 0644)
func permSetup(x *tc, c api.ClientServiceClient) (openID uint64, first *api.Block) {
	t := x.t
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	closed := func(user, p string) {
		r, err := c.Create(x.asClient(user, user+"-1"), &api.CreateRequest{Path: p, Mode: 0o644, CreateParent: true})
		must(r, err)
		must(c.Complete(x.asClient(user, user+"-1"), &api.CompleteRequest{Path: p, InodeId: r.Status.InodeId}))
	}
	must(c.Mkdirs(x.root(), &api.MkdirsRequest{Path: "/tmp", Mode: 0o1777}))
	must(c.Mkdirs(x.root(), &api.MkdirsRequest{Path: "/home/bob", Mode: 0o755, Parents: true}))
	must(c.SetOwner(x.root(), &api.SetOwnerRequest{Path: "/home/bob", Owner: "bob"}))
	must(c.Mkdirs(x.root(), &api.MkdirsRequest{Path: "/pub", Mode: 0o777}))
	closed("bob", "/tmp/bob.txt")
	closed("eve", "/tmp/eve.txt")
	must(c.Mkdirs(x.asClient("bob", "bob-1"), &api.MkdirsRequest{Path: "/pub/tree/sub", Mode: 0o755, Parents: true}))
	closed("bob", "/pub/tree/sub/f")
	r, err := c.Create(x.asClient("bob", "bob-1"), &api.CreateRequest{Path: "/home/bob/open", Mode: 0o644})
	must(r, err)
	ab, err := c.AddBlock(x.asClient("bob", "bob-1"), &api.AddBlockRequest{Path: "/home/bob/open", InodeId: r.Status.InodeId})
	must(ab, err)
	return r.Status.InodeId, ab.Block.Block
}

// TestPermissionAttacks replays, through the gRPC API, the attacks that
// used to succeed. Each must now fail with PermissionDenied naming the
// user, the access and the inode, and leave the namespace as it was; the
// matching legitimate call must still work.
func TestPermissionAttacks(t *testing.T) {
	x := startCluster(t, 1, nil)
	x.registerDatanodes(3)
	c := x.client(0)
	openID, first := permSetup(x, c)
	grown := &api.Block{Id: first.Id, GenStamp: first.GenStamp, Length: 100}

	cases := []struct {
		name   string
		attack func() error
		msg    []string
		legit  func() error // the same operation by someone entitled to it
	}{
		{"AddBlock on someone else's 0644 file under construction", func() error {
			r, err := c.AddBlock(x.asClient("eve", "eve-1"), &api.AddBlockRequest{Path: "/home/bob/open", InodeId: openID, Previous: grown})
			if err == nil && len(r.Token) > 0 {
				t.Error("the attacker got a write token")
			}
			return err
		}, []string{"user=eve", "access=-w-", `inode="/home/bob/open"`, "not the writer"}, func() error {
			_, err := c.AddBlock(x.asClient("bob", "bob-1"), &api.AddBlockRequest{Path: "/home/bob/open", InodeId: openID, Previous: grown})
			return err
		}},
		{"AddBlock by the owner from another client", func() error {
			_, err := c.AddBlock(x.asClient("bob", "bob-2"), &api.AddBlockRequest{Path: "/home/bob/open", InodeId: openID, Previous: grown})
			return err
		}, []string{"user=bob", "not the writer"}, nil},
		{"Create with overwrite of someone else's file", func() error {
			_, err := c.Create(x.asClient("eve", "eve-1"), &api.CreateRequest{Path: "/tmp/bob.txt", Overwrite: true})
			return err
		}, []string{"user=eve", `inode="/tmp/bob.txt"`}, func() error {
			_, err := c.Create(x.asClient("bob", "bob-1"), &api.CreateRequest{Path: "/tmp/bob.txt", Overwrite: true})
			return err
		}},
		{"rename someone else's file in a sticky 1777 directory", func() error {
			_, err := c.Rename(x.asClient("eve", "eve-1"), &api.RenameRequest{Src: "/tmp/bob.txt", Dst: "/tmp/mine"})
			return err
		}, []string{"user=eve", `inode="/tmp/bob.txt"`, "sticky bit"}, func() error {
			_, err := c.Rename(x.asClient("bob", "bob-1"), &api.RenameRequest{Src: "/tmp/bob.txt", Dst: "/tmp/bob2.txt"})
			return err
		}},
		{"delete someone else's file in a sticky 1777 directory", func() error {
			_, err := c.Delete(x.asClient("eve", "eve-1"), &api.DeleteRequest{Path: "/tmp/bob2.txt"})
			return err
		}, []string{"user=eve", "access=-wx", `inode="/tmp/bob2.txt"`, "sticky bit"}, func() error {
			_, err := c.Delete(x.asClient("bob", "bob-1"), &api.DeleteRequest{Path: "/tmp/bob2.txt"})
			return err
		}},
		{"rename into someone else's 0755 directory", func() error {
			_, err := c.Rename(x.asClient("eve", "eve-1"), &api.RenameRequest{Src: "/tmp/eve.txt", Dst: "/home/bob/eve.txt"})
			return err
		}, []string{"user=eve", "access=-wx", `inode="/home/bob"`, "destination parent"}, func() error {
			_, err := c.Rename(x.asClient("eve", "eve-1"), &api.RenameRequest{Src: "/tmp/eve.txt", Dst: "/pub/eve.txt"})
			return err
		}},
		{"recursive delete of someone else's tree", func() error {
			_, err := c.Delete(x.asClient("eve", "eve-1"), &api.DeleteRequest{Path: "/pub/tree", Recursive: true})
			return err
		}, []string{"user=eve", "access=rwx", `inode="/pub/tree"`}, func() error {
			_, err := c.Delete(x.asClient("bob", "bob-1"), &api.DeleteRequest{Path: "/pub/tree", Recursive: true})
			return err
		}},
	}
	// In order: each legitimate call leaves what the next case attacks.
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := x.dump(c)
			err := tc.attack()
			wantCode(t, err, codes.PermissionDenied, "")
			for _, m := range tc.msg {
				if !strings.Contains(status.Convert(err).Message(), m) {
					t.Fatalf("error %q does not mention %q", status.Convert(err).Message(), m)
				}
			}
			if after := x.dump(c); after != before {
				t.Fatalf("a refused call changed the namespace:\nbefore\n%s\nafter\n%s", before, after)
			}
			if tc.legit != nil {
				if err := tc.legit(); err != nil {
					t.Fatalf("legitimate call failed: %v", err)
				}
			}
		})
	}
}
