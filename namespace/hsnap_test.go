package namespace

import (
	"bytes"
	"encoding/binary"
	"slices"
	"testing"

	"github.com/blockfs/blockfs/errs"
)

// snapFixture is fixture with /a snapshottable and snapshot "s1" of it
// taken by alice at time 10.
func snapFixture(t *testing.T) *Tree {
	t.Helper()
	tr := fixture(t)
	must(t, tr.As(nil, "AllowSnapshot").AllowSnapshot(mustPath("/a")))
	p, err := tr.As(alice, "CreateSnapshot").CreateSnapshot(mustPath("/a"), "s1", 10)
	must(t, err)
	if p != "/a/.snapshot/s1" {
		t.Fatalf("snapshot path %q", p)
	}
	return tr
}

// reread writes tr's image and reads it back, checking the hash.
func reread(t *testing.T, tr *Tree) *Tree {
	t.Helper()
	var buf bytes.Buffer
	must(t, tr.WriteImage(&buf))
	back, err := ReadImage(&buf)
	must(t, err)
	if back.Hash() != tr.Hash() {
		t.Fatal("image round trip changed the hash")
	}
	return back
}

func TestSnapshotKeepsContents(t *testing.T) {
	tr := snapFixture(t)
	before := blocksOf(t, tr, "/a/f")
	// The live file goes; the snapshot keeps it and its blocks.
	removed, err := tr.Delete(mustPath("/a/f"), false, 20)
	must(t, err)
	if len(removed) != 2 {
		t.Fatalf("removed %v", removed)
	}
	for _, b := range removed {
		if !tr.HeldBySnapshot(b.ID) {
			t.Fatalf("block %v not held", b)
		}
	}
	if _, err := tr.Stat(mustPath("/a/f")); errs.KindOf(err) != errs.NotFound {
		t.Fatalf("live file still there: %v", err)
	}
	for _, tr := range []*Tree{tr, reread(t, tr)} {
		fi := mustStat(t, tr, "/a/.snapshot/s1/f")
		if fi.Length != 150 || fi.State != Complete || fi.Path != "/a/.snapshot/s1/f" {
			t.Fatalf("snapshot file %+v", fi)
		}
		if got := blocksOf(t, tr, "/a/.snapshot/s1/f"); !slices.Equal(got, before) {
			t.Fatalf("snapshot blocks %v, want %v", got, before)
		}
		var seen []uint64
		tr.ForEachBlock(func(b Block, _ ID, repl uint32, complete bool) {
			if slices.ContainsFunc(before, func(x Block) bool { return x.ID == b.ID }) {
				seen = append(seen, b.ID)
				if repl != 3 || !complete {
					t.Fatalf("held block %v: replication %d complete %v", b, repl, complete)
				}
			}
		})
		if len(seen) != 2 {
			t.Fatalf("ForEachBlock yields held %v", seen)
		}
		// The file under construction was frozen closed, without its
		// empty last block.
		if uc := mustStat(t, tr, "/a/.snapshot/s1/uc"); uc.State != Complete || uc.NumBlocks != 0 {
			t.Fatalf("snapshot of an open file %+v", uc)
		}
		ls, _, err := tr.List(mustPath("/a/.snapshot"), "", 0)
		must(t, err)
		if len(ls) != 1 || ls[0].Name != "s1" || ls[0].MtimeMs != 10 || !ls[0].IsDir {
			t.Fatalf("listing of .snapshot %+v", ls)
		}
		cs, err := tr.As(nil, "GetContentSummary").ContentSummary(mustPath("/a/.snapshot/s1"))
		must(t, err)
		if cs.Length != 150 || cs.FileCount != 3 {
			t.Fatalf("content summary %+v", cs)
		}
	}
	released, err := tr.As(alice, "DeleteSnapshot").DeleteSnapshot(mustPath("/a"), "s1")
	must(t, err)
	if len(released) != 2 || tr.HeldBlocks() != 0 || tr.HeldBySnapshot(before[0].ID) {
		t.Fatalf("released %v, held %d", released, tr.HeldBlocks())
	}
	if _, err := tr.Stat(mustPath("/a/.snapshot/s1")); errs.KindOf(err) != errs.NotFound {
		t.Fatalf("deleted snapshot still there: %v", err)
	}
	n := 0
	tr.ForEachBlock(func(Block, ID, uint32, bool) { n++ })
	if _, _, want := tr.Counts(); n != want {
		t.Fatalf("ForEachBlock yields %d blocks, tree has %d", n, want)
	}
	reread(t, tr)
}

