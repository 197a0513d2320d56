package namespace

import (
	"testing"

	"github.com/blockfs/blockfs/errs"
)

// policy is the superuser rule of the tests: user super, group supergroup.
var policy = Policy{Superuser: super, Supergroup: "supergroup"}

var (
	alice  = policy.Caller("alice", []string{"staff", "dev"}, "ca")
	alice2 = policy.Caller("alice", []string{"staff", "dev"}, "ca2") // alice on another client
	bob    = policy.Caller("bob", []string{"dev", "staff"}, "cb")
	eve    = policy.Caller("eve", nil, "ce")
	carol  = policy.Caller("carol", []string{"supergroup"}, "cc") // superuser by group
	dave   = policy.Caller("dave", []string{"super"}, "cd")       // not: no such rule
	root   = policy.Caller(super, nil, "cr")
)

// permFixture is fixture plus:
//
//	/pub               hdfs 0777 (world-writable, not sticky)
//	/pub/bob.txt       bob 0644
//	/pub/tree          bob 0755, /pub/tree/sub bob 0755, /pub/tree/sub/f bob 0644,
//	                   /pub/tree/empty bob 0500 (empty)
//	/tmp/eve.txt       eve 0644 (complete)
//	/tmp/bob2          bob 0644 (complete)
//	/a/w               alice 0644, under construction, written by alice on client "ca", one block
func permFixture(t testing.TB) (*Tree, FileInfo) {
	t.Helper()
	tr := fixture(t)
	must(t, tr.Mkdirs(mustPath("/pub"), MkdirsOpts{Perm: 0777, MtimeMs: 1}))
	must(t, tr.SetPermission(mustPath("/pub"), 0777, 1))
	closed := func(p string, c *Caller) {
		fi, _, err := tr.As(c, "test").Create(mustPath(p), CreateOpts{Perm: 0644, Replication: 1, BlockSize: bs, MtimeMs: 2})
		must(t, err)
		_, err = tr.As(c, "test").Complete(mustPath(p), fi.ID, nil, 2)
		must(t, err)
	}
	closed("/pub/bob.txt", bob)
	must(t, tr.As(bob, "test").Mkdirs(mustPath("/pub/tree/sub"), MkdirsOpts{Perm: 0755, Parents: true, MtimeMs: 1}))
	closed("/pub/tree/sub/f", bob)
	must(t, tr.As(bob, "test").Mkdirs(mustPath("/pub/tree/empty"), MkdirsOpts{Perm: 0500, MtimeMs: 1}))
	closed("/tmp/eve.txt", eve)
	closed("/tmp/bob2", bob)
	w, _, err := tr.As(alice, "test").Create(mustPath("/a/w"), CreateOpts{Perm: 0644, Replication: 1, BlockSize: bs, MtimeMs: 2})
	must(t, err)
	if _, err := tr.As(alice, "test").AddBlock(mustPath("/a/w"), w.ID, nil, 3); err != nil {
		t.Fatal(err)
	}
	return tr, mustStat(t, tr, "/a/w")
}

// permCase is one check of one row of the permission table
// (docs/SECURITY.md): allowed (kind 0, or the non-permission error the
// operation then fails with) or denied (errs.Permission).
type permCase struct {
	row, name string
	setup     func(tr *Tree)
	op        func(tr *Tree, w FileInfo) error
	kind      errs.Kind
	msg       []string // substrings of the error
}

func create(c *Caller, p string, overwrite bool) func(*Tree, FileInfo) error {
	return func(tr *Tree, _ FileInfo) error {
		_, _, err := tr.As(c, "test").Create(mustPath(p), CreateOpts{Perm: 0644, Overwrite: overwrite, Replication: 1, BlockSize: bs, MtimeMs: 9})
		return err
	}
}

func del(c *Caller, p string, recursive bool) func(*Tree, FileInfo) error {
	return func(tr *Tree, _ FileInfo) error {
		_, err := tr.As(c, "test").Delete(mustPath(p), recursive, 9)
		return err
	}
}

func rename(c *Caller, src, dst string) func(*Tree, FileInfo) error {
	return func(tr *Tree, _ FileInfo) error { return tr.As(c, "test").Rename(mustPath(src), mustPath(dst), 9) }
}

func addBlock(c *Caller) func(*Tree, FileInfo) error {
	return func(tr *Tree, w FileInfo) error {
		b := blocksOf(t0, tr, "/a/w")[0]
		b.Length = 10
		_, err := tr.As(c, "test").AddBlock(mustPath("/a/w"), w.ID, &b, 9)
		return err
	}
}

