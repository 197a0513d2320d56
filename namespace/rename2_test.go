package namespace

import (
	"testing"

	"github.com/blockfs/blockfs/errs"
)

func TestRename2(t *testing.T) {
	cases := []struct {
		name      string
		src, dst  string
		overwrite bool
		kind      errs.Kind // 0: success
		msg       string
		removed   int // success: blocks of the replaced destination
	}{
		{name: "file to new name", src: "/a/f", dst: "/a/g"},
		{name: "existing dir is not moved into", src: "/a/f", dst: "/a/b", kind: errs.Exist, msg: "is a file but destination /a/b is a directory"},
		{name: "existing file refused", src: "/a/new", dst: "/x", kind: errs.Exist, msg: "rename destination /x already exists"},
		{name: "existing file replaced", src: "/x", dst: "/a/f", overwrite: true, removed: 2},
		{name: "dir over file", src: "/a/b", dst: "/x", overwrite: true, kind: errs.Exist, msg: "is a directory but destination /x is a file"},
		{name: "dir over non-empty dir", src: "/tmp", dst: "/a/b", overwrite: true, kind: errs.NotEmpty, msg: "not empty"},
		{name: "dir over empty dir", src: "/tmp", dst: "/a/b/c", overwrite: true},
		{name: "same path", src: "/a/f", dst: "/a/f", kind: errs.Exist, msg: "are the same"},
		{name: "into own subtree", src: "/a", dst: "/a/b/z", kind: errs.Invalid, msg: "under source"},
		{name: "parent missing", src: "/a/f", dst: "/q/r/s", kind: errs.NotFound, msg: "parent /q/r not found"},
		{name: "parent is a file", src: "/a/f", dst: "/x/y", kind: errs.NotDir, msg: "/x is a file"},
		{name: "src missing", src: "/nope", dst: "/z", kind: errs.NotFound},
		{name: "onto root", src: "/a/f", dst: "/", overwrite: true, kind: errs.Exist, msg: "root"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := fixture(t)
			before := tr.Hash()
			srcInfo, _ := tr.Stat(mustPath(c.src))
			removed, err := tr.Rename2(mustPath(c.src), mustPath(c.dst), c.overwrite, 100)
			if c.kind != 0 {
				wantErr(t, err, c.kind, c.msg)
				if tr.Hash() != before {
					t.Fatal("a refused rename2 changed the tree")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(removed) != c.removed {
				t.Fatalf("removed %d blocks, want %d", len(removed), c.removed)
			}
			if got := mustStat(t, tr, c.dst); got.ID != srcInfo.ID {
				t.Fatalf("%s is inode %d, want the source's %d", c.dst, got.ID, srcInfo.ID)
			}
			if _, err := tr.Stat(mustPath(c.src)); !errs.Is(err, errs.NotFound) {
				t.Fatalf("source still there: %v", err)
			}
			if err := tr.CheckQuotas(); err != nil {
				t.Fatal(err)
			}
			for _, b := range removed {
				if _, _, ok := tr.Block(b.ID); ok {
					t.Fatalf("replaced block %d still indexed", b.ID)
				}
			}
		})
	}
}
