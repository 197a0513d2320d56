package namespace

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/blockfs/blockfs/errs"
)

func TestNewRoot(t *testing.T) {
	tr := New(Limits{}, "hdfs", "supergroup")
	fi := mustStat(t, tr, "/")
	want := FileInfo{Path: "/", ID: RootID, IsDir: true, Owner: "hdfs", Group: "supergroup", Mode: 0755, State: Complete}
	if fi != want {
		t.Fatalf("root = %+v, want %+v", fi, want)
	}
	if tr.Limits() != DefaultLimits() {
		t.Fatalf("limits %+v", tr.Limits())
	}
	if f, d, b := tr.Counts(); f != 0 || d != 1 || b != 0 {
		t.Fatalf("counts %d %d %d", f, d, b)
	}
	if tr.NextBlockID() != 1 || tr.NextGenStamp() != 1000 {
		t.Fatalf("counters %d %d", tr.NextBlockID(), tr.NextGenStamp())
	}
}

func TestMkdirs(t *testing.T) {
	tr := New(Limits{}, super, "supergroup")
	must(t, tr.Mkdirs(mustPath("/a"), MkdirsOpts{Perm: 0750, Owner: "alice", Group: "staff", MtimeMs: 10}))
	a := mustStat(t, tr, "/a")
	if !a.IsDir || a.Mode != 0750 || a.Owner != "alice" || a.Group != "staff" || a.MtimeMs != 10 || a.Parent != RootID || a.Name != "a" {
		t.Fatalf("a = %+v", a)
	}
	if r := mustStat(t, tr, "/"); r.MtimeMs != 10 || r.Children != 1 {
		t.Fatalf("root = %+v", r)
	}
	// Parents: intermediate dirs get perm|0300; owner and group inherited when empty.
	must(t, tr.Mkdirs(mustPath("/a/b/c/d"), MkdirsOpts{Perm: 0500, Parents: true, MtimeMs: 20}))
	for _, c := range []struct {
		p    string
		mode uint32
	}{{"/a/b", 0700}, {"/a/b/c", 0700}, {"/a/b/c/d", 0500}} {
		fi := mustStat(t, tr, c.p)
		if fi.Mode != c.mode || fi.Owner != "alice" || fi.Group != "staff" || fi.MtimeMs != 20 {
			t.Fatalf("%s = %+v", c.p, fi)
		}
	}
	if a := mustStat(t, tr, "/a"); a.MtimeMs != 20 {
		t.Fatalf("parent mtime %d", a.MtimeMs)
	}
	// Existing dir with Parents: success, nothing changes.
	h := tr.Hash()
	must(t, tr.Mkdirs(mustPath("/a/b"), MkdirsOpts{Parents: true, MtimeMs: 99}))
	must(t, tr.Mkdirs(mustPath("/"), MkdirsOpts{Parents: true, MtimeMs: 99}))
	if tr.Hash() != h {
		t.Fatal("mkdirs of existing dir changed the tree")
	}
	if f, d, _ := tr.Counts(); f != 0 || d != 5 {
		t.Fatalf("counts %d %d", f, d)
	}
}

func TestCreate(t *testing.T) {
	tr := fixture(t)
	fi, old, err := tr.Create(mustPath("/a/b/new"), CreateOpts{Perm: 0600, Replication: 2, BlockSize: 64, Owner: "carol", MtimeMs: 50})
	must(t, err)
	if old != nil || fi.State != UnderConstruction || fi.NumBlocks != 0 || fi.Length != 0 || fi.Replication != 2 ||
		fi.BlockSize != 64 || fi.Owner != "carol" || fi.Group != "staff" || fi.Mode != 0600 || fi.Path != "/a/b/new" || fi.IsDir {
		t.Fatalf("created %+v", fi)
	}
	if p := mustStat(t, tr, "/a/b"); p.MtimeMs != 50 {
		t.Fatalf("parent mtime %d", p.MtimeMs)
	}
	// CreateParent.
	fi, _, err = tr.Create(mustPath("/p/q/r"), CreateOpts{Perm: 0640, CreateParent: true, Replication: 1, BlockSize: 1, Owner: "dan", Group: "dev", MtimeMs: 60})
	must(t, err)
	if q := mustStat(t, tr, "/p/q"); !q.IsDir || q.Mode != 0740 || q.Owner != "dan" || q.Group != "dev" || q.MtimeMs != 60 {
		t.Fatalf("implicit parent %+v", q)
	}
	// Overwrite returns the old blocks, drops them from the index, new id.
	oldFi := mustStat(t, tr, "/a/f")
	oldBlocks := slices.Clone(blocksOf(t, tr, "/a/f"))
	f0, d0, b0 := tr.Counts()
	fi, old, err = tr.Create(mustPath("/a/f"), CreateOpts{Perm: 0644, Overwrite: true, Replication: 3, BlockSize: bs, MtimeMs: 70})
	must(t, err)
	if !reflect.DeepEqual(old, oldBlocks) || fi.ID == oldFi.ID || fi.NumBlocks != 0 || fi.State != UnderConstruction {
		t.Fatalf("overwrite: %+v old=%v", fi, old)
	}
	for _, b := range old {
		if _, ok := tr.BlockInode(b.ID); ok {
			t.Fatalf("block %v still indexed", b)
		}
	}
	if _, _, ok := tr.FileByID(oldFi.ID); ok {
		t.Fatal("old inode still reachable by id")
	}
	if f, d, b := tr.Counts(); f != f0 || d != d0 || b != b0-2 {
		t.Fatalf("counts %d %d %d", f, d, b)
	}
}

