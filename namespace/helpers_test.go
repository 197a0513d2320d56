package namespace

import (
	"strings"
	"testing"

	"github.com/blockfs/blockfs/errs"
)

const (
	bs    = 128 // block size of fixture files
	super = "hdfs"
)

// fixture builds:
//
//	/             hdfs:supergroup 0755
//	/a            alice:staff 0755
//	/a/b          alice:staff 0750
//	/a/b/c        alice:staff 0700
//	/a/f          alice:staff 0644  complete, blocks (len 100, len 50)
//	/a/uc         alice:staff 0644  under construction, one block (len 0)
//	/a/new        alice:staff 0644  under construction, no blocks
//	/tmp          hdfs:supergroup 01777
//	/tmp/bob.txt  bob:staff 0644    complete, no blocks
//	/x            hdfs:supergroup 0644 complete, no blocks
func fixture(t testing.TB) *Tree {
	t.Helper()
	tr := New(DefaultLimits(), super, "supergroup")
	must(t, tr.Mkdirs(mustPath("/a/b/c"), MkdirsOpts{Perm: 0700, Parents: true, Owner: "alice", Group: "staff", MtimeMs: 1}))
	must(t, tr.SetPermission(mustPath("/a/b"), 0750, 1))
	must(t, tr.SetPermission(mustPath("/a"), 0755, 1))
	must(t, tr.Mkdirs(mustPath("/tmp"), MkdirsOpts{Perm: 01777, MtimeMs: 1}))

	f := mustCreate(t, tr, "/a/f", "alice")
	// b1's CRC (0, a real value) comes with the next AddBlock, b2's with
	// Complete, which leaves b1's as recorded.
	b1 := mustAdd(t, tr, "/a/f", f.ID, nil)
	b1.Length = 100
	b1c := b1.WithCRC(0)
	b2 := mustAdd(t, tr, "/a/f", f.ID, &b1c)
	b2.Length = 50
	if _, err := tr.Complete(mustPath("/a/f"), f.ID, []Block{b1, b2.WithCRC(0xdeadbeef)}, 3); err != nil {
		t.Fatal(err)
	}
	uc := mustCreate(t, tr, "/a/uc", "alice")
	mustAdd(t, tr, "/a/uc", uc.ID, nil)
	mustCreate(t, tr, "/a/new", "alice")
	bob := mustCreate(t, tr, "/tmp/bob.txt", "bob")
	if _, err := tr.Complete(mustPath("/tmp/bob.txt"), bob.ID, nil, 4); err != nil {
		t.Fatal(err)
	}
	x := mustCreate(t, tr, "/x", "")
	if _, err := tr.Complete(mustPath("/x"), x.ID, nil, 4); err != nil {
		t.Fatal(err)
	}
	return tr
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mustCreate(t testing.TB, tr *Tree, p, owner string) FileInfo {
	t.Helper()
	fi, _, err := tr.Create(mustPath(p), CreateOpts{Perm: 0644, Replication: 3, BlockSize: bs, Owner: owner, MtimeMs: 2})
	if err != nil {
		t.Fatal(err)
	}
	return fi
}

func mustAdd(t testing.TB, tr *Tree, p string, id ID, prev *Block) Block {
	t.Helper()
	bid, gs := tr.AllocBlock()
	b, _, err := tr.AddBlock(mustPath(p), id, prev, bid, gs, 3)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustStat(t testing.TB, tr *Tree, p string) FileInfo {
	t.Helper()
	fi, err := tr.Stat(mustPath(p))
	if err != nil {
		t.Fatal(err)
	}
	return fi
}

func blocksOf(t testing.TB, tr *Tree, p string) []Block {
	t.Helper()
	_, b, err := tr.File(mustPath(p))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// wantErr checks err's kind and that its message contains every sub.
func wantErr(t testing.TB, err error, kind errs.Kind, subs ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got nil error, want %v", kind)
	}
	if k := errs.KindOf(err); k != kind {
		t.Fatalf("got kind %v (%v), want %v", k, err, kind)
	}
	for _, s := range subs {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("error %q does not mention %q", err, s)
		}
	}
}

// mustPath parses p, a path the test knows to be valid.
func mustPath(p string) Path {
	pp, err := ParsePath(p)
	if err != nil {
		panic("mustPath: " + err.Error())
	}
	return pp
}

// withPaths parses ps as an edge does and runs f on them; an invalid path
// fails with ParsePath's error, before the tree sees it, as in a server.
func withPaths(f func(ps ...Path) error, ps ...string) error {
	out := make([]Path, len(ps))
	for i, p := range ps {
		var err error
		if out[i], err = ParsePath(p); err != nil {
			return err
		}
	}
	return f(out...)
}