func appendTo(c *Caller, p string) func(*Tree, FileInfo) error {
	return func(tr *Tree, _ FileInfo) error { _, err := tr.As(c, "test").Append(mustPath(p), 9); return err }
}

func chmod(c *Caller, p string) func(*Tree, FileInfo) error {
	return func(tr *Tree, _ FileInfo) error { return tr.As(c, "test").SetPermission(mustPath(p), 0600, 9) }
}

func chown(c *Caller, p, owner, group string) func(*Tree, FileInfo) error {
	return func(tr *Tree, _ FileInfo) error { return tr.As(c, "test").SetOwner(mustPath(p), owner, group) }
}

func stat(c *Caller, p string) func(*Tree, FileInfo) error {
	return func(tr *Tree, _ FileInfo) error { _, err := tr.As(c, "test").Stat(mustPath(p)); return err }
}

func read(c *Caller, p string) func(*Tree, FileInfo) error {
	return func(tr *Tree, _ FileInfo) error { _, _, err := tr.As(c, "test").File(mustPath(p)); return err }
}

func list(c *Caller, p string) func(*Tree, FileInfo) error {
	return func(tr *Tree, _ FileInfo) error { _, _, err := tr.As(c, "test").List(mustPath(p), "", 0); return err }
}

func mkdirs(c *Caller, p string) func(*Tree, FileInfo) error {
	return func(tr *Tree, _ FileInfo) error {
		return tr.As(c, "test").Mkdirs(mustPath(p), MkdirsOpts{Perm: 0755, Parents: true, MtimeMs: 9})
	}
}

// t0 lets the small op builders above fail a test; set per case.
var t0 testing.TB

const P = errs.Permission