func TestSnapshotAfterLiveChanges(t *testing.T) {
	tr := snapFixture(t)
	// Append reopens the last block under a new stamp: the snapshot reads
	// it at that stamp and at its old length.
	s := tr.As(alice, "Append")
	_, reopened, err := s.AppendLast(mustPath("/a/f"), tr.AllocGenStamp(), 30)
	must(t, err)
	if reopened == nil {
		t.Fatal("last block not reopened")
	}
	got := blocksOf(t, tr, "/a/.snapshot/s1/f")
	if got[1].GenStamp != reopened.GenStamp || got[1].Length != 50 || mustStat(t, tr, "/a/.snapshot/s1/f").Length != 150 {
		t.Fatalf("snapshot blocks after append %v (reopened %v)", got, *reopened)
	}
	// The live file is renamed away, then deleted: the snapshot still
	// reads at the last stamp it had.
	must(t, tr.Rename(mustPath("/a/f"), mustPath("/tmp/f"), 31))
	_, err = tr.Delete(mustPath("/tmp/f"), false, 32)
	must(t, err)
	got = blocksOf(t, tr, "/a/.snapshot/s1/f")
	if got[1].GenStamp != reopened.GenStamp {
		t.Fatalf("held block stamp %v, want %d", got, reopened.GenStamp)
	}
	back := reread(t, tr)
	if g := blocksOf(t, back, "/a/.snapshot/s1/f"); !slices.Equal(g, got) {
		t.Fatalf("after restore %v, want %v", g, got)
	}
	// A second snapshot, named by default, sees the new state; a rename
	// keeps the contents.
	p, err := tr.As(nil, "CreateSnapshot").CreateSnapshot(mustPath("/a"), "", 1700000000123)
	must(t, err)
	if p != "/a/.snapshot/s20231114-221320.123" {
		t.Fatalf("default name: %q", p)
	}
	must(t, tr.As(alice, "RenameSnapshot").RenameSnapshot(mustPath("/a"), "s1", "zz"))
	if fi := mustStat(t, tr, "/a/.snapshot/zz/f"); fi.Length != 150 {
		t.Fatalf("renamed snapshot %+v", fi)
	}
	if _, err := tr.Stat(mustPath("/a/.snapshot/s20231114-221320.123/f")); errs.KindOf(err) != errs.NotFound {
		t.Fatalf("file deleted before the second snapshot: %v", err)
	}
	ls, _, err := tr.List(mustPath("/a/.snapshot"), "", 0)
	must(t, err)
	if len(ls) != 2 || ls[0].Name != "s20231114-221320.123" || ls[1].Name != "zz" {
		t.Fatalf("listing %+v", ls)
	}
	reread(t, tr)
	dirs := tr.As(bob, "GetSnapshottableDirListing").SnapshottableDirs()
	if len(dirs) != 0 {
		t.Fatalf("bob sees %+v", dirs)
	}
	dirs = tr.As(alice, "GetSnapshottableDirListing").SnapshottableDirs()
	if len(dirs) != 1 || dirs[0].Dir.Path != "/a" || dirs[0].Snapshots != 2 || dirs[0].Limit != MaxSnapshots {
		t.Fatalf("alice sees %+v", dirs)
	}
}

