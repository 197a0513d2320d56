package namespace

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/blockfs/blockfs/errs"
)

// viewMutations change the fixture tree in every way the tree can change.
// Each must leave an open view's image exactly as it was when the view was
// made, whichever part of the image the view has already encoded.
var viewMutations = []struct {
	name string
	do   func(t testing.TB, tr *Tree)
}{
	{"mkdirs under an encoded dir", func(t testing.TB, tr *Tree) {
		must(t, tr.Mkdirs(mustPath("/a/b/c/d/e"), MkdirsOpts{Perm: 0755, Parents: true, MtimeMs: 9}))
	}},
	{"mkdirs at the root", func(t testing.TB, tr *Tree) {
		must(t, tr.Mkdirs(mustPath("/0first"), MkdirsOpts{Perm: 0755, MtimeMs: 9}))
		must(t, tr.Mkdirs(mustPath("/zlast"), MkdirsOpts{Perm: 0755, MtimeMs: 9}))
	}},
	{"create and overwrite", func(t testing.TB, tr *Tree) {
		mustCreate(t, tr, "/a/b/new.txt", "alice")
		if _, _, err := tr.Create(mustPath("/a/f"), CreateOpts{Perm: 0600, Replication: 2, BlockSize: bs, Overwrite: true, MtimeMs: 9}); err != nil {
			t.Fatal(err)
		}
	}},
	{"add block, complete, abandon", func(t testing.TB, tr *Tree) {
		uc := mustStat(t, tr, "/a/uc")
		b1 := blocksOf(t, tr, "/a/uc")[0]
		b1.Length = 7
		b2 := mustAdd(t, tr, "/a/uc", uc.ID, &b1)
		must(t, tr.AbandonBlock(mustPath("/a/uc"), uc.ID, b2))
		if _, err := tr.Complete(mustPath("/a/uc"), uc.ID, []Block{b1.WithCRC(1)}, 9); err != nil {
			t.Fatal(err)
		}
		n := mustStat(t, tr, "/a/new")
		mustAdd(t, tr, "/a/new", n.ID, nil)
	}},
	{"blocks move between the inode and a slice", func(t testing.TB, tr *Tree) {
		uc := mustStat(t, tr, "/a/uc")
		b1 := blocksOf(t, tr, "/a/uc")[0]
		b1.Length = 4
		b2 := mustAdd(t, tr, "/a/uc", uc.ID, &b1) // out of the inode
		if _, _, err := tr.CommitRecovery("test", uc.ID, Recovery{Block: b2, RecoveryID: tr.AllocGenStamp(), Delete: true}, 9); err != nil {
			t.Fatal(err) // back into it
		}
		if _, err := tr.Append(mustPath("/a/uc"), 9); err != nil {
			t.Fatal(err)
		}
		f := mustStat(t, tr, "/a/f")
		if _, err := tr.Append(mustPath("/a/f"), 9); err != nil {
			t.Fatal(err)
		}
		b3 := mustAdd(t, tr, "/a/f", f.ID, &blocksOf(t, tr, "/a/f")[1])
		must(t, tr.AbandonBlock(mustPath("/a/f"), f.ID, b3))
	}},
	{"hflush length and pipeline stamp", func(t testing.TB, tr *Tree) {
		uc := mustStat(t, tr, "/a/uc")
		b := blocksOf(t, tr, "/a/uc")[0]
		b.Length = 5
		sys := tr.As(nil, "test")
		if _, err := sys.Fsync(mustPath("/a/uc"), uc.ID, b, 9); err != nil {
			t.Fatal(err)
		}
		gs, err := sys.AllocPipelineStamp(mustPath("/a/uc"), uc.ID, b)
		if err != nil {
			t.Fatal(err)
		}
		nb := b
		nb.GenStamp = gs
		if _, err := sys.UpdatePipeline(mustPath("/a/uc"), uc.ID, b, nb); err != nil {
			t.Fatal(err)
		}
	}},
	{"recovery commit", func(t testing.TB, tr *Tree) {
		uc := mustStat(t, tr, "/a/uc")
		b := blocksOf(t, tr, "/a/uc")[0]
		if _, _, err := tr.CommitRecovery("test", uc.ID, Recovery{Block: b, RecoveryID: tr.AllocGenStamp(), Length: 5}, 9); err != nil {
			t.Fatal(err)
		}
	}},
	{"recovery of an empty file", func(t testing.TB, tr *Tree) {
		n := mustStat(t, tr, "/a/new")
		if _, _, err := tr.CloseEmpty("test", n.ID, 9); err != nil {
			t.Fatal(err)
		}
	}},
	{"append reopening the last block", func(t testing.TB, tr *Tree) {
		if _, last, err := tr.As(nil, "test").AppendLast(mustPath("/a/f"), tr.NextGenStamp(), 9); err != nil || last == nil {
			t.Fatalf("reopen: %v %v", last, err)
		}
	}},
	{"append", func(t testing.TB, tr *Tree) {
		if _, err := tr.Append(mustPath("/a/f"), 9); err != nil {
			t.Fatal(err)
		}
	}},
	{"delete file and subtree", func(t testing.TB, tr *Tree) {
		if _, err := tr.Delete(mustPath("/tmp/bob.txt"), false, 9); err != nil {
			t.Fatal(err)
		}
		if _, err := tr.Delete(mustPath("/a"), true, 9); err != nil {
			t.Fatal(err)
		}
	}},
	{"rename within and across directories", func(t testing.TB, tr *Tree) {
		must(t, tr.Rename(mustPath("/a/f"), mustPath("/a/g"), 9))
		must(t, tr.Rename(mustPath("/a/b"), mustPath("/tmp/b2"), 9))
		must(t, tr.Rename(mustPath("/x"), mustPath("/a/0x"), 9))
	}},
	{"attributes", func(t testing.TB, tr *Tree) {
		must(t, tr.SetPermission(mustPath("/a/b/c"), 0711, 9))
		must(t, tr.SetOwner(mustPath("/a/f"), "carol", "wheel"))
		must(t, tr.SetReplication(mustPath("/a/f"), 5))
		must(t, tr.SetPermission(mustPath("/"), 0700, 9))
	}},
	{"new inode changed again", func(t testing.TB, tr *Tree) {
		must(t, tr.Mkdirs(mustPath("/n/m"), MkdirsOpts{Perm: 0755, Parents: true, MtimeMs: 9}))
		must(t, tr.SetPermission(mustPath("/n"), 0700, 9))
		must(t, tr.Rename(mustPath("/n"), mustPath("/a/b/n"), 9))
	}},
}