var permCases = []permCase{
	{row: "traverse", name: "allowed: x on every ancestor", op: stat(bob, "/a/b/c")},
	{row: "traverse", name: "denied: no x on /a/b", op: stat(eve, "/a/b/c"), kind: P,
		msg: []string{"user=eve", "access=--x", `inode="/a/b":alice:staff:drwxr-x---`, "traverse"}},
	{row: "traverse", name: "denied before not-found", op: stat(eve, "/a/b/zz/y"), kind: P, msg: []string{"traverse"}},
	{row: "traverse", name: "allowed: then not-found", op: stat(eve, "/a/zz"), kind: errs.NotFound},

	{row: "read", name: "allowed: r on file", op: read(eve, "/a/f")},
	{row: "read", name: "denied: no r", setup: func(tr *Tree) { must(t0, tr.SetPermission(mustPath("/a/f"), 0640, 1)) },
		op: read(eve, "/a/f"), kind: P, msg: []string{"user=eve", "access=r--", `inode="/a/f":alice:staff:-rw-r-----`}},
	{row: "read", name: "denied: owner class wins over group", setup: func(tr *Tree) { must(t0, tr.SetPermission(mustPath("/a/f"), 0044, 1)) },
		op: read(alice, "/a/f"), kind: P, msg: []string{"user=alice", "access=r--"}},
	{row: "read", name: "denied: group class wins over other", setup: func(tr *Tree) { must(t0, tr.SetPermission(mustPath("/a/f"), 0604, 1)) },
		op: read(bob, "/a/f"), kind: P, msg: []string{"user=bob"}},

	{row: "list", name: "allowed: r-x on dir (group)", op: list(bob, "/a/b")},
	{row: "list", name: "denied: no r on dir", op: list(bob, "/a/b/c"), kind: P,
		msg: []string{"user=bob", "access=r-x", `inode="/a/b/c"`}},
	{row: "list", name: "allowed: a file needs traverse only", setup: func(tr *Tree) { must(t0, tr.SetPermission(mustPath("/a/f"), 0600, 1)) },
		op: list(eve, "/a/f")},

	{row: "stat", name: "allowed: no r needed on target", op: stat(bob, "/a/b/c")},
	{row: "stat", name: "denied: traverse", op: stat(eve, "/a/b/c"), kind: P, msg: []string{"user=eve"}},

	{row: "create", name: "allowed: wx on parent", op: create(eve, "/tmp/new", false)},
	{row: "create", name: "denied: no w on parent", op: create(eve, "/a/new2", false), kind: P,
		msg: []string{"user=eve", "access=-wx", `inode="/a":alice:staff:drwxr-xr-x`, "parent"}},
	{row: "create", name: "denied: no w on last existing ancestor (create parent)",
		op: func(tr *Tree, _ FileInfo) error {
			_, _, err := tr.As(eve, "test").Create(mustPath("/a/q/r"), CreateOpts{Perm: 0644, CreateParent: true, Replication: 1, BlockSize: bs})
			return err
		}, kind: P, msg: []string{`inode="/a"`}},
	{row: "create", name: "allowed: permission before exists", op: create(eve, "/tmp/eve.txt", false), kind: errs.Exist},

	{row: "overwrite", name: "allowed: own file in sticky dir", op: create(bob, "/tmp/bob.txt", true)},
	{row: "overwrite", name: "denied: sticky bit, file 0666", setup: func(tr *Tree) { must(t0, tr.SetPermission(mustPath("/tmp/bob.txt"), 0666, 1)) },
		op: create(eve, "/tmp/bob.txt", true), kind: P, msg: []string{"user=eve", `inode="/tmp/bob.txt"`, "sticky bit"}},
	{row: "overwrite", name: "denied: no w on the file", op: create(eve, "/pub/bob.txt", true), kind: P,
		msg: []string{"user=eve", "access=-w-", `inode="/pub/bob.txt"`, "overwrite"}},
	{row: "overwrite", name: "allowed: 0666 file, no sticky bit", setup: func(tr *Tree) { must(t0, tr.SetPermission(mustPath("/pub/bob.txt"), 0666, 1)) },
		op: create(eve, "/pub/bob.txt", true)},

	{row: "mkdirs", name: "allowed: wx on last existing ancestor", op: mkdirs(eve, "/tmp/x/y/z")},
	{row: "mkdirs", name: "denied: no w on last existing ancestor", op: mkdirs(eve, "/a/q/r"), kind: P,
		msg: []string{"user=eve", "access=-wx", `inode="/a"`, "last existing ancestor"}},
	{row: "mkdirs", name: "allowed: existing directory needs traverse only", op: mkdirs(eve, "/a")},

	{row: "delete", name: "allowed: own file in sticky dir", op: del(bob, "/tmp/bob.txt", false)},
	{row: "delete", name: "allowed: sticky dir's owner", setup: func(tr *Tree) { must(t0, tr.SetOwner(mustPath("/tmp"), "carol2", "")) },
		op: del(policy.Caller("carol2", nil, ""), "/tmp/bob.txt", false)},
	{row: "delete", name: "denied: no w on parent", op: del(eve, "/a/f", false), kind: P,
		msg: []string{"user=eve", "access=-wx", `inode="/a"`, "parent"}},
	{row: "delete", name: "denied: sticky bit", op: del(eve, "/tmp/bob.txt", false), kind: P,
		msg: []string{"user=eve", "access=-wx", `inode="/tmp/bob.txt":bob:`, `sticky bit on parent "/tmp"`}},

	{row: "delete recursive", name: "allowed: own tree (empty 0500 dir skipped)", op: del(bob, "/pub/tree", true)},
	{row: "delete recursive", name: "denied: someone else's tree", op: del(eve, "/pub/tree", true), kind: P,
		msg: []string{"user=eve", "access=rwx", `inode="/pub/tree":bob:`, "every directory beneath"}},
	{row: "delete recursive", name: "denied: a directory deep down", setup: func(tr *Tree) { must(t0, tr.SetPermission(mustPath("/pub/tree/sub"), 0555, 1)) },
		op: del(bob, "/pub/tree", true), kind: P, msg: []string{"user=bob", `inode="/pub/tree/sub"`}},

	{row: "rename", name: "allowed: wx on both parents", op: rename(alice, "/a/f", "/a/b/g")},
	{row: "rename", name: "denied: no w on destination parent", op: rename(eve, "/tmp/eve.txt", "/a/e"), kind: P,
		msg: []string{"user=eve", "access=-wx", `inode="/a"`, "destination parent"}},
	{row: "rename", name: "denied: no w on destination directory", op: rename(eve, "/tmp/eve.txt", "/a"), kind: P,
		msg: []string{"user=eve", `inode="/a"`, "destination parent"}},
	{row: "rename", name: "denied: no w on source parent", op: rename(eve, "/a/f", "/tmp/f"), kind: P,
		msg: []string{"user=eve", `inode="/a"`, "parent"}},

	{row: "rename sticky source", name: "allowed: own file", op: rename(bob, "/tmp/bob.txt", "/tmp/b3")},
	{row: "rename sticky source", name: "denied: someone else's file", op: rename(eve, "/tmp/bob.txt", "/tmp/mine"), kind: P,
		msg: []string{"user=eve", `inode="/tmp/bob.txt"`, "sticky bit"}},

	{row: "rename sticky destination", name: "allowed: own destination (then exists)", op: rename(bob, "/tmp/bob2", "/tmp/bob.txt"), kind: errs.Exist},
	{row: "rename sticky destination", name: "denied: someone else's destination", op: rename(eve, "/tmp/eve.txt", "/tmp/bob.txt"), kind: P,
		msg: []string{"user=eve", `inode="/tmp/bob.txt"`, "sticky bit"}},
	{row: "rename sticky destination", name: "denied: existing entry in destination directory",
		setup: func(tr *Tree) {
			must(t0, tr.Mkdirs(mustPath("/tmp/d/eve.txt"), MkdirsOpts{Perm: 01777, Parents: true}))
		},
		op: rename(eve, "/tmp/eve.txt", "/tmp/d"), kind: P, msg: []string{`inode="/tmp/d/eve.txt"`, "sticky bit"}},

	{row: "append", name: "allowed: w on the file (group)", setup: func(tr *Tree) { must(t0, tr.SetPermission(mustPath("/a/f"), 0664, 1)) },
		op: appendTo(bob, "/a/f")},
	{row: "append", name: "denied: no w on the file", op: appendTo(bob, "/a/f"), kind: P,
		msg: []string{"user=bob", "access=-w-", `inode="/a/f":alice:staff:-rw-r--r--`, "append"}},
	{row: "append", name: "denied: traverse", op: appendTo(eve, "/a/b/c/f"), kind: P, msg: []string{"user=eve", "traverse"}},
	{row: "append", name: "allowed: then being written", op: appendTo(alice, "/a/w"), kind: errs.Precondition,
		msg: []string{"already being written", "/a/w", "alice"}},

	{row: "writer", name: "allowed: the writer", op: addBlock(alice)},
	{row: "writer", name: "denied: another user", op: addBlock(eve), kind: P,
		msg: []string{"user=eve", "access=-w-", `inode="/a/w"`, "not the writer", "user alice"}},
	{row: "writer", name: "denied: same user, another client", op: addBlock(alice2), kind: P, msg: []string{"user=alice", "not the writer"}},
	{row: "writer", name: "denied: the superuser", op: addBlock(root), kind: P, msg: []string{"not the writer"}},
	{row: "writer", name: "allowed: complete by the writer", op: func(tr *Tree, w FileInfo) error {
		_, err := tr.As(alice, "test").Complete(mustPath("/a/w"), w.ID, blocksOf(t0, tr, "/a/w"), 9)
		return err
	}},
	{row: "writer", name: "denied: complete by another", op: func(tr *Tree, w FileInfo) error {
		_, err := tr.As(bob, "test").Complete(mustPath("/a/w"), w.ID, blocksOf(t0, tr, "/a/w"), 9)
		return err
	}, kind: P, msg: []string{"user=bob", "not the writer"}},
	{row: "writer", name: "allowed: abandon by the writer", op: func(tr *Tree, w FileInfo) error {
		return tr.As(alice, "test").AbandonBlock(mustPath("/a/w"), w.ID, blocksOf(t0, tr, "/a/w")[0])
	}},
	{row: "writer", name: "denied: abandon by another", op: func(tr *Tree, w FileInfo) error {
		return tr.As(eve, "test").AbandonBlock(mustPath("/a/w"), w.ID, blocksOf(t0, tr, "/a/w")[0])
	}, kind: P, msg: []string{"user=eve", "not the writer"}},

	{row: "chmod", name: "allowed: owner", op: chmod(alice, "/a/f")},
	{row: "chmod", name: "allowed: superuser", op: chmod(root, "/a/f")},
	{row: "chmod", name: "denied: not the owner", op: chmod(bob, "/a/f"), kind: P,
		msg: []string{"user=bob", "access=owner", `inode="/a/f":alice:`}},

	{row: "chown owner", name: "allowed: superuser", op: chown(root, "/a/f", "bob", "")},
	{row: "chown owner", name: "allowed: owner names themselves", op: chown(alice, "/a/f", "alice", "")},
	{row: "chown owner", name: "denied: owner gives the file away", op: chown(alice, "/a/f", "bob", ""), kind: P,
		msg: []string{"user=alice", `inode="/a/f"`, "only a superuser may change the owner"}},

	{row: "chown group", name: "allowed: owner into own group", op: chown(alice, "/a/f", "", "dev")},
	{row: "chown group", name: "denied: owner into a foreign group", op: chown(alice, "/a/f", "", "wheel"), kind: P,
		msg: []string{"user=alice", `inode="/a/f"`, "not a member of group wheel"}},
	{row: "chown group", name: "denied: group member, not owner", op: chown(bob, "/a/f", "", "dev"), kind: P,
		msg: []string{"user=bob", "access=owner"}},

	{row: "superuser", name: "allowed: superuser by name", op: list(root, "/a/b/c")},
	{row: "superuser", name: "allowed: superuser by supergroup", op: del(carol, "/tmp/bob.txt", false)},
	{row: "superuser", name: "denied: other users", op: list(dave, "/a/b/c"), kind: P, msg: []string{"user=dave"}},
}