func TestSnapshotRefusals(t *testing.T) {
	cases := []struct {
		name string
		do   func(tr *Tree) error
		kind errs.Kind
		sub  string
	}{
		{"allow by a user", func(tr *Tree) error { return tr.As(alice, "AllowSnapshot").AllowSnapshot(mustPath("/a/b")) }, errs.Permission, "Superuser privilege"},
		{"disallow by a user", func(tr *Tree) error { return tr.As(alice, "DisallowSnapshot").DisallowSnapshot(mustPath("/a")) }, errs.Permission, "Superuser privilege"},
		{"nested below", func(tr *Tree) error { return tr.As(nil, "AllowSnapshot").AllowSnapshot(mustPath("/a/b")) }, errs.Precondition, "the ancestor /a"},
		{"nested above", func(tr *Tree) error { return tr.As(nil, "AllowSnapshot").AllowSnapshot(mustPath("/")) }, errs.Precondition, "the subdirectory /a"},
		{"allow a file", func(tr *Tree) error { return tr.As(nil, "AllowSnapshot").AllowSnapshot(mustPath("/x")) }, errs.NotDir, "not a directory"},
		{"disallow with snapshots", func(tr *Tree) error { return tr.As(nil, "DisallowSnapshot").DisallowSnapshot(mustPath("/a")) }, errs.Precondition, "has snapshot(s)"},
		{"create not snapshottable", func(tr *Tree) error {
			_, err := tr.As(nil, "CreateSnapshot").CreateSnapshot(mustPath("/tmp"), "s", 1)
			return err
		}, errs.Precondition, "not a snapshottable directory"},
		{"create by another user", func(tr *Tree) error {
			_, err := tr.As(bob, "CreateSnapshot").CreateSnapshot(mustPath("/a"), "s2", 1)
			return err
		}, errs.Permission, "owner"},
		{"duplicate", func(tr *Tree) error {
			_, err := tr.As(alice, "CreateSnapshot").CreateSnapshot(mustPath("/a"), "s1", 1)
			return err
		}, errs.Exist, "same name"},
		{"name with slash", func(tr *Tree) error {
			_, err := tr.As(alice, "CreateSnapshot").CreateSnapshot(mustPath("/a"), "x/y", 1)
			return err
		}, errs.Invalid, "cannot contain"},
		{"reserved name", func(tr *Tree) error {
			_, err := tr.As(alice, "CreateSnapshot").CreateSnapshot(mustPath("/a"), ".snapshot", 1)
			return err
		}, errs.Invalid, "reserved"},
		{"dot-dot name", func(tr *Tree) error {
			_, err := tr.As(alice, "CreateSnapshot").CreateSnapshot(mustPath("/a"), "..", 1)
			return err
		}, errs.Invalid, "not allowed"},
		{"delete missing", func(tr *Tree) error {
			_, err := tr.As(alice, "DeleteSnapshot").DeleteSnapshot(mustPath("/a"), "nope")
			return err
		}, errs.NotFound, "does not exist"},
		{"delete by another user", func(tr *Tree) error {
			_, err := tr.As(bob, "DeleteSnapshot").DeleteSnapshot(mustPath("/a"), "s1")
			return err
		}, errs.Permission, "owner"},
		{"rename missing", func(tr *Tree) error { return tr.As(alice, "RenameSnapshot").RenameSnapshot(mustPath("/a"), "no", "s2") }, errs.NotFound, "does not exist"},
		{"rename onto existing", func(tr *Tree) error {
			if _, err := tr.As(alice, "CreateSnapshot").CreateSnapshot(mustPath("/a"), "s2", 1); err != nil {
				return err
			}
			return tr.As(alice, "RenameSnapshot").RenameSnapshot(mustPath("/a"), "s1", "s2")
		}, errs.Exist, "already exists"},
		{"delete dir with snapshots", func(tr *Tree) error {
			_, err := tr.Delete(mustPath("/a"), true, 1)
			return err
		}, errs.Precondition, "cannot be deleted since /a is snapshottable and already has snapshots"},
		{"rename dir with snapshots", func(tr *Tree) error { return tr.Rename(mustPath("/a"), mustPath("/z"), 1) }, errs.Precondition, "already has snapshots"},
		{"mkdir in snapshot", func(tr *Tree) error {
			return tr.As(nil, "Mkdirs").Mkdirs(mustPath("/a/.snapshot/s1/new"), MkdirsOpts{Perm: 0755})
		}, errs.Permission, "read-only snapshot"},
		{"create in snapshot", func(tr *Tree) error {
			_, _, err := tr.As(alice, "Create").Create(mustPath("/a/.snapshot/s1/g"), CreateOpts{Perm: 0644, Replication: 1, BlockSize: bs})
			return err
		}, errs.Permission, "read-only snapshot"},
		{"overwrite in snapshot", func(tr *Tree) error {
			_, _, err := tr.As(alice, "Create").Create(mustPath("/a/.snapshot/s1/f"), CreateOpts{Perm: 0644, Overwrite: true, Replication: 1, BlockSize: bs})
			return err
		}, errs.Permission, "read-only snapshot"},
		{"delete in snapshot", func(tr *Tree) error {
			_, err := tr.As(nil, "Delete").Delete(mustPath("/a/.snapshot/s1/f"), false, 1)
			return err
		}, errs.Permission, "read-only snapshot"},
		{"delete a snapshot as a path", func(tr *Tree) error {
			_, err := tr.Delete(mustPath("/a/.snapshot/s1"), true, 1)
			return err
		}, errs.Permission, "read-only snapshot"},
		{"rename out of snapshot", func(tr *Tree) error { return tr.Rename(mustPath("/a/.snapshot/s1/f"), mustPath("/a/g"), 1) }, errs.Permission, "read-only snapshot"},
		{"rename into snapshot", func(tr *Tree) error { return tr.Rename(mustPath("/a/f"), mustPath("/a/.snapshot/s1/g"), 1) }, errs.Permission, "read-only snapshot"},
		{"chmod in snapshot", func(tr *Tree) error { return tr.SetPermission(mustPath("/a/.snapshot/s1/f"), 0600, 1) }, errs.Permission, "read-only snapshot"},
		{"append in snapshot", func(tr *Tree) error {
			_, err := tr.As(alice, "Append").Append(mustPath("/a/.snapshot/s1/f"), 1)
			return err
		}, errs.Permission, "read-only snapshot"},
		{"mkdir .snapshot elsewhere", func(tr *Tree) error {
			return tr.Mkdirs(mustPath("/tmp/.snapshot"), MkdirsOpts{Perm: 0755})
		}, errs.Invalid, "reserved name"},
		{"create .snapshot elsewhere", func(tr *Tree) error {
			_, _, err := tr.Create(mustPath("/tmp/x/.snapshot/f"), CreateOpts{Perm: 0644, CreateParent: true, Replication: 1, BlockSize: bs})
			return err
		}, errs.Invalid, "reserved name"},
		{"rename to .snapshot", func(tr *Tree) error { return tr.Rename(mustPath("/x"), mustPath("/tmp/.snapshot"), 1) }, errs.Invalid, "reserved name"},
		{"read a missing snapshot", func(tr *Tree) error {
			_, err := tr.Stat(mustPath("/a/.snapshot/none/f"))
			return err
		}, errs.NotFound, "no such file"},
		{"read .snapshot of a plain dir", func(tr *Tree) error {
			_, err := tr.Stat(mustPath("/tmp/.snapshot"))
			return err
		}, errs.NotFound, "no such file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := snapFixture(t)
			before := tr.Hash()
			wantErr(t, c.do(tr), c.kind, c.sub)
			if c.name != "rename onto existing" && tr.Hash() != before {
				t.Fatal("a refused call changed the tree")
			}
		})
	}
}

