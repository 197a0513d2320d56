package fsm

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/namespace"
)

// blockRecorder is a BlockEvents that keeps the expected block ids.
type blockRecorder struct {
	expected map[uint64]uint64 // id -> generation stamp
	forgot   []uint64
}

func newBlockRecorder() *blockRecorder { return &blockRecorder{expected: map[uint64]uint64{}} }

func (r *blockRecorder) Expect(b namespace.Block, _ namespace.ID, _ uint32, _ bool) {
	r.expected[b.ID] = b.GenStamp
}

func (r *blockRecorder) Forget(bs []namespace.Block) {
	for _, b := range bs {
		delete(r.expected, b.ID)
		r.forgot = append(r.forgot, b.ID)
	}
}

// TestFSMHDFSSnapshots: the namespace snapshot commands, who may run them,
// a snapshot that keeps a deleted file readable and its blocks expected
// (through a Raft snapshot and restore too), and the blocks released when
// the last snapshot holding them is deleted.
func TestFSMHDFSSnapshots(t *testing.T) {
	rec := newBlockRecorder()
	f := New(Config{Superuser: "root", Supergroup: "supergroup", Events: rec})
	root := &api.Caller{User: "root"}
	alice := &api.Caller{User: "alice", ClientId: "a1"}
	bob := &api.Caller{User: "bob"}
	ok := func(r *api.CommandResult) *api.CommandResult {
		t.Helper()
		if r.ErrorMsg != "" {
			t.Fatal(r.ErrorMsg)
		}
		return r
	}
	ok(permApply(t, f, CmdMkdirs, &api.MkdirsCommand{Caller: root, Path: "/d", Perm: 0o777}))
	ok(permApply(t, f, CmdMkdirs, &api.MkdirsCommand{Caller: alice, Path: "/d/own", Perm: 0o755}))
	c := ok(permApply(t, f, CmdCreate, &api.CreateCommand{Caller: alice, Path: "/d/own/f", Perm: 0o644, Replication: 2, BlockSize: 1024}))
	ino := c.Status.InodeId
	b := ok(permApply(t, f, CmdAddBlock, &api.AddBlockCommand{Caller: alice, Path: "/d/own/f", InodeId: ino})).Block
	b.Length = 700
	ok(permApply(t, f, CmdComplete, &api.CompleteCommand{Caller: alice, Path: "/d/own/f", InodeId: ino, Blocks: []*api.Block{b}}))

	steps := []struct {
		name string
		typ  CmdType
		msg  proto.Message
		kind errs.Kind
		sub  string
	}{
		{"allow by a user", CmdAllowSnapshot, &api.AllowSnapshotCommand{Caller: alice, Path: "/d/own"}, errs.Permission, "Superuser"},
		{"create before allow", CmdCreateSnapshot, &api.CreateSnapshotCommand{Caller: alice, Path: "/d/own", Name: "s1"}, errs.Precondition, "not a snapshottable"},
		{"allow", CmdAllowSnapshot, &api.AllowSnapshotCommand{Caller: root, Path: "/d/own"}, 0, ""},
		{"allow nested", CmdAllowSnapshot, &api.AllowSnapshotCommand{Caller: root, Path: "/d"}, errs.Precondition, "Nested"},
		{"create by another user", CmdCreateSnapshot, &api.CreateSnapshotCommand{Caller: bob, Path: "/d/own", Name: "s1"}, errs.Permission, "owner"},
		{"create", CmdCreateSnapshot, &api.CreateSnapshotCommand{Caller: alice, Path: "/d/own", Name: "s1", MtimeUnixMs: 5}, 0, ""},
		{"create again", CmdCreateSnapshot, &api.CreateSnapshotCommand{Caller: alice, Path: "/d/own", Name: "s1"}, errs.Exist, "same name"},
		{"write under the snapshot", CmdMkdirs, &api.MkdirsCommand{Caller: root, Path: "/d/own/.snapshot/s1/x", Perm: 0o755}, errs.Permission, "read-only snapshot"},
		{"delete the live file", CmdDelete, &api.DeleteCommand{Caller: alice, Path: "/d/own/f"}, 0, ""},
		{"delete the directory", CmdDelete, &api.DeleteCommand{Caller: root, Path: "/d", Recursive: true}, errs.Precondition, "already has snapshots"},
		{"disallow with snapshots", CmdDisallowSnapshot, &api.DisallowSnapshotCommand{Caller: root, Path: "/d/own"}, errs.Precondition, "has snapshot"},
		{"rename", CmdRenameSnapshot, &api.RenameSnapshotCommand{Caller: alice, Path: "/d/own", OldName: "s1", NewName: "kept"}, 0, ""},
		{"rename by another user", CmdRenameSnapshot, &api.RenameSnapshotCommand{Caller: bob, Path: "/d/own", OldName: "kept", NewName: "x"}, errs.Permission, "owner"},
	}
	for _, s := range steps {
		r := permApply(t, f, s.typ, s.msg)
		if permKind(r) != s.kind || !strings.Contains(r.ErrorMsg, s.sub) {
			t.Fatalf("%s: %v %q, want %v %q", s.name, permKind(r), r.ErrorMsg, s.kind, s.sub)
		}
		if s.name == "delete the live file" && len(r.Removed) != 0 {
			t.Fatalf("the live delete lists the held block as removed: %v", r.Removed)
		}
		if s.name == "create" && r.Status.GetPath() != "/d/own/.snapshot/s1" {
			t.Fatalf("create answered %q", r.Status.GetPath())
		}
	}
	if _, held := rec.expected[b.Id]; !held || slices.Contains(rec.forgot, b.Id) {
		t.Fatalf("the deleted file's block was forgotten though a snapshot holds it: %v", rec.forgot)
	}
	readSnap := func(f *FSM) (fi namespace.FileInfo, err error) {
		p, _ := namespace.ParsePath("/d/own/.snapshot/kept/f")
		f.View(func(r Reader) {
			var s ReadSession
			if s, err = r.As(alice, "GetFileInfo", p.String()); err == nil {
				fi, err = s.Stat(p)
			}
		})
		return fi, err
	}
	if fi, err := readSnap(f); err != nil || fi.Length != 700 {
		t.Fatalf("snapshot file %+v %v", fi, err)
	}

	// A Raft snapshot and restore keep the namespace snapshot and what it
	// holds; the restored block map expects the held block.
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	rec2 := newBlockRecorder()
	g := New(Config{Superuser: "root", Supergroup: "supergroup", Events: rec2})
	if err := g.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(t, snap)))); err != nil {
		t.Fatal(err)
	}
	snap.Release()
	if liveHash(f) != liveHash(g) {
		t.Fatal("restored state differs")
	}
	if _, ok := rec2.expected[b.Id]; !ok {
		t.Fatal("the restored block map does not expect the held block")
	}
	if fi, err := readSnap(g); err != nil || fi.Length != 700 {
		t.Fatalf("snapshot file after restore %+v %v", fi, err)
	}
	dirs, err := g.SnapshottableDirs(alice, "GetSnapshottableDirListing")
	if err != nil || len(dirs) != 1 || dirs[0].Dir.Path != "/d/own" || dirs[0].Snapshots != 1 {
		t.Fatalf("snapshottable dirs %+v %v", dirs, err)
	}
	if dirs, _ := g.SnapshottableDirs(bob, "GetSnapshottableDirListing"); len(dirs) != 0 {
		t.Fatalf("bob sees %+v", dirs)
	}

	// Deleting the snapshot releases the block, on both.
	for _, x := range []struct {
		f   *FSM
		rec *blockRecorder
	}{{f, rec}, {g, rec2}} {
		r := ok(permApply(t, x.f, CmdDeleteSnapshot, &api.DeleteSnapshotCommand{Caller: alice, Path: "/d/own", Name: "kept"}))
		if len(r.Removed) != 1 || r.Removed[0].Id != b.Id {
			t.Fatalf("delete snapshot removed %v", r.Removed)
		}
		if _, ok := x.rec.expected[b.Id]; ok {
			t.Fatal("the released block is still expected")
		}
		ok(permApply(t, x.f, CmdDisallowSnapshot, &api.DisallowSnapshotCommand{Caller: root, Path: "/d/own"}))
	}
	if liveHash(f) != liveHash(g) {
		t.Fatal("the two states differ after the same commands")
	}
}