// TestViewFrozen makes a view, encodes part of its image, applies each
// mutation, encodes the rest, and checks the image is byte for byte the
// one the tree had when the view was made; then checks that the view's
// image reads back and that the live tree took the change.
func TestViewFrozen(t *testing.T) {
	for _, m := range viewMutations {
		for _, after := range []int{0, 1, 3, 6, 100} { // records encoded before the change
			t.Run(fmt.Sprintf("%s/after %d", m.name, after), func(t *testing.T) {
				tr := fixture(t)
				want := image(t, tr)
				v := tr.View()
				var got []byte
				done := false
				for i := 0; i < after && !done; i++ {
					got, done = v.Next(got, 1) // one record per call
				}
				m.do(t, tr)
				changed := image(t, tr)
				if bytes.Equal(changed, want) {
					t.Fatal("the mutation changed nothing")
				}
				for !done {
					got, done = v.Next(got, 1)
				}
				v.Close()
				if !bytes.Equal(got, want) {
					t.Fatalf("view image differs from the tree's image when the view was made (%d vs %d bytes)", len(got), len(want))
				}
				if _, err := ReadImage(bytes.NewReader(got)); err != nil {
					t.Fatal(err)
				}
				if len(tr.views) != 0 {
					t.Fatalf("%d views open after Close", len(tr.views))
				}
				if !bytes.Equal(image(t, tr), changed) {
					t.Fatal("closing the view changed the tree")
				}
			})
		}
	}
}

// TestViewFrozenConcurrent runs each mutation while another goroutine
// encodes the view with no lock held, as the namenode's Persist does: the
// image must still be the one of the view's moment, and with -race no
// field the encoder reads may be written beside it.
func TestViewFrozenConcurrent(t *testing.T) {
	for _, m := range viewMutations {
		t.Run(m.name, func(t *testing.T) {
			tr := fixture(t)
			img, want := changedBeside(t, tr, func() { m.do(t, tr) })
			if !bytes.Equal(img, want) {
				t.Fatalf("view image differs from the tree's image when the view was made (%d vs %d bytes)", len(img), len(want))
			}
		})
	}
}