func TestSnapshotAllowDisallow(t *testing.T) {
	tr := fixture(t)
	s := tr.As(Policy{Superuser: super}.Caller(super, nil, ""), "AllowSnapshot")
	must(t, s.AllowSnapshot(mustPath("/a/b")))
	must(t, s.AllowSnapshot(mustPath("/a/b"))) // again: still fine, as in HDFS
	must(t, s.DisallowSnapshot(mustPath("/a/b")))
	must(t, s.DisallowSnapshot(mustPath("/a/b"))) // not snapshottable: fine
	must(t, s.AllowSnapshot(mustPath("/a")))
	// A snapshottable directory without snapshots may be deleted, and is
	// forgotten with it.
	_, err := tr.Delete(mustPath("/a"), true, 5)
	must(t, err)
	if dirs := tr.As(nil, "L").SnapshottableDirs(); len(dirs) != 0 {
		t.Fatalf("deleted directory still listed: %+v", dirs)
	}
	must(t, s.AllowSnapshot(mustPath("/tmp")))
	back := reread(t, tr)
	if dirs := back.As(nil, "L").SnapshottableDirs(); len(dirs) != 1 || dirs[0].Dir.Path != "/tmp" {
		t.Fatalf("after restore %+v", dirs)
	}
}

func TestSnapshotOverwriteAndAbandonHold(t *testing.T) {
	tr := snapFixture(t)
	old := blocksOf(t, tr, "/a/f")
	_, removed, err := tr.Create(mustPath("/a/f"), CreateOpts{Perm: 0644, Overwrite: true, Replication: 2, BlockSize: bs, MtimeMs: 40})
	must(t, err)
	if len(removed) != 2 || !tr.HeldBySnapshot(removed[0].ID) {
		t.Fatalf("overwrite removed %v", removed)
	}
	if got := blocksOf(t, tr, "/a/.snapshot/s1/f"); !slices.Equal(got, old) {
		t.Fatalf("snapshot after overwrite %v, want %v", got, old)
	}
	if fi := mustStat(t, tr, "/a/f"); fi.Length != 0 {
		t.Fatalf("live file %+v", fi)
	}
	reread(t, tr)
}

