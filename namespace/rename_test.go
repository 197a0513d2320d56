package namespace

import (
	"testing"

	"github.com/blockfs/blockfs/errs"
)

func TestRename(t *testing.T) {
	cases := []struct {
		name     string
		src, dst string
		kind     errs.Kind // 0: success
		msg      string
		setup    func(*Tree)
		at       string   // success: where the src inode now lives
		sub      string   // success: a path below it that must resolve
		gone     bool     // success: src path no longer exists
		parents  []string // success: directories whose mtime becomes 100
	}{
		{name: "file to new name", src: "/a/f", dst: "/a/g", at: "/a/g", gone: true, parents: []string{"/a"}},
		{name: "file to other dir", src: "/a/f", dst: "/tmp/g", at: "/tmp/g", gone: true, parents: []string{"/a", "/tmp"}},
		{name: "file into existing dir", src: "/a/f", dst: "/a/b", at: "/a/b/f", gone: true, parents: []string{"/a", "/a/b"}},
		{name: "file into root", src: "/a/f", dst: "/", at: "/f", gone: true, parents: []string{"/a", "/"}},
		{name: "file into deeper dir", src: "/x", dst: "/a/b/c", at: "/a/b/c/x", gone: true, parents: []string{"/", "/a/b/c"}},
		{name: "dir with subtree", src: "/a/b", dst: "/z", at: "/z", sub: "/z/c", gone: true, parents: []string{"/a", "/"}},
		{name: "dir into sibling dir", src: "/tmp", dst: "/a/b/c", at: "/a/b/c/tmp", sub: "/a/b/c/tmp/bob.txt", gone: true, parents: []string{"/", "/a/b/c"}},
		{name: "dir up one level", src: "/a/b/c", dst: "/a/c", at: "/a/c", gone: true, parents: []string{"/a/b", "/a"}},
		{name: "same path no-op", src: "/a/f", dst: "/a/f", at: "/a/f"},
		{name: "into own parent no-op", src: "/a/f", dst: "/a", at: "/a/f"},
		{name: "dir same path no-op", src: "/a", dst: "/a", at: "/a", sub: "/a/b/c"},

		{name: "src missing", src: "/nope", dst: "/z", kind: errs.NotFound, msg: "no such file"},
		{name: "src parent missing", src: "/q/nope", dst: "/z", kind: errs.NotFound, msg: "/q does not exist"},
		{name: "src under file", src: "/x/y", dst: "/z", kind: errs.NotDir, msg: "/x is a file"},
		{name: "src root", src: "/", dst: "/z", kind: errs.Invalid, msg: "cannot rename the root"},
		{name: "src invalid", src: "/a/", dst: "/z", kind: errs.Invalid, msg: "empty path component"},
		{name: "dst invalid", src: "/a/f", dst: "z", kind: errs.Invalid, msg: "not absolute"},
		{name: "dst dot-dot", src: "/a/b/c", dst: "/a/b/c/../..", kind: errs.Invalid, msg: `".." not allowed`},
		{name: "dst existing file", src: "/a/f", dst: "/x", kind: errs.Exist, msg: "destination /x is an existing file"},
		{name: "dst dir already has base", src: "/a/f", dst: "/tmp", kind: errs.Exist, msg: "destination /tmp/f already exists",
			setup: func(tr *Tree) { must(t, tr.Mkdirs(mustPath("/tmp/f"), MkdirsOpts{Perm: 0755})) }},
		{name: "dst parent missing", src: "/a/f", dst: "/q/r/s", kind: errs.NotFound, msg: "destination parent /q/r does not exist"},
		{name: "dst parent is file", src: "/a/f", dst: "/x/y", kind: errs.NotDir, msg: "destination parent /x is a file"},
		{name: "dst under a file deeper", src: "/a/f", dst: "/x/y/z", kind: errs.NotDir, msg: "destination parent /x is a file"},
		{name: "into own subtree", src: "/a", dst: "/a/b/z", kind: errs.Invalid, msg: "rename into own subtree"},
		{name: "into own subtree via dir", src: "/a", dst: "/a/b", kind: errs.Invalid, msg: "rename into own subtree"},
		{name: "into itself as child", src: "/a/b", dst: "/a/b/q", kind: errs.Invalid, msg: "rename into own subtree"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := fixture(t)
			if c.setup != nil {
				c.setup(tr)
			}
			before := tr.Hash()
			var src FileInfo
			if c.kind == 0 {
				src = mustStat(t, tr, c.src)
			}
			err := withPaths(func(ps ...Path) error { return tr.Rename(ps[0], ps[1], 100) }, c.src, c.dst)
			if c.kind != 0 {
				wantErr(t, err, c.kind, c.msg)
				if tr.Hash() != before {
					t.Fatal("failed rename changed the tree")
				}
				return
			}
			must(t, err)
			if c.src == c.dst || !c.gone {
				if tr.Hash() != before {
					t.Fatal("no-op rename changed the tree")
				}
			}
			if moved := mustStat(t, tr, c.at); moved.ID != src.ID || moved.Name != baseName(c.at) {
				t.Fatalf("at %s: %+v, want inode %d", c.at, moved, src.ID)
			}
			if c.sub != "" {
				mustStat(t, tr, c.sub)
			}
			if _, err := tr.Stat(mustPath(c.src)); c.gone && errs.KindOf(err) != errs.NotFound {
				t.Fatalf("src still there: %v", err)
			}
			for _, p := range c.parents {
				if fi := mustStat(t, tr, p); fi.MtimeMs != 100 {
					t.Fatalf("parent %s mtime %d", p, fi.MtimeMs)
				}
			}
			// Block index still points at the same inodes.
			tr.ForEachBlock(func(b Block, inode ID, _ uint32, _ bool) {
				if id, ok := tr.BlockInode(b.ID); !ok || id != inode {
					t.Fatalf("block %v index %d %v, walk says %d", b, id, ok, inode)
				}
				if _, _, ok := tr.FileByID(inode); !ok {
					t.Fatalf("inode %d unreachable", inode)
				}
			})
		})
	}
}

func TestRenameKeepsFileByIDPath(t *testing.T) {
	tr := fixture(t)
	fi := mustStat(t, tr, "/a/f")
	must(t, tr.Rename(mustPath("/a"), mustPath("/tmp/moved"), 1))
	got, _, ok := tr.FileByID(fi.ID)
	if !ok || got.Path != "/tmp/moved/f" || got.Name != "f" {
		t.Fatalf("%+v %v", got, ok)
	}
}
