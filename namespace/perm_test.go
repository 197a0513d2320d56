package namespace

import (
	"testing"

	"github.com/blockfs/blockfs/errs"
)

func TestPermissions(t *testing.T) {
	var (
		alice = User{Name: "alice", Groups: []string{"staff"}}
		bob   = User{Name: "bob", Groups: []string{"dev", "staff"}}
		eve   = User{Name: "eve"}
		carol = User{Name: "carol", Groups: []string{"supergroup"}}
		root  = User{Name: super}
		anon  = User{}
	)
	access := func(u User, p string, a Access) func(*Tree) error {
		return func(tr *Tree) error { return tr.CheckAccess(u, super, p, a) }
	}
	parent := func(u User, p string, a Access) func(*Tree) error {
		return func(tr *Tree) error { return tr.CheckParentAccess(u, super, p, a) }
	}
	sticky := func(u User, p string) func(*Tree) error {
		return func(tr *Tree) error { return tr.CheckStickyBit(u, super, p) }
	}
	owner := func(u User, p string) func(*Tree) error {
		return func(tr *Tree) error { return tr.CheckOwner(u, super, p) }
	}
	cases := []struct {
		name  string
		setup func(*Tree)
		check func(*Tree) error
		kind  errs.Kind // 0: allowed
		msg   []string
	}{
		// owner / group / other bits of the target
		{name: "owner read", check: access(alice, "/a/f", Read)},
		{name: "owner write", check: access(alice, "/a/f", Write|Read)},
		{name: "owner no exec", check: access(alice, "/a/f", Exec), kind: errs.Permission,
			msg: []string{"user=alice", "access=--x", `inode="/a/f":alice:staff:-rw-r--r--`, "target"}},
		{name: "group read", check: access(bob, "/a/f", Read)},
		{name: "group no write", check: access(bob, "/a/f", Write), kind: errs.Permission, msg: []string{"user=bob", "access=-w-", "/a/f"}},
		{name: "other read", check: access(eve, "/a/f", Read)},
		{name: "other no write", check: access(eve, "/a/f", Write), kind: errs.Permission, msg: []string{"user=eve", "access=-w-"}},
		{name: "owner class wins over group", setup: func(tr *Tree) { must(t, tr.SetPermission("/a/f", 0066, 1)) },
			check: access(alice, "/a/f", Read), kind: errs.Permission, msg: []string{"user=alice", "access=r--", "----rw-rw-"}},
		{name: "group class wins over other", setup: func(tr *Tree) { must(t, tr.SetPermission("/a/f", 0604, 1)) },
			check: access(bob, "/a/f", Read), kind: errs.Permission, msg: []string{"user=bob"}},
		{name: "list dir as group", check: access(bob, "/a/b", Read|Exec)},
		{name: "dir no group bits", check: access(bob, "/a/b/c", Read), kind: errs.Permission, msg: []string{"user=bob", `inode="/a/b/c"`, "drwx------"}},
		{name: "zero access is traverse only", check: access(bob, "/a/b/c", 0)},

		// traversal
		{name: "traverse denied", check: access(eve, "/a/b/c", 0), kind: errs.Permission,
			msg: []string{"user=eve", "access=--x", `inode="/a/b"`, "traverse"}},
		{name: "traverse denied before not-found", check: access(eve, "/a/b/zz/y", Read), kind: errs.Permission, msg: []string{"traverse"}},
		{name: "traverse root denied", setup: func(tr *Tree) { must(t, tr.SetPermission("/", 0700, 1)) },
			check: access(alice, "/a", 0), kind: errs.Permission, msg: []string{`inode="/"`, "traverse"}},
		{name: "missing after traverse", check: access(alice, "/a/zz", Read), kind: errs.NotFound, msg: []string{"no such file"}},
		{name: "file mid-path", check: access(alice, "/x/y", Read), kind: errs.NotDir, msg: []string{"/x is a file"}},
		{name: "bad path", check: access(alice, "x", Read), kind: errs.Invalid, msg: []string{"not absolute"}},

		// superuser
		{name: "superuser bypasses", check: access(root, "/a/b/c", Read|Write|Exec)},
		{name: "superuser on missing path", check: access(root, "/nope/x", Read)},
		{name: "supergroup member is not superuser", check: access(carol, "/a/b/c", Read), kind: errs.Permission, msg: []string{"user=carol"}},
		{name: "empty superuser name never matches", check: func(tr *Tree) error { return tr.CheckAccess(anon, "", "/a/b/c", Read) },
			kind: errs.Permission, msg: []string{"user= "}},

		// parent checks
		{name: "parent write owner", check: parent(alice, "/a/b/new", Write)},
		{name: "parent write group denied", check: parent(bob, "/a/b/new", Write), kind: errs.Permission,
			msg: []string{"user=bob", "access=-w-", `inode="/a/b"`, "parent"}},
		{name: "parent of existing", check: parent(alice, "/a/b/c", Write|Exec)},
		{name: "parent world-writable", check: parent(eve, "/tmp/e", Write)},
		{name: "nearest ancestor for mkdir -p", check: parent(eve, "/tmp/x/y/z", Write)},
		{name: "nearest ancestor denied", check: parent(eve, "/a/q/r", Write), kind: errs.Permission, msg: []string{`inode="/a"`, "parent"}},
		{name: "parent traverse denied", check: parent(eve, "/a/b/c/new", Write), kind: errs.Permission, msg: []string{`inode="/a/b"`, "traverse"}},
		{name: "parent of root is root", check: parent(alice, "/", Write), kind: errs.Permission, msg: []string{`inode="/"`}},
		{name: "parent under file", check: parent(alice, "/x/y", Write), kind: errs.NotDir, msg: []string{"/x is a file"}},
		{name: "parent superuser", check: parent(root, "/a/b/c/new", Write)},

		// sticky bit
		{name: "sticky other user", check: sticky(eve, "/tmp/bob.txt"), kind: errs.Permission,
			msg: []string{"user=eve", "/tmp/bob.txt", "owned by bob", "sticky bit set on /tmp"}},
		{name: "sticky entry owner", check: sticky(bob, "/tmp/bob.txt")},
		{name: "sticky dir owner", setup: func(tr *Tree) { must(t, tr.SetOwner("/tmp", "carol", "")) }, check: sticky(carol, "/tmp/bob.txt")},
		{name: "sticky superuser", check: sticky(root, "/tmp/bob.txt")},
		{name: "no sticky bit", check: sticky(eve, "/a/f")},
		{name: "sticky root", check: sticky(eve, "/")},
		{name: "sticky missing", check: sticky(eve, "/tmp/nope"), kind: errs.NotFound},

		// owner check
		{name: "owner ok", check: owner(alice, "/a/f")},
		{name: "owner superuser", check: owner(root, "/a/f")},
		{name: "not owner", check: owner(bob, "/a/f"), kind: errs.Permission, msg: []string{"user=bob", "not the owner alice"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := fixture(t)
			if c.setup != nil {
				c.setup(tr)
			}
			h := tr.Hash()
			err := c.check(tr)
			if c.kind == 0 {
				must(t, err)
			} else {
				wantErr(t, err, c.kind, c.msg...)
			}
			if tr.Hash() != h {
				t.Fatal("a check changed the tree")
			}
		})
	}
	if s := (Read | Exec).String(); s != "r-x" {
		t.Fatal(s)
	}
}