func TestSnapshotImageRefusesDamage(t *testing.T) {
	tr := snapFixture(t)
	_, err := tr.Delete(mustPath("/a/f"), false, 20)
	must(t, err)
	var buf bytes.Buffer
	must(t, tr.WriteImage(&buf))
	img := buf.Bytes()
	// Flip one byte in each record after the inode walk: every flip is
	// caught by a record's checksum or a check of the section.
	for _, typ := range []byte{recSnapDir, recSnapshot, recHeld} {
		at := findRecord(t, img, typ)
		bad := slices.Clone(img)
		bad[at+6] ^= 0x40
		if _, err := ReadImage(bytes.NewReader(bad)); errs.KindOf(err) != errs.Corrupt {
			t.Fatalf("record type %d damaged: %v", typ, err)
		}
	}
}

// findRecord returns the offset of the first record of type typ in img.
func findRecord(t *testing.T, img []byte, typ byte) int {
	t.Helper()
	off := 12
	for off+5 <= len(img) {
		n := int(img[off+1]) | int(img[off+2])<<8 | int(img[off+3])<<16 | int(img[off+4])<<24
		if img[off] == typ {
			return off
		}
		off += 5 + n + 4
	}
	t.Fatalf("no record of type %d", typ)
	return 0
}

// TestSnapshotTruncate: a truncate at a block boundary drops the live
// file's later blocks, which the snapshot keeps holding; one inside a
// block a snapshot holds copies it (HDFS's copy-on-truncate): the file's
// last block becomes a new block of the cut length, and the snapshot
// keeps the old one whole.
func TestSnapshotTruncate(t *testing.T) {
	t.Run("boundary", func(t *testing.T) {
		tr := snapFixture(t)
		old := blocksOf(t, tr, "/a/f")
		out, err := tr.As(nil, "Truncate").Truncate(mustPath("/a/f"), 100, 30)
		must(t, err)
		if !out.Done || len(out.Dropped) != 1 || !tr.HeldBySnapshot(out.Dropped[0].ID) || tr.HeldBlocks() != 1 || out.CopyOf.ID != 0 {
			t.Fatalf("truncate at the boundary: %+v, held %d", out, tr.HeldBlocks())
		}
		if got := blocksOf(t, tr, "/a/.snapshot/s1/f"); !slices.Equal(got, old) {
			t.Fatalf("snapshot after truncate %v, want %v", got, old)
		}
		reread(t, tr)
	})
	t.Run("inside a block", func(t *testing.T) {
		tr := snapFixture(t)
		old := blocksOf(t, tr, "/a/f")
		nb := tr.numBlocks
		out, err := tr.As(nil, "Truncate").Truncate(mustPath("/a/f"), 50, 30)
		must(t, err)
		if out.Done || out.CopyOf != old[0] || out.Last.ID == old[0].ID || out.Last.Length != 50 || out.Last.GenStamp <= old[0].GenStamp {
			t.Fatalf("copy-on-truncate: %+v (old blocks %v)", out, old)
		}
		if len(out.Dropped) != len(old) || out.Dropped[0] != old[0] || tr.HeldBlocks() != len(old) {
			t.Fatalf("dropped %v, held %d: want the old blocks, held by the snapshot", out.Dropped, tr.HeldBlocks())
		}
		if got := blocksOf(t, tr, "/a/f"); len(got) != 1 || got[0].ID != out.Last.ID {
			t.Fatalf("live file's blocks %v, want the copy %v", got, out.Last)
		}
		if _, ino, ok := tr.Block(out.Last.ID); !ok || ino != out.File.ID {
			t.Fatal("the copy is not indexed to the file")
		}
		if got := blocksOf(t, tr, "/a/.snapshot/s1/f"); !slices.Equal(got, old) {
			t.Fatalf("snapshot after truncate %v, want %v", got, old)
		}
		if tr.numBlocks != nb-len(old)+1 {
			t.Fatalf("block count %d, want %d", tr.numBlocks, nb-len(old)+1)
		}
		back := reread(t, tr)
		if _, _, ok := back.Block(out.Last.ID); !ok {
			t.Fatal("the copy is not indexed after an image round trip")
		}
	})
}