// TestPermissionTable runs every row of the permission table with its
// allowed and denied cases; a denied case must leave the tree unchanged.
func TestPermissionTable(t *testing.T) {
	rows := map[string][2]bool{} // row -> seen allowed, seen denied
	for _, c := range permCases {
		t.Run(c.row+"/"+c.name, func(t *testing.T) {
			t0 = t
			tr, w := permFixture(t)
			if c.setup != nil {
				c.setup(tr)
			}
			h := tr.Hash()
			err := c.op(tr, w)
			switch {
			case c.kind == 0:
				must(t, err)
			default:
				wantErr(t, err, c.kind, c.msg...)
			}
			if c.kind != 0 && tr.Hash() != h {
				t.Fatal("a refused operation changed the tree")
			}
			checkInvariants(t, tr)
		})
		seen := rows[c.row]
		seen[0] = seen[0] || c.kind != P
		seen[1] = seen[1] || c.kind == P
		rows[c.row] = seen
	}
	for row, seen := range rows {
		if !seen[0] || !seen[1] {
			t.Errorf("row %q needs an allowed and a denied case (have %v)", row, seen)
		}
	}
}

func TestPolicy(t *testing.T) {
	if !root.Super || !carol.Super || alice.Super || dave.Super {
		t.Fatal("superuser flags wrong")
	}
	if (Policy{}).Caller("", []string{""}, "").Super {
		t.Fatal("an empty policy made a superuser")
	}
	if s := (Read | Exec).String(); s != "r-x" {
		t.Fatal(s)
	}
}