func TestDelete(t *testing.T) {
	tr := fixture(t)
	f := slices.Clone(blocksOf(t, tr, "/a/f"))
	uc := slices.Clone(blocksOf(t, tr, "/a/uc"))
	// A file, non-recursive.
	got, err := tr.Delete(mustPath("/a/f"), false, 80)
	must(t, err)
	if !reflect.DeepEqual(got, f) {
		t.Fatalf("removed %v, want %v", got, f)
	}
	if a := mustStat(t, tr, "/a"); a.MtimeMs != 80 {
		t.Fatalf("parent mtime %d", a.MtimeMs)
	}
	// An empty dir, non-recursive.
	_, err = tr.Delete(mustPath("/a/b/c"), false, 81)
	must(t, err)
	// A tree, recursive: all blocks in walk order.
	got, err = tr.Delete(mustPath("/a"), true, 82)
	must(t, err)
	if !reflect.DeepEqual(got, uc) {
		t.Fatalf("removed %v, want %v", got, uc)
	}
	if _, err := tr.Stat(mustPath("/a/b")); errs.KindOf(err) != errs.NotFound {
		t.Fatalf("stat after delete: %v", err)
	}
	for _, b := range append(f, uc...) {
		if _, ok := tr.BlockInode(b.ID); ok {
			t.Fatalf("block %v still indexed", b)
		}
	}
	if f, d, b := tr.Counts(); f != 2 || d != 2 || b != 0 {
		t.Fatalf("counts %d %d %d", f, d, b)
	}
	if r := mustStat(t, tr, "/"); r.MtimeMs != 82 || r.Children != 2 {
		t.Fatalf("root %+v", r)
	}
}

func TestSetters(t *testing.T) {
	tr := fixture(t)
	must(t, tr.SetPermission(mustPath("/a/f"), 01600, 90))
	must(t, tr.SetOwner(mustPath("/a/f"), "zed", ""))
	fi := mustStat(t, tr, "/a/f")
	if fi.Mode != 01600 || fi.MtimeMs != 90 || fi.Owner != "zed" || fi.Group != "staff" {
		t.Fatalf("%+v", fi)
	}
	must(t, tr.SetOwner(mustPath("/a/f"), "", "ops"))
	must(t, tr.SetReplication(mustPath("/a/f"), 7))
	fi = mustStat(t, tr, "/a/f")
	if fi.Owner != "zed" || fi.Group != "ops" || fi.Replication != 7 {
		t.Fatalf("%+v", fi)
	}
	h := tr.Hash()
	must(t, tr.SetOwner(mustPath("/a/f"), "", ""))
	if tr.Hash() != h {
		t.Fatal("empty SetOwner changed the tree")
	}
	must(t, tr.SetPermission(mustPath("/"), 0711, 91))
	if r := mustStat(t, tr, "/"); r.Mode != 0711 {
		t.Fatalf("root %+v", r)
	}
}