// TestSnapshotKeepsXAttrs: a snapshot keeps its files' and directories'
// extended attributes and access times as they were when it was taken,
// whatever the live inodes do after, and through an image round trip.
func TestSnapshotKeepsXAttrs(t *testing.T) {
	tr := fixture(t)
	must(t, setX(tr, alice, "/a/f", "user.color", "blue", both))
	must(t, setX(tr, alice, "/a/b", "user.tag", "dir", both))
	must(t, tr.As(alice, "SetTimes").SetTimes(mustPath("/a/f"), -1, 42))
	must(t, tr.As(nil, "AllowSnapshot").AllowSnapshot(mustPath("/a")))
	_, err := tr.As(alice, "CreateSnapshot").CreateSnapshot(mustPath("/a"), "s1", 10)
	must(t, err)
	must(t, setX(tr, alice, "/a/f", "user.color", "red", both))
	must(t, setX(tr, alice, "/a/f", "user.new", "x", both))
	must(t, tr.As(alice, "RemoveXAttr").RemoveXAttr(mustPath("/a/b"), "user.tag"))
	must(t, tr.As(alice, "SetTimes").SetTimes(mustPath("/a/f"), -1, 99))

	check := func(tr *Tree, stage string) {
		t.Helper()
		for _, c := range []struct {
			p    string
			want []XAttr
		}{
			{"/a/.snapshot/s1/f", []XAttr{{Name: "user.color", Value: []byte("blue")}}},
			{"/a/.snapshot/s1/b", []XAttr{{Name: "user.tag", Value: []byte("dir")}}},
			{"/a/f", []XAttr{{Name: "user.color", Value: []byte("red")}, {Name: "user.new", Value: []byte("x")}}},
			{"/a/b", nil},
		} {
			got, err := tr.As(alice, "GetXAttrs").GetXAttrs(mustPath(c.p), nil)
			must(t, err)
			if !slices.EqualFunc(got, c.want, func(a, b XAttr) bool { return a.Name == b.Name && string(a.Value) == string(b.Value) }) {
				t.Fatalf("%s: xattrs of %s: %v, want %v", stage, c.p, got, c.want)
			}
		}
		for p, want := range map[string]int64{"/a/.snapshot/s1/f": 42, "/a/f": 99} {
			fi, err := tr.As(alice, "Stat").Stat(mustPath(p))
			if err != nil || fi.AtimeMs != want {
				t.Fatalf("%s: atime of %s: %d %v, want %d", stage, p, fi.AtimeMs, err, want)
			}
		}
	}
	check(tr, "live")
	check(reread(t, tr), "after an image round trip")
}

// TestSnapshotAttrsImageVersion: version 6 images keep the attributes of
// snapshots' inodes; a version 5 image (snapshots without them) still
// reads, and one that has ATTRS inside a snapshot is corrupt.
func TestSnapshotAttrsImageVersion(t *testing.T) {
	plain := snapFixture(t)
	back, err := ReadImage(bytes.NewReader(frameVersion(unframe(image(t, plain)), imageV5)))
	must(t, err)
	if back.Hash() != plain.Hash() {
		t.Fatal("a version 5 image read back differently")
	}
	tr := fixture(t)
	must(t, setX(tr, alice, "/a/f", "user.color", "blue", both))
	must(t, tr.As(nil, "AllowSnapshot").AllowSnapshot(mustPath("/a")))
	_, err = tr.As(alice, "CreateSnapshot").CreateSnapshot(mustPath("/a"), "s1", 10)
	must(t, err)
	img := image(t, tr)
	if v := binary.LittleEndian.Uint32(img[8:]); v != imageVersion {
		t.Fatalf("image version %d, want %d", v, imageVersion)
	}
	_, err = ReadImage(bytes.NewReader(frameVersion(unframe(img), imageV5)))
	wantErr(t, err, errs.Corrupt, "inside snapshot")
}
