package namespace

import (
	"reflect"
	"slices"
	"testing"
)

func TestWriteLifecycle(t *testing.T) {
	tr := New(Limits{}, super, "g")
	fi, _, err := tr.Create(mustPath("/f"), CreateOpts{Perm: 0644, Replication: 3, BlockSize: 100, MtimeMs: 1})
	must(t, err)
	var prev *Block
	var want []Block
	for i := 0; i < 4; i++ {
		id, gs := tr.AllocBlock()
		b, off, err := tr.AddBlock(mustPath("/f"), fi.ID, prev, id, gs, int64(10+i))
		must(t, err)
		if b != (Block{ID: id, GenStamp: gs}) || off != uint64(100*i) {
			t.Fatalf("block %d: %v at %d", i, b, off)
		}
		if prev != nil {
			want[len(want)-1].Length = prev.Length
		}
		want = append(want, b)
		b.Length = 100
		prev = &b
		if got := blocksOf(t, tr, "/f"); !reflect.DeepEqual(got, want) {
			t.Fatalf("blocks %v, want %v", got, want)
		}
	}
	st := mustStat(t, tr, "/f")
	if st.Length != 300 || st.NumBlocks != 4 || st.MtimeMs != 13 || st.State != UnderConstruction {
		t.Fatalf("%+v", st)
	}
	// Abandon the last block and add another in its place.
	must(t, tr.AbandonBlock(mustPath("/f"), fi.ID, want[3]))
	if _, ok := tr.BlockInode(want[3].ID); ok {
		t.Fatal("abandoned block still indexed")
	}
	want = want[:3]
	id, gs := tr.AllocBlock()
	b, off, err := tr.AddBlock(mustPath("/f"), fi.ID, &Block{ID: want[2].ID, GenStamp: want[2].GenStamp, Length: 100}, id, gs, 20)
	must(t, err)
	if off != 300 {
		t.Fatalf("offset %d", off)
	}
	final := slices.Clone(append(want, b))
	for i := range final {
		final[i].Length = 100
	}
	final[3].Length = 42
	done, err := tr.Complete(mustPath("/f"), fi.ID, final, 30)
	must(t, err)
	if done.State != Complete || done.Length != 342 || done.MtimeMs != 30 || done.NumBlocks != 4 {
		t.Fatalf("%+v", done)
	}
	if got := blocksOf(t, tr, "/f"); !reflect.DeepEqual(got, final) {
		t.Fatalf("blocks %v, want %v", got, final)
	}
	// Completing again with the same list is idempotent.
	h := tr.Hash()
	again, err := tr.Complete(mustPath("/f"), fi.ID, final, 99)
	must(t, err)
	if again != done || tr.Hash() != h {
		t.Fatalf("second complete changed things: %+v", again)
	}
	if _, _, b := tr.Counts(); b != 4 {
		t.Fatalf("%d blocks", b)
	}
}

func TestAddBlockAdvancesCounters(t *testing.T) {
	tr := New(Limits{}, super, "g")
	fi, _, err := tr.Create(mustPath("/f"), CreateOpts{Perm: 0644, Replication: 1, BlockSize: 1})
	must(t, err)
	_, _, err = tr.AddBlock(mustPath("/f"), fi.ID, nil, 500, 7000, 1)
	must(t, err)
	if tr.NextBlockID() != 501 || tr.NextGenStamp() != 7001 {
		t.Fatalf("counters %d %d", tr.NextBlockID(), tr.NextGenStamp())
	}
	if id, gs := tr.AllocBlock(); id != 501 || gs != 7001 {
		t.Fatalf("alloc %d %d", id, gs)
	}
	if tr.AllocBlockID() != 502 || tr.AllocGenStamp() != 7002 {
		t.Fatal("alloc")
	}
}