// TestViewTwoOpen checks two overlapping views each see their own moment.
func TestViewTwoOpen(t *testing.T) {
	tr := fixture(t)
	img1 := image(t, tr)
	v1 := tr.View()
	must(t, tr.Mkdirs(mustPath("/a/b/c/x"), MkdirsOpts{Perm: 0755, MtimeMs: 9}))
	img2 := image(t, tr)
	v2 := tr.View()
	must(t, tr.Mkdirs(mustPath("/a/b/c/y"), MkdirsOpts{Perm: 0755, MtimeMs: 9}))
	must(t, tr.Rename(mustPath("/a/b/c"), mustPath("/c"), 10))
	for _, c := range []struct {
		v    *View
		want []byte
	}{{v2, img2}, {v1, img1}} {
		var buf bytes.Buffer
		must(t, c.v.Encode(&buf))
		if !bytes.Equal(buf.Bytes(), c.want) {
			t.Fatal("view image differs from its moment's")
		}
	}
	v1.Close()
	v2.Close()
	v1.Close()
}

// TestViewConcurrentWriter encodes a view, holding no lock, while a writer
// changes the tree under the write lock, as the namenode's snapshot does;
// with -race this proves the encoder reads nothing the writer writes.
func TestViewConcurrentWriter(t *testing.T) {
	tr := fixture(t)
	for i := range 300 {
		must(t, tr.Mkdirs(mustPath(fmt.Sprintf("/big/d%03d/e", i)), MkdirsOpts{Perm: 0755, Parents: true, MtimeMs: 5}))
	}
	want := image(t, tr)
	var mu sync.RWMutex
	mu.Lock()
	v := tr.View()
	mu.Unlock()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 300 {
			mu.Lock()
			if i%3 == 0 && i < 150 {
				_, _ = tr.Delete(mustPath(fmt.Sprintf("/big/d%03d", 299-i)), true, 9)
			}
			err := tr.Mkdirs(mustPath(fmt.Sprintf("/big/d%03d/f", i)), MkdirsOpts{Perm: 0755, Parents: true, MtimeMs: 9})
			if err == nil && i < 150 {
				err = tr.SetPermission(mustPath(fmt.Sprintf("/big/d%03d/e", i)), 0700, 9)
			}
			mu.Unlock()
			if err != nil {
				t.Error(err)
				return
			}
		}
	}()
	var buf bytes.Buffer
	must(t, v.Encode(&buf)) // no lock: the view orders itself against the writer
	wg.Wait()
	mu.Lock()
	v.Close()
	mu.Unlock()
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatal("image encoded beside a writer differs from the tree's when the view was made")
	}
}

// TestViewWriteError checks that Encode reports a failing writer as IO.
func TestViewWriteError(t *testing.T) {
	tr := fixture(t)
	v := tr.View()
	defer v.Close()
	err := v.Encode(failWriter{})
	wantErr(t, err, errs.IO, "disk full")
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, fmt.Errorf("disk full") }

// TestInodeSize guards the inode's size class: at a million files each
// byte of it is a megabyte of namenode heap.
func TestInodeSize(t *testing.T) {
	if s := unsafe.Sizeof(inode{}); s > 96 {
		t.Fatalf("inode is %d bytes, want at most 96", s)
	}
}

// TestInodeTableMatchesMap runs random puts and deletes of dense and
// sparse ids against a map.
func TestInodeTableMatchesMap(t *testing.T) {
	for _, c := range []struct {
		name  string
		ids   uint64
		steps int
	}{
		{"dense", 300, 5000},
		{"sparse", 1 << 40, 5000},
		{"strided", 1 << 20, 5000}, // ids a table size apart collide
		{"grow and shrink", 5000, 50000},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 4))
			var tab inodeTable
			m := map[ID]*inode{}
			for i := range c.steps {
				id := ID(rng.Uint64N(c.ids) + 1)
				if c.name == "strided" {
					id = ID(1 + rng.Uint64N(64)*1024)
				}
				if add := rng.IntN(10) < 7; add == (i < c.steps/2) {
					n := &inode{id: id}
					if tab.put(n) != (m[id] != nil) {
						t.Fatalf("step %d: put %d reported a replacement wrongly", i, id)
					}
					m[id] = n
				} else {
					tab.del(id)
					delete(m, id)
				}
				if tab.get(id) != m[id] || tab.len() != len(m) {
					t.Fatalf("step %d id %d: get %p want %p, len %d want %d", i, id, tab.get(id), m[id], tab.len(), len(m))
				}
			}
			for id, n := range m {
				if tab.get(id) != n {
					t.Fatalf("lost %d", id)
				}
			}
		})
	}
}

