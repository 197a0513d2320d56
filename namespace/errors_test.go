package namespace

import (
	"strings"
	"testing"

	"github.com/blockfs/blockfs/errs"
)

// TestErrorsLeaveTreeUntouched runs every error path of every mutation on
// the fixture and checks the kind, that the message names the problem, and
// that the tree hashes the same afterwards.
func TestErrorsLeaveTreeUntouched(t *testing.T) {
	co := CreateOpts{Perm: 0644, Replication: 3, BlockSize: bs, MtimeMs: 9}
	mo := MkdirsOpts{Perm: 0755, MtimeMs: 9}
	mop := MkdirsOpts{Perm: 0755, Parents: true, MtimeMs: 9}
	with := func(o CreateOpts, f func(*CreateOpts)) CreateOpts { f(&o); return o }
	create := func(p string, o CreateOpts) func(*Tree) error {
		return func(tr *Tree) error {
			return withPaths(func(ps ...Path) error { _, _, err := tr.Create(ps[0], o); return err }, p)
		}
	}
	idOf := func(tr *Tree, p string) ID { fi, _ := tr.Stat(mustPath(p)); return fi.ID }
	lastOf := func(tr *Tree, p string) Block { b := blocksOf(t, tr, p); return b[len(b)-1] }

	cases := []struct {
		name string
		op   func(*Tree) error
		kind errs.Kind
		msg  []string
	}{
		// mkdirs
		{"mkdirs bad path", func(tr *Tree) error {
			return withPaths(func(ps ...Path) error { return tr.Mkdirs(ps[0], mo) }, "/a//b")
		}, errs.Invalid, []string{"empty path component"}},
		{"mkdirs bad perm", func(tr *Tree) error { return tr.Mkdirs(mustPath("/m"), MkdirsOpts{Perm: 010000}) }, errs.Invalid, []string{"outside 01777"}},
		{"mkdirs long owner", func(tr *Tree) error { return tr.Mkdirs(mustPath("/m"), MkdirsOpts{Owner: strings.Repeat("o", 256)}) }, errs.Invalid, []string{"owner name too long"}},
		{"mkdirs no parent", func(tr *Tree) error { return tr.Mkdirs(mustPath("/q/r"), mo) }, errs.NotFound, []string{"parent directory /q does not exist"}},
		{"mkdirs exists dir", func(tr *Tree) error { return tr.Mkdirs(mustPath("/a/b"), mo) }, errs.Exist, []string{"directory already exists"}},
		{"mkdirs root", func(tr *Tree) error { return tr.Mkdirs(mustPath("/"), mo) }, errs.Exist, []string{"directory already exists"}},
		{"mkdirs exists file", func(tr *Tree) error { return tr.Mkdirs(mustPath("/a/f"), mop) }, errs.Exist, []string{"a file already exists"}},
		{"mkdirs file mid-path", func(tr *Tree) error { return tr.Mkdirs(mustPath("/a/f/g/h"), mop) }, errs.NotDir, []string{"/a/f is a file"}},

		// create
		{"create bad path", create("a", co), errs.Invalid, []string{"not absolute"}},
		{"create root", create("/", co), errs.IsDir, []string{"directory"}},
		{"create on dir", create("/a/b", with(co, func(o *CreateOpts) { o.Overwrite = true })), errs.IsDir, []string{"path is a directory"}},
		{"create exists", create("/a/f", co), errs.Exist, []string{"file already exists"}},
		{"create no parent", create("/q/r", co), errs.NotFound, []string{"parent directory /q does not exist"}},
		{"create file mid-path", create("/a/f/g", with(co, func(o *CreateOpts) { o.CreateParent = true })), errs.NotDir, []string{"/a/f is a file"}},
		{"create repl 0", create("/n", with(co, func(o *CreateOpts) { o.Replication = 0 })), errs.Invalid, []string{"replication 0 out of range"}},
		{"create repl 33", create("/n", with(co, func(o *CreateOpts) { o.Replication = 33 })), errs.Invalid, []string{"replication 33 out of range"}},
		{"create block size 0", create("/n", with(co, func(o *CreateOpts) { o.BlockSize = 0 })), errs.Invalid, []string{"block size must be positive"}},
		{"create bad perm", create("/n", with(co, func(o *CreateOpts) { o.Perm = 0o20000 })), errs.Invalid, []string{"outside 01777"}},
		{"create NUL group", create("/n", with(co, func(o *CreateOpts) { o.Group = "a\x00" })), errs.Invalid, []string{"group name contains a NUL"}},

		// addBlock
		{"addBlock missing", func(tr *Tree) error { _, _, err := tr.AddBlock(mustPath("/a/zz"), 5, nil, 99, 99, 9); return err }, errs.NotFound, []string{"replaced or deleted", "no inode"}},
		{"addBlock replaced", func(tr *Tree) error { _, _, err := tr.AddBlock(mustPath("/a/new"), 5, nil, 99, 99, 9); return err }, errs.NotFound, []string{"replaced or deleted", "expected 5"}},
		{"addBlock dir", func(tr *Tree) error {
			_, _, err := tr.AddBlock(mustPath("/a/b"), idOf(tr, "/a/b"), nil, 99, 99, 9)
			return err
		}, errs.IsDir, []string{"directory"}},
		{"addBlock complete", func(tr *Tree) error {
			b := lastOf(tr, "/a/f")
			_, _, err := tr.AddBlock(mustPath("/a/f"), idOf(tr, "/a/f"), &b, 99, 99, 9)
			return err
		}, errs.Precondition, []string{"not under construction"}},
		{"addBlock id 0", func(tr *Tree) error {
			_, _, err := tr.AddBlock(mustPath("/a/new"), idOf(tr, "/a/new"), nil, 0, 99, 9)
			return err
		}, errs.Invalid, []string{"non-zero"}},
		{"addBlock id in use", func(tr *Tree) error {
			_, _, err := tr.AddBlock(mustPath("/a/new"), idOf(tr, "/a/new"), nil, lastOf(tr, "/a/f").ID, 99, 9)
			return err
		}, errs.Exist, []string{"already in use"}},
		{"addBlock prev on empty", func(tr *Tree) error {
			_, _, err := tr.AddBlock(mustPath("/a/new"), idOf(tr, "/a/new"), &Block{ID: 1, GenStamp: 1000}, 99, 99, 9)
			return err
		}, errs.Precondition, []string{"no blocks"}},
		{"addBlock nil prev", func(tr *Tree) error {
			_, _, err := tr.AddBlock(mustPath("/a/uc"), idOf(tr, "/a/uc"), nil, 99, 99, 9)
			return err
		}, errs.Precondition, []string{"previous block missing"}},
		{"addBlock wrong prev id", func(tr *Tree) error {
			b := lastOf(tr, "/a/uc")
			b.ID++
			_, _, err := tr.AddBlock(mustPath("/a/uc"), idOf(tr, "/a/uc"), &b, 99, 99, 9)
			return err
		}, errs.Precondition, []string{"is not the last block"}},
		{"addBlock wrong prev genstamp", func(tr *Tree) error {
			b := lastOf(tr, "/a/uc")
			b.GenStamp++
			_, _, err := tr.AddBlock(mustPath("/a/uc"), idOf(tr, "/a/uc"), &b, 99, 99, 9)
			return err
		}, errs.Precondition, []string{"is not the last block"}},
		{"addBlock prev too long", func(tr *Tree) error {
			b := lastOf(tr, "/a/uc")
			b.Length = bs + 1
			_, _, err := tr.AddBlock(mustPath("/a/uc"), idOf(tr, "/a/uc"), &b, 99, 99, 9)
			return err
		}, errs.Invalid, []string{"exceeds block size"}},

		// complete
		{"complete replaced", func(tr *Tree) error { _, err := tr.Complete(mustPath("/a/uc"), 77, nil, 9); return err }, errs.NotFound, []string{"replaced or deleted"}},
		{"complete too few", func(tr *Tree) error { _, err := tr.Complete(mustPath("/a/uc"), idOf(tr, "/a/uc"), nil, 9); return err }, errs.Precondition, []string{"block list mismatch", "got 0 blocks, the file has 1; first missing blk_"}},
		{"complete too many", func(tr *Tree) error {
			b := lastOf(tr, "/a/uc")
			_, err := tr.Complete(mustPath("/a/uc"), idOf(tr, "/a/uc"), []Block{b, {ID: 500, GenStamp: 1}}, 9)
			return err
		}, errs.Precondition, []string{"block list mismatch", "first extra blk_500_1"}},
		{"complete wrong genstamp", func(tr *Tree) error {
			b := lastOf(tr, "/a/uc")
			b.GenStamp = 7
			_, err := tr.Complete(mustPath("/a/uc"), idOf(tr, "/a/uc"), []Block{b}, 9)
			return err
		}, errs.Precondition, []string{"block list mismatch: block 0 is blk_", "_7"}},
		{"complete too long", func(tr *Tree) error {
			b := lastOf(tr, "/a/uc")
			b.Length = bs + 1
			_, err := tr.Complete(mustPath("/a/uc"), idOf(tr, "/a/uc"), []Block{b}, 9)
			return err
		}, errs.Invalid, []string{"exceeds block size"}},
		{"complete again other lengths", func(tr *Tree) error {
			b := blocksOf(t, tr, "/a/f")
			c := []Block{b[0], b[1]}
			c[1].Length = 1
			_, err := tr.Complete(mustPath("/a/f"), idOf(tr, "/a/f"), c, 9)
			return err
		}, errs.Precondition, []string{"already complete with different block lengths"}},

		// abandonBlock
		{"abandon replaced", func(tr *Tree) error { return tr.AbandonBlock(mustPath("/a/uc"), 77, Block{}) }, errs.NotFound, []string{"replaced or deleted"}},
		{"abandon complete", func(tr *Tree) error { return tr.AbandonBlock(mustPath("/a/f"), idOf(tr, "/a/f"), lastOf(tr, "/a/f")) }, errs.Precondition, []string{"not under construction"}},
		{"abandon none", func(tr *Tree) error { return tr.AbandonBlock(mustPath("/a/new"), idOf(tr, "/a/new"), Block{ID: 1}) }, errs.Precondition, []string{"has no blocks"}},
		{"abandon not last", func(tr *Tree) error {
			b := lastOf(tr, "/a/uc")
			b.GenStamp++
			return tr.AbandonBlock(mustPath("/a/uc"), idOf(tr, "/a/uc"), b)
		}, errs.Precondition, []string{"not the last block"}},

		// delete
		{"delete missing", func(tr *Tree) error { _, err := tr.Delete(mustPath("/a/zz"), true, 9); return err }, errs.NotFound, []string{"no such file"}},
		{"delete missing parent", func(tr *Tree) error { _, err := tr.Delete(mustPath("/q/zz"), true, 9); return err }, errs.NotFound, []string{"/q does not exist"}},
		{"delete under file", func(tr *Tree) error { _, err := tr.Delete(mustPath("/x/y"), true, 9); return err }, errs.NotDir, []string{"/x is a file"}},
		{"delete root", func(tr *Tree) error { _, err := tr.Delete(mustPath("/"), true, 9); return err }, errs.Invalid, []string{"root"}},
		{"delete non-empty", func(tr *Tree) error { _, err := tr.Delete(mustPath("/a"), false, 9); return err }, errs.NotEmpty, []string{"recursive"}},

		// setters
		{"setPermission missing", func(tr *Tree) error { return tr.SetPermission(mustPath("/zz"), 0700, 9) }, errs.NotFound, []string{"no such file"}},
		{"setPermission bad", func(tr *Tree) error { return tr.SetPermission(mustPath("/a"), 02000, 9) }, errs.Invalid, []string{"outside 01777"}},
		{"setOwner missing", func(tr *Tree) error { return tr.SetOwner(mustPath("/zz"), "u", "") }, errs.NotFound, []string{"no such file"}},
		{"setOwner long group", func(tr *Tree) error { return tr.SetOwner(mustPath("/a"), "", strings.Repeat("g", 300)) }, errs.Invalid, []string{"group name too long"}},
		{"setReplication dir", func(tr *Tree) error { return tr.SetReplication(mustPath("/a"), 2) }, errs.IsDir, []string{"directory"}},
		{"setReplication range", func(tr *Tree) error { return tr.SetReplication(mustPath("/a/f"), 40) }, errs.Invalid, []string{"replication 40 out of range"}},
		{"setReplication missing", func(tr *Tree) error { return tr.SetReplication(mustPath("/a/zz"), 2) }, errs.NotFound, []string{"no such file"}},

		// rename (the full rule table is in rename_test.go)
		{"rename missing", func(tr *Tree) error { return tr.Rename(mustPath("/zz"), mustPath("/yy"), 9) }, errs.NotFound, []string{"no such file"}},
		{"rename root", func(tr *Tree) error { return tr.Rename(mustPath("/"), mustPath("/yy"), 9) }, errs.Invalid, []string{"root"}},
		{"rename into self", func(tr *Tree) error { return tr.Rename(mustPath("/a"), mustPath("/a/b/z"), 9) }, errs.Invalid, []string{"rename into own subtree"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := fixture(t)
			before := tr.Hash()
			f, d, b := tr.Counts()
			err := c.op(tr)
			wantErr(t, err, c.kind, c.msg...)
			if tr.Hash() != before {
				t.Fatalf("tree changed by failed op: %v", err)
			}
			if f2, d2, b2 := tr.Counts(); f2 != f || d2 != d || b2 != b {
				t.Fatalf("counts changed")
			}
		})
	}
}

