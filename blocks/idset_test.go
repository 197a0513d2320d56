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