func TestReads(t *testing.T) {
	tr := fixture(t)
	fi, blocks, err := tr.File(mustPath("/a/f"))
	must(t, err)
	if fi.NumBlocks != 2 || fi.Length != 150 || fi.State != Complete || len(blocks) != 2 || blocks[0].Length != 100 {
		t.Fatalf("%+v %v", fi, blocks)
	}
	byID, blocks2, ok := tr.FileByID(fi.ID)
	if !ok || byID != fi || &blocks2[0] != &blocks[0] {
		t.Fatalf("FileByID %+v %v", byID, ok)
	}
	a := mustStat(t, tr, "/a")
	if _, _, ok := tr.FileByID(a.ID); ok {
		t.Fatal("FileByID of a directory")
	}
	if _, _, ok := tr.FileByID(9999); ok {
		t.Fatal("FileByID of a missing id")
	}
	_, _, err = tr.File(mustPath("/a"))
	wantErr(t, err, errs.IsDir, "directory")
	_, _, err = tr.File(mustPath("/a/zz"))
	wantErr(t, err, errs.NotFound, "no such file")
	_, err = tr.Stat(mustPath("/a/f/g"))
	wantErr(t, err, errs.NotDir, "/a/f is a file")
	_, err = ParsePath("a")
	wantErr(t, err, errs.Invalid, "not absolute")
	for _, b := range blocks {
		if id, ok := tr.BlockInode(b.ID); !ok || id != fi.ID {
			t.Fatalf("BlockInode(%d) = %d %v", b.ID, id, ok)
		}
	}
	if _, ok := tr.BlockInode(12345); ok {
		t.Fatal("BlockInode of an unknown block")
	}
	if f, d, b := tr.Counts(); f != 5 || d != 5 || b != 3 {
		t.Fatalf("counts %d %d %d", f, d, b)
	}
	var seen []string
	tr.ForEachBlock(func(b Block, inode ID, repl uint32, complete bool) {
		seen = append(seen, fmt.Sprintf("%v@%d/r%d/%v", b, inode, repl, complete))
	})
	uc := mustStat(t, tr, "/a/uc")
	ucb := blocksOf(t, tr, "/a/uc")
	want := []string{
		fmt.Sprintf("%v@%d/r3/true", blocks[0], fi.ID),
		fmt.Sprintf("%v@%d/r3/true", blocks[1], fi.ID),
		fmt.Sprintf("%v@%d/r3/false", ucb[0], uc.ID),
	}
	if !reflect.DeepEqual(seen, want) {
		t.Fatalf("ForEachBlock %v, want %v", seen, want)
	}
}

func TestListPaging(t *testing.T) {
	tr := New(Limits{}, super, "g")
	names := []string{"b", "a", "B", "aa", "z", "_", "a b", "é"}
	for _, n := range names {
		must(t, tr.Mkdirs(mustPath("/d/"+n), MkdirsOpts{Perm: 0755, Parents: true}))
	}
	slices.Sort(names) // byte order
	var got []string
	after := ""
	for pages := 0; ; pages++ {
		page, more, err := tr.List(mustPath("/d"), after, 3)
		must(t, err)
		for _, fi := range page {
			got = append(got, fi.Name)
			if fi.Path != "/d/"+fi.Name {
				t.Fatalf("path %q", fi.Path)
			}
		}
		if !more {
			if pages != 2 {
				t.Fatalf("%d pages", pages+1)
			}
			break
		}
		after = page[len(page)-1].Name
	}
	if !reflect.DeepEqual(got, names) {
		t.Fatalf("listed %q, want %q", got, names)
	}
	// startAfter need not exist; limit <= 0 means all.
	page, more, err := tr.List(mustPath("/d"), "ab", 0)
	must(t, err)
	if more || len(page) != 3 || page[0].Name != "b" {
		t.Fatalf("%v %v", page, more)
	}
	page, more, _ = tr.List(mustPath("/d"), "é", 5)
	if len(page) != 0 || more {
		t.Fatalf("after last: %v %v", page, more)
	}
	page, _, _ = tr.List(mustPath("/"), "", 10)
	if len(page) != 1 || page[0].Path != "/d" || page[0].Children != len(names) {
		t.Fatalf("root list %+v", page)
	}
	// A file lists as itself.
	tr2 := fixture(t)
	page, more, err = tr2.List(mustPath("/a/f"), "", 10)
	must(t, err)
	if len(page) != 1 || more || page[0].Path != "/a/f" || page[0].NumBlocks != 2 {
		t.Fatalf("file list %+v", page)
	}
	page, _, _ = tr2.List(mustPath("/a/f"), "f", 10)
	if len(page) != 0 {
		t.Fatalf("file list after: %+v", page)
	}
	_, _, err = tr2.List(mustPath("/nope"), "", 10)
	wantErr(t, err, errs.NotFound, "no such file")
}