// TestWriterRecorded: Create records the caller as writer; Complete
// clears it; the system (nil caller) may still write any open file.
func TestWriterRecorded(t *testing.T) {
	tr, w := permFixture(t)
	if w.Writer != (Writer{Client: "ca", User: "alice"}) || w.Owner != "alice" || w.Group != "staff" {
		t.Fatalf("writer %+v owner %s:%s", w.Writer, w.Owner, w.Group)
	}
	b := blocksOf(t, tr, "/a/w")[0]
	nb, err := tr.As(alice, "test").AddBlock(mustPath("/a/w"), w.ID, nil, 5) // a retry of the first AddBlock
	if err != nil || !nb.Retried || nb.Block != b {
		t.Fatalf("retry: %+v %v", nb, err)
	}
	if _, err := tr.As(nil, "test").AddBlock(mustPath("/a/w"), w.ID, &b, 5); err != nil {
		t.Fatal(err)
	}
	fi, err := tr.As(alice, "test").Complete(mustPath("/a/w"), w.ID, blocksOf(t, tr, "/a/w"), 6)
	if err != nil || fi.Writer != (Writer{}) {
		t.Fatalf("complete: %+v %v", fi.Writer, err)
	}
	// A retried Complete of a closed file is an unchanged success for anyone (HDFS-3031).
	h := tr.Hash()
	if _, err := tr.As(bob, "test").Complete(mustPath("/a/w"), w.ID, blocksOf(t, tr, "/a/w"), 7); err != nil || tr.Hash() != h {
		t.Fatalf("retried complete: %v", err)
	}
	// A refused AddBlock moves no counter.
	nf, _, err := tr.As(bob, "test").Create(mustPath("/tmp/bw"), CreateOpts{Perm: 0644, Replication: 1, BlockSize: bs})
	must(t, err)
	h = tr.Hash()
	if _, err := tr.As(eve, "test").AddBlock(mustPath("/tmp/bw"), nf.ID, nil, 8); errs.KindOf(err) != P || tr.Hash() != h {
		t.Fatalf("refused AddBlock: %v, changed %v", err, tr.Hash() != h)
	}
	if _, _, err := tr.As(policy.Caller("bob", nil, string(make([]byte, 300))), "test").Create(mustPath("/tmp/x"), CreateOpts{Perm: 0644, Replication: 1, BlockSize: bs}); errs.KindOf(err) != errs.Invalid {
		t.Fatalf("long client id: %v", err)
	}
}