func TestCompleteEmptyFile(t *testing.T) {
	tr := New(Limits{}, super, "g")
	fi, _, err := tr.Create(mustPath("/f"), CreateOpts{Perm: 0644, Replication: 1, BlockSize: 1})
	must(t, err)
	done, err := tr.Complete(mustPath("/f"), fi.ID, nil, 5)
	must(t, err)
	if done.State != Complete || done.Length != 0 {
		t.Fatalf("%+v", done)
	}
}

// TestCopyOnWrite checks that a slice returned by File never changes,
// whatever happens to the file afterwards.
func TestCopyOnWrite(t *testing.T) {
	tr := New(Limits{}, super, "g")
	fi, _, err := tr.Create(mustPath("/f"), CreateOpts{Perm: 0644, Replication: 1, BlockSize: 100})
	must(t, err)
	var held [][]Block
	var snaps [][]Block
	hold := func() {
		b := blocksOf(t, tr, "/f")
		held = append(held, b)
		snaps = append(snaps, slices.Clone(b))
	}
	var prev *Block
	for i := 0; i < 20; i++ {
		id, gs := tr.AllocBlock()
		b, _, err := tr.AddBlock(mustPath("/f"), fi.ID, prev, id, gs, 1)
		must(t, err)
		hold()
		if i%3 == 2 { // abandon and replace: the next append must not reuse the slot
			must(t, tr.AbandonBlock(mustPath("/f"), fi.ID, b))
			hold()
			id, gs = tr.AllocBlock()
			b, _, err = tr.AddBlock(mustPath("/f"), fi.ID, prev, id, gs, 1)
			must(t, err)
			hold()
		}
		b.Length = uint64(i + 1)
		prev = &b
	}
	all := blocksOf(t, tr, "/f")
	c := slices.Clone(all)
	c[len(c)-1].Length = 5
	_, err = tr.Complete(mustPath("/f"), fi.ID, c, 2)
	must(t, err)
	hold()
	fi2, _, err := tr.Create(mustPath("/f"), CreateOpts{Perm: 0644, Replication: 1, BlockSize: 100, Overwrite: true})
	must(t, err)
	id, gs := tr.AllocBlock()
	_, _, err = tr.AddBlock(mustPath("/f"), fi2.ID, nil, id, gs, 1)
	must(t, err)
	_, err = tr.Delete(mustPath("/f"), false, 3)
	must(t, err)
	for i := range held {
		if !reflect.DeepEqual(held[i], snaps[i]) {
			t.Fatalf("held slice %d changed: %v, was %v", i, held[i], snaps[i])
		}
	}
}

// TestFileInto: FileInto returns what File does; a one-block file's block
// comes back in the caller's array with no allocation, and a longer file's
// list is the tree's own slice, as File's is.
func TestFileInto(t *testing.T) {
	tr := fixture(t)
	one := mustCreate(t, tr, "/tmp/one", "")
	b := mustAdd(t, tr, "/tmp/one", one.ID, nil)
	b.Length = 7
	if _, err := tr.Complete(mustPath("/tmp/one"), one.ID, []Block{b.WithCRC(1)}, 3); err != nil {
		t.Fatal(err)
	}
	s := tr.As(nil, "test")
	for _, p := range []string{"/tmp/one", "/a/f", "/a/new"} { // one block, two, none
		t.Run(p, func(t *testing.T) {
			wantInfo, want, err := s.File(mustPath(p))
			must(t, err)
			var buf [1]Block
			info, got, err := s.FileInto(mustPath(p), &buf)
			must(t, err)
			if info != wantInfo || !slices.Equal(got, want) {
				t.Fatalf("FileInto = %+v %v, File = %+v %v", info, got, wantInfo, want)
			}
			switch len(want) {
			case 1:
				if &got[0] != &buf[0] {
					t.Fatal("a one-block file's block is not in the caller's array")
				}
			case 2:
				if &got[0] != &want[0] {
					t.Fatal("a longer file's list is not the tree's slice")
				}
			}
			if n := testing.AllocsPerRun(100, func() { _, _, _ = s.FileInto(mustPath(p), &buf) }); n != 0 {
				t.Fatalf("FileInto allocated %v times", n)
			}
		})
	}
}