// TestHashEqualTrees builds one tree two ways and checks the hashes agree,
// and that every kind of difference changes the hash.
func TestHashEqualTrees(t *testing.T) {
	build := func(order []string) *Tree {
		tr := New(Limits{}, super, "g")
		for _, p := range order {
			must(t, tr.Mkdirs(mustPath(p), MkdirsOpts{Perm: 0755, Parents: true, MtimeMs: 5}))
		}
		return tr
	}
	// Same ids, same fields, different histories (insertion order, a
	// rename, a delete, an abandoned block).
	a := build([]string{"/x/y", "/b", "/a/c"})
	b := build([]string{"/q/y", "/b", "/a/c"})
	must(t, b.Rename(mustPath("/q"), mustPath("/x"), 5))
	if a.Hash() != b.Hash() {
		t.Fatal("equal trees hash differently")
	}
	for _, tr := range []*Tree{a, b} {
		fi, _, err := tr.Create(mustPath("/f"), CreateOpts{Perm: 0644, Replication: 1, BlockSize: 10, MtimeMs: 5})
		must(t, err)
		b1 := mustAdd(t, tr, "/f", fi.ID, nil)
		if tr == b {
			must(t, tr.AbandonBlock(mustPath("/f"), fi.ID, b1))
			b1.ID, b1.GenStamp = tr.AllocBlock()
			_, _, err = tr.AddBlock(mustPath("/f"), fi.ID, nil, b1.ID, b1.GenStamp, 3)
			must(t, err)
		} else {
			tr.AllocBlock()
		}
		b1.Length = 7
		_, err = tr.Complete(mustPath("/f"), fi.ID, []Block{b1}, 5)
		must(t, err)
	}
	// a kept block 1, b abandoned it and wrote block 2: the trees differ.
	if a.Hash() == b.Hash() {
		t.Fatal("trees with different block ids hash equal")
	}
	h := a.Hash()
	changes := []func(*Tree){
		func(tr *Tree) { tr.AllocBlockID() },
		func(tr *Tree) { tr.AllocGenStamp() },
		func(tr *Tree) { must(t, tr.SetPermission(mustPath("/b"), 0700, 5)) },
		func(tr *Tree) { must(t, tr.SetPermission(mustPath("/b"), 0755, 6)) },
		func(tr *Tree) { must(t, tr.SetOwner(mustPath("/b"), "o", "")) },
		func(tr *Tree) { must(t, tr.SetOwner(mustPath("/b"), "", "h")) },
		func(tr *Tree) { must(t, tr.Rename(mustPath("/b"), mustPath("/bb"), 5)) },
	}
	for i, ch := range changes {
		c := build([]string{"/x/y", "/b", "/a/c"})
		ch(c)
		if c.Hash() == h {
			t.Fatalf("change %d did not change the hash", i)
		}
	}
}

// TestBigDirectory crosses the child-index thresholds both ways.
func TestBigDirectory(t *testing.T) {
	tr := New(Limits{}, super, "g")
	must(t, tr.Mkdirs(mustPath("/other"), MkdirsOpts{Perm: 0755}))
	const n = 192
	for i := n - 1; i >= 0; i-- {
		must(t, tr.Mkdirs(mustPath(fmt.Sprintf("/big/%04d", i)), MkdirsOpts{Perm: 0755, Parents: true}))
	}
	checkInvariants(t, tr)
	back, err := ReadImage(bytes.NewReader(image(t, tr)))
	must(t, err)
	checkInvariants(t, back)
	for i := 0; i < n; i++ {
		p := fmt.Sprintf("/big/%04d", i)
		switch {
		case i%3 == 0:
			must(t, tr.Rename(mustPath(p), mustPath(fmt.Sprintf("/other/%04d", i)), 1))
		case i%3 == 1:
			must(t, tr.Rename(mustPath(p), mustPath(fmt.Sprintf("/big/x%04d", i)), 1))
		default:
			_, err := tr.Delete(mustPath(p), false, 1)
			must(t, err)
		}
		checkInvariants(t, tr)
	}
	for i := 0; i < n; i++ {
		if i%3 == 1 {
			mustStat(t, tr, fmt.Sprintf("/big/x%04d", i))
		}
		if i%3 == 0 {
			mustStat(t, tr, fmt.Sprintf("/other/%04d", i))
		}
	}
	page, _, err := tr.List(mustPath("/big"), "", 0)
	must(t, err)
	if len(page) != n/3 || page[0].Name != "x0001" {
		t.Fatalf("%d entries, first %q", len(page), page[0].Name)
	}
}
