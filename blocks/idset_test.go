package blocks

import (
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
		})
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
						b := newBlockInfo(id, 0)
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