// TestLimits covers the Exhausted and length limits.
func TestLimits(t *testing.T) {
	tr := New(Limits{MaxDirItems: 2, MaxBlocksPerFile: 2, MaxPathLen: 20, MaxComponentLen: 8}, super, "g")
	co := CreateOpts{Perm: 0644, Replication: 1, BlockSize: 10}
	must(t, tr.Mkdirs(mustPath("/d"), MkdirsOpts{Perm: 0755}))
	fi, _, err := tr.Create(mustPath("/f"), co)
	must(t, err)
	h := tr.Hash()
	wantErr(t, tr.Mkdirs(mustPath("/e"), MkdirsOpts{Perm: 0755}), errs.Exhausted, "directory / is full")
	_, _, err = tr.Create(mustPath("/g"), co)
	wantErr(t, err, errs.Exhausted, "limit 2 items")
	_, _, err = tr.Create(mustPath("/d/x/y"), CreateOpts{Perm: 0644, Replication: 1, BlockSize: 10, CreateParent: true})
	must(t, err)
	must(t, tr.Mkdirs(mustPath("/d/z"), MkdirsOpts{}))
	wantErr(t, tr.Rename(mustPath("/f"), mustPath("/d/f"), 1), errs.Exhausted, "directory /d is full")
	must(t, tr.Rename(mustPath("/f"), mustPath("/f2"), 1)) // same directory: no new item
	must(t, tr.Rename(mustPath("/f2"), mustPath("/f"), 1))
	b1 := mustAdd(t, tr, "/f", fi.ID, nil)
	b2 := mustAdd(t, tr, "/f", fi.ID, &b1)
	h = tr.Hash()
	_, _, err = tr.AddBlock(mustPath("/f"), fi.ID, &b2, 500, 5000, 1)
	wantErr(t, err, errs.Exhausted, "maximum of 2 blocks")
	if tr.Hash() != h {
		t.Fatal("tree changed")
	}
	wantErr(t, tr.Mkdirs(mustPath("/d/z/123456789"), MkdirsOpts{}), errs.Invalid, "component too long")
	wantErr(t, tr.Rename(mustPath("/d/x/y"), mustPath("/d/z/12345678/12345678"), 1), errs.Invalid, "path too long")
	must(t, tr.Mkdirs(mustPath("/d/z/12345678/123456"), MkdirsOpts{Parents: true}))
	// Moving into an existing directory builds dst/base(src), which may be too long.
	h = tr.Hash()
	wantErr(t, tr.Rename(mustPath("/d/x/y"), mustPath("/d/z/12345678/123456"), 1), errs.Invalid, "destination path too long")
	if tr.Hash() != h {
		t.Fatal("tree changed")
	}
}
