package namespace

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestChildrenMatchSlice drives a children list and a plain sorted slice
// with the same random inserts and removes, with views opening and closing
// between them, and checks after every step that the two hold the same
// names, that every chunk is 1 to chunkMax long, and that every frozen copy
// taken while a view was open still holds what it held then.
func TestChildrenMatchSlice(t *testing.T) {
	for _, tc := range []struct {
		name   string
		keys   int // names drawn from this many
		steps  int
		insert float64 // chance a step inserts rather than removes
	}{
		{"small and churning", 40, 2000, 0.5},
		{"growing past many chunks", 5000, 4000, 0.9},
		{"growing then shrinking", 600, 3000, 0.6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(tc.keys)))
			tr := &Tree{}
			var c children
			var want []string
			type frozen struct {
				c     children
				names []string
			}
			var views []frozen
			for step := range tc.steps {
				if step%97 == 0 { // a view opens: it keeps a clone, as touch does
					tr.epoch++
					tr.frozen = tr.epoch
					views = append(views, frozen{c: c, names: slices.Clone(want)})
					c = c.clone()
				}
				if step%211 == 0 && len(views) > 0 { // every view closes
					views, tr.frozen = nil, 0
				}
				name := fmt.Sprintf("k%05d", rng.IntN(tc.keys))
				k, at := c.find(name)
				i, found := slices.BinarySearch(want, name)
				if (k != nil) != found {
					t.Fatalf("step %d: find(%s) = %v, the slice says %v", step, name, k != nil, found)
				}
				switch {
				case !found && rng.Float64() < tc.insert:
					tr.insertKid(&c, at, &inode{name: name})
					want = slices.Insert(want, i, name)
				case found:
					tr.removeKid(&c, at)
					want = slices.Delete(want, i, i+1)
				}
				checkChildren(t, c, want)
				for _, v := range views {
					checkChildren(t, v.c, v.names)
				}
			}
		})
	}
}

func checkChildren(t *testing.T, c children, want []string) {
	t.Helper()
	var got []string
	for k := range c.all() {
		got = append(got, k.name)
	}
	if !slices.Equal(got, want) || c.len() != len(want) {
		t.Fatalf("children hold %d names (len %d), want %d", len(got), c.len(), len(want))
	}
	for _, ch := range c.chunks {
		if len(ch.k) < 1 || len(ch.k) > chunkMax {
			t.Fatalf("a chunk of %d children", len(ch.k))
		}
	}
	// from and next walk the same order from any position.
	if len(want) > 0 {
		mid := want[len(want)/2]
		k, at := c.find(mid)
		if k == nil {
			t.Fatalf("find(%s) missed", mid)
		}
		var rest []string
		for k := range c.from(c.next(at)) {
			rest = append(rest, k.name)
		}
		if !slices.Equal(rest, want[len(want)/2+1:]) {
			t.Fatalf("from(next(%s)) gave %d names, want %d", mid, len(rest), len(want)-len(want)/2-1)
		}
	}
}

// TestViewFrozenBigDirectory checks the copy-on-write of chunks: in a
// directory of many chunks, inserts and removes at its start, middle and
// end (splitting chunks, emptying them) while a view is open, encoded
// beside them, leave the view's image as it was, and the live tree right.
func TestViewFrozenBigDirectory(t *testing.T) {
	for _, tc := range []struct {
		name string
		do   func(t *testing.T, tr *Tree)
	}{
		{"inserts everywhere", func(t *testing.T, tr *Tree) {
			for _, n := range []string{"a", "f00150x", "f00999x", "z", "f00000x", "f00500x"} {
				for i := range 3 * chunkMax / 2 { // enough to split the chunk it lands in
					must(t, tr.Mkdirs(mustPath(fmt.Sprintf("/big/%s%03d", n, i)), MkdirsOpts{Perm: 0755, MtimeMs: 9}))
				}
			}
		}},
		{"removes emptying chunks", func(t *testing.T, tr *Tree) {
			for i := 0; i < 1000; i += 1 + i%3 {
				if _, err := tr.Delete(mustPath(fmt.Sprintf("/big/f%05d", i)), true, 9); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"rename within and out", func(t *testing.T, tr *Tree) {
			for i := range 300 {
				must(t, tr.Rename(mustPath(fmt.Sprintf("/big/f%05d", i)), mustPath(fmt.Sprintf("/big/r%05d", i)), 9))
				must(t, tr.Rename(mustPath(fmt.Sprintf("/big/f%05d", 999-i)), mustPath(fmt.Sprintf("/a/f%05d", i)), 9))
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := fixture(t)
			for i := range 1000 {
				must(t, tr.Mkdirs(mustPath(fmt.Sprintf("/big/f%05d", i)), MkdirsOpts{Perm: 0755, Parents: true, MtimeMs: 5}))
			}
			big, err := tr.lookup("test", mustPath("/big"))
			must(t, err)
			if n := len(big.kids().chunks); n < 1000/chunkMax {
				t.Fatalf("/big has %d chunks", n)
			}
			img, want := changedBeside(t, tr, func() { tc.do(t, tr) })
			if !bytes.Equal(img, want) {
				t.Fatal("view image differs from the tree's when the view was made")
			}
			checkInvariants(t, tr)
			back, err := ReadImage(bytes.NewReader(image(t, tr)))
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, back)
			if tr.Hash() != back.Hash() {
				t.Fatal("the live tree's image reads back to another tree")
			}
		})
	}
}

// TestChildrenThinnedMerge: a directory filled in name order and then
// thinned by deletes spread over it, front to back or back to front (so
// each side of a chunk takes in the other), merges its small chunks (16
// full chunks, 7 of every 8 children deleted: 256 left in at most 8
// chunks), while a view that froze it first keeps all of them.
func TestChildrenThinnedMerge(t *testing.T) {
	for _, backward := range []bool{false, true} {
		t.Run(fmt.Sprint("backward=", backward), func(t *testing.T) {
			tr := &Tree{}
			var c children
			var want []string
			for i := range 16 * chunkMax {
				name := fmt.Sprintf("k%05d", i)
				_, at := c.find(name)
				tr.insertKid(&c, at, &inode{name: name})
				want = append(want, name)
			}
			if len(c.chunks) != 16 {
				t.Fatalf("%d chunks after filling in order, want 16 full ones", len(c.chunks))
			}
			tr.epoch++
			tr.frozen = tr.epoch
			frozen, frozenNames := c, slices.Clone(want)
			c = c.clone()
			var kept, gone []string
			for i, name := range want {
				if i%8 == 0 {
					kept = append(kept, name)
				} else {
					gone = append(gone, name)
				}
			}
			if backward {
				slices.Reverse(gone)
			}
			for _, name := range gone {
				k, at := c.find(name)
				if k == nil {
					t.Fatalf("find(%s) missed", name)
				}
				tr.removeKid(&c, at)
			}
			checkChildren(t, c, kept)
			checkChildren(t, frozen, frozenNames)
			if len(c.chunks) > 8 {
				t.Fatalf("%d chunks hold %d children: small chunks were not merged", len(c.chunks), c.len())
			}
		})
	}
}