// TestBlockIndexMatchesMap runs random puts and deletes against a map.
func TestBlockIndexMatchesMap(t *testing.T) {
	for _, c := range []struct {
		name  string
		ids   uint64
		steps int
	}{
		{"dense", 300, 5000},
		{"sparse", 1 << 40, 5000},
		{"grow and shrink", 5000, 50000},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, 8))
			var x blockIndex
			m := map[uint64]ID{}
			for i := range c.steps {
				b := rng.Uint64N(c.ids) + 1
				if add := rng.IntN(10) < 7; add == (i < c.steps/2) {
					owner := ID(rng.Uint64N(100) + 1)
					_, had := m[b]
					if x.put(b, owner) != had {
						t.Fatalf("step %d: put %d reported a replacement wrongly", i, b)
					}
					m[b] = owner
				} else {
					x.del(b)
					delete(m, b)
				}
				got, ok := x.get(b)
				want, wok := m[b]
				if got != want || ok != wok || x.len() != len(m) {
					t.Fatalf("step %d block %d: get %d,%v want %d,%v; len %d want %d", i, b, got, ok, want, wok, x.len(), len(m))
				}
			}
			for b, owner := range m {
				if got, ok := x.get(b); !ok || got != owner {
					t.Fatalf("lost block %d", b)
				}
			}
		})
	}
}

// changedBeside opens a view of tr, runs change while another goroutine
// encodes the view in the smallest slices (so the encode and the change
// interleave), and returns the view's image and tr's image when the view
// was made: equal if the view held.
func changedBeside(t *testing.T, tr *Tree, change func()) (img, want []byte) {
	t.Helper()
	want = image(t, tr)
	v := tr.View()
	got := make(chan []byte)
	go func() {
		var img []byte
		for done := false; !done; {
			img, done = v.Next(img, 1)
		}
		got <- img
	}()
	change()
	img = <-got
	v.Close()
	return img, want
}

// TestViewTouchWaitsOnlyForItsInode: a writer waits for the encoder only
// while the encoder is copying the very inode the writer is about to
// change for the first time under the view, and then leaves the pre-image
// for the encoder. The test plays the encoder: it announces an inode (cur)
// as the encoder does before a copy, and holds it there as an encoder
// descheduled mid-copy would.
func TestViewTouchWaitsOnlyForItsInode(t *testing.T) {
	tr := fixture(t)
	want := image(t, tr)
	v := tr.View()
	defer v.Close()
	dir, err := tr.lookup("test", mustPath("/a/b"))
	if err != nil {
		t.Fatal(err)
	}
	create := func(p string) chan error {
		done := make(chan error, 1)
		go func() {
			_, _, err := tr.Create(mustPath(p), CreateOpts{Perm: 0644, Replication: 3, BlockSize: bs, Owner: "alice", MtimeMs: 2})
			done <- err
		}()
		return done
	}
	wait := func(done chan error, what string) {
		t.Helper()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(time.Minute):
			v.cur.Store(nil)
			<-done
			t.Fatalf("%s waited for the encoder", what)
		}
	}

	// The encoder is copying another inode: the first create in /a/b
	// goes straight on.
	other, err := tr.lookup("test", mustPath("/a/f"))
	if err != nil {
		t.Fatal(err)
	}
	v.cur.Store(other)
	wait(create("/a/b/one"), "a create beside the copy of another inode")
	if v.pre.get(dir) == nil {
		t.Fatal("the first change of /a/b kept no pre-image")
	}
	// Kept already: a create in /a/b goes on even while the encoder
	// copies /a/b itself (it copies the pre-image).
	v.cur.Store(dir)
	wait(create("/a/b/two"), "a create in a kept directory")
	v.cur.Store(nil)

	// A directory not yet kept, announced by the encoder: the create
	// waits until the copy ends.
	c, err := tr.lookup("test", mustPath("/a/b/c"))
	if err != nil {
		t.Fatal(err)
	}
	v.cur.Store(c)
	done := create("/a/b/c/three")
	time.Sleep(20 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("a create changed /a/b/c while the encoder was copying it live (err %v)", err)
	default:
	}
	v.cur.Store(nil)
	wait(done, "a create after the copy ended")

	var buf bytes.Buffer
	must(t, v.Encode(&buf))
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatal("the view's image changed")
	}
}
