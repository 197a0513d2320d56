package blocks

import (
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestIDSetMatchesMap runs random adds and deletes against a map.
func TestIDSetMatchesMap(t *testing.T) {
	for _, c := range []struct {
		name  string
		ids   uint64 // ids drawn from 0..ids-1
		steps int
	}{
		{"dense with zero", 50, 2000},
		{"sparse", 1 << 40, 5000},
		{"grow and shrink", 4000, 40000},
		// Over chunkArrayMax ids in one chunk: arrays become bitmaps and,
		// as the second half deletes, arrays again.
		{"bitmap grow and shrink", 12000, 120000},
		{"several chunks", 4 << 16, 200000},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			var s idSet
			m := map[uint64]bool{}
			for i := range c.steps {
				id := rng.Uint64N(c.ids)
				// The first half mostly adds, the second mostly deletes.
				if add := rng.IntN(10) < 7; add == (i < c.steps/2) {
					s.Add(id)
					m[id] = true
				} else {
					s.Delete(id)
					delete(m, id)
				}
				if s.Has(id) != m[id] || s.Len() != len(m) {
					t.Fatalf("step %d id %d: Has %v want %v, Len %d want %d", i, id, s.Has(id), m[id], s.Len(), len(m))
				}
			}
			got := s.Append(nil)
			slices.Sort(got)
			var want []uint64
			for id := range m {
				want = append(want, id)
			}
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("Append: %d ids, want %d", len(got), len(want))
			}
			for id := range m {
				if !s.Has(id) {
					t.Fatalf("lost %d", id)
				}
			}
			checkChunks(t, &s)
			for id := range m {
				s.Delete(id)
			}
			if s.Len() != 0 || len(s.chunks) != 0 {
				t.Fatalf("emptied: Len %d, %d chunks", s.Len(), len(s.chunks))
			}
		})
	}
}

// checkChunks checks every chunk's count and form: arrays sorted and at
// most chunkArrayMax long, bitmaps holding at least half that.
func checkChunks(t *testing.T, s *idSet) {
	t.Helper()
	total := 0
	for hi, c := range s.chunks {
		n := len(c.arr)
		if c.bits != nil {
			n = 0
			for _, w := range c.bits {
				n += bits.OnesCount64(w)
			}
			if c.arr != nil || n < chunkArrayMax/2 {
				t.Fatalf("chunk %d: bitmap of %d ids (array %v)", hi, n, c.arr != nil)
			}
		} else if n > chunkArrayMax || !slices.IsSorted(c.arr) {
			t.Fatalf("chunk %d: array of %d ids, sorted %v", hi, n, slices.IsSorted(c.arr))
		}
		if n != c.n || n == 0 {
			t.Fatalf("chunk %d: %d ids, counted %d", hi, n, c.n)
		}
		total += n
	}
	if total != s.Len() {
		t.Fatalf("chunks hold %d ids, Len %d", total, s.Len())
	}
}

// TestIDSetChunkForms walks one chunk through array, bitmap and back.
func TestIDSetChunkForms(t *testing.T) {
	var s idSet
	base := uint64(7) << 16
	for _, step := range []struct {
		name   string
		add    bool
		from   int // low bits [from, to), every other one
		to     int
		bitmap bool
	}{
		{"fill array", true, 0, 2 * chunkArrayMax, false},
		{"one more makes a bitmap", true, 2 * chunkArrayMax, 2*chunkArrayMax + 2, true},
		{"half the bitmap stays one", false, 0, chunkArrayMax, true},
		{"below half is an array", false, chunkArrayMax, chunkArrayMax + 4, false},
		{"empty", false, 0, 1 << 16, false},
	} {
		for lo := step.from; lo < step.to; lo += 2 {
			if step.add {
				s.Add(base + uint64(lo))
			} else {
				s.Delete(base + uint64(lo))
			}
		}
		c := s.chunks[7]
		if step.name == "empty" {
			if c != nil || s.Len() != 0 {
				t.Fatalf("%s: chunk left with %d ids", step.name, s.Len())
			}
			continue
		}
		if c == nil || (c.bits != nil) != step.bitmap {
			t.Fatalf("%s: bitmap %v, want %v", step.name, c != nil && c.bits != nil, step.bitmap)
		}
		checkChunks(t, &s)
	}
}

// TestBlockTableMatchesMap runs random puts and deletes against a map.
func TestBlockTableMatchesMap(t *testing.T) {
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
			rng := rand.New(rand.NewPCG(5, 6))
			var tab blockTable
			m := map[uint64]*blockInfo{}
			for i := range c.steps {
				id := rng.Uint64N(c.ids) + 1
				if add := rng.IntN(10) < 7; add == (i < c.steps/2) {
					if m[id] == nil {
						b := &blockInfo{id: id}
						tab.put(b)
						m[id] = b
					}
				} else {
					tab.del(id)
					delete(m, id)
				}
				if tab.get(id) != m[id] || tab.len() != len(m) {
					t.Fatalf("step %d id %d: get %p want %p, len %d want %d", i, id, tab.get(id), m[id], tab.len(), len(m))
				}
			}
			ids := tab.ids(nil)
			if len(ids) != len(m) {
				t.Fatalf("ids: %d, want %d", len(ids), len(m))
			}
			for _, id := range ids {
				if tab.get(id) != m[id] {
					t.Fatalf("id %d: wrong block", id)
				}
			}
		})
	}
}
