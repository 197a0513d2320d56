package hdfsdoor

import (
	"context"
	"errors"
	"os"
	"sort"
	"testing"
	"time"

	hdfs "github.com/colinmarc/hdfs/v2"
	"go.uber.org/goleak"

	"github.com/blockfs/blockfs/localcluster"
	"github.com/blockfs/blockfs/namenode"
)

// checkLeaks fails t, after its cleanups, on a goroutine the door's
// servers or connections left: raft's transport keeps a handler per
// inbound connection past Shutdown, which is raft's own.
func checkLeaks(t *testing.T) {
	opts := []goleak.Option{goleak.IgnoreCurrent(), goleak.IgnoreAnyFunction("github.com/hashicorp/raft.(*NetworkTransport).handleConn")}
	t.Cleanup(func() { goleak.VerifyNone(t, opts...) })
}

// startCluster starts namenodes (and datanodes) with the HDFS door on.
func startCluster(t *testing.T, datanodes int) *localcluster.Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Config{
		Dir: t.TempDir(), Datanodes: datanodes, HDFSData: datanodes > 0,
		Namenode: func(_ int, nc *namenode.Config) { nc.HDFSRPC.Addr = "127.0.0.1:0" },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func hdfsClient(t *testing.T, c *localcluster.Cluster, user string) *hdfs.Client {
	t.Helper()
	cl, err := hdfs.NewClient(hdfs.ClientOptions{Addresses: c.HDFSRPCAddrs(), User: user})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// TestNamespaceThroughTheDoor: the namespace methods an HDFS client calls,
// each answered as HDFS answers it (a missing path is os.ErrNotExist, a
// refused one os.ErrPermission), whichever namenode the client reaches
// first (writes on a follower fail over to the leader).
func TestNamespaceThroughTheDoor(t *testing.T) {
	checkLeaks(t)
	c := startCluster(t, 0)
	root := hdfsClient(t, c, "root")
	if err := root.MkdirAll("/door/a/b", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := root.Chmod("/door", 0o777); err != nil {
		t.Fatal(err)
	}
	fi, err := root.Stat("/door/a/b")
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o755 {
		t.Fatalf("stat: %v %v", fi, err)
	}
	if _, err := root.Stat("/door/missing"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stat of a missing path: %v, want not exist", err)
	}
	for _, n := range []string{"x", "y", "z"} {
		if err := root.Mkdir("/door/a/"+n, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	ents, err := root.ReadDir("/door/a")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	if got := len(names); got != 4 || names[0] != "b" || names[3] != "z" {
		t.Fatalf("listing: %v", names)
	}
	if err := root.Rename("/door/a/x", "/door/a/w"); err != nil {
		t.Fatal(err)
	}
	if _, err := root.Stat("/door/a/w"); err != nil {
		t.Fatal(err)
	}
	// rename2 over an existing empty directory replaces it.
	if err := root.Rename("/door/a/w", "/door/a/y"); err != nil {
		t.Fatalf("rename over an empty directory: %v", err)
	}
	if err := root.Remove("/door/a/b"); err != nil {
		t.Fatal(err)
	}
	if err := root.Remove("/door/a"); err == nil {
		t.Fatal("removing a non-empty directory without recursion succeeded")
	}
	// Another user is refused where the permissions say so.
	bob := hdfsClient(t, c, "bob")
	if err := bob.Mkdir("/door/a/bob", 0o755); !errors.Is(err, os.ErrPermission) {
		t.Fatalf("bob's mkdir in root's 0755 directory: %v, want permission denied", err)
	}
	if err := bob.Mkdir("/door/bob", 0o755); err != nil {
		t.Fatalf("bob's mkdir in a 0777 directory: %v", err)
	}
	if fi, err := bob.Stat("/door/bob"); err != nil || fi.(*hdfs.FileInfo).Owner() != "bob" {
		t.Fatalf("bob's directory: %v %v", fi, err)
	}
	if err := root.Chown("/door/bob", "alice", "staff"); err != nil {
		t.Fatal(err)
	}
	cs, err := root.GetContentSummary("/door")
	if err != nil || cs.DirectoryCount() < 3 {
		t.Fatalf("content summary: %+v %v", cs, err)
	}
	// Extended attributes and times, as HDFS's xattr and setTimes calls.
	if err := root.SetXAttr("/door/bob", "user.color", "blue"); err != nil {
		t.Fatal(err)
	}
	if xs, err := root.ListXAttrs("/door/bob"); err != nil || len(xs) != 1 {
		t.Fatalf("listed xattrs: %v %v", xs, err)
	}
	if xs, err := root.GetXAttrs("/door/bob", "user.color"); err != nil || xs["user.color"] != "blue" {
		t.Fatalf("xattrs: %v %v", xs, err)
	}
	if err := root.RemoveXAttr("/door/bob", "user.color"); err != nil {
		t.Fatal(err)
	}
	if _, err := root.GetXAttrs("/door/bob", "user.color"); err == nil {
		t.Fatal("a removed attribute is still there")
	}
	when := time.UnixMilli(1_600_000_000_000)
	if err := root.Chtimes("/door/bob", when, when); err != nil {
		t.Fatal(err)
	}
	if fi, err := root.Stat("/door/bob"); err != nil || !fi.ModTime().Equal(when) {
		t.Fatalf("mtime after setTimes: %v %v", fi, err)
	}
	if _, err := root.StatFs(); err != nil {
		t.Fatal(err)
	}
	if _, err := root.ServerDefaults(); err != nil {
		t.Fatal(err)
	}
}
