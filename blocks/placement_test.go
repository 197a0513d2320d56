package blocks

import (
	"slices"
	"testing"
	"time"

	"github.com/blockfs/blockfs/errs"
)

func TestChooseTargets(t *testing.T) {
	tests := []struct {
		name    string
		n       int
		exclude []string
		full    []string // datanodes without room for a block
		dead    []string
		want    int      // number returned
		never   []string // must not be chosen
		kind    errs.Kind
	}{
		{name: "three of five", n: 3, want: 3},
		{name: "all five", n: 5, want: 5},
		{name: "more than there are", n: 9, want: 5},
		{name: "excludes", n: 3, exclude: []string{"dn1", "dn2"}, want: 3, never: []string{"dn1", "dn2"}},
		{name: "excludes leave fewer", n: 3, exclude: []string{"dn1", "dn2", "dn3"}, want: 2, never: []string{"dn1", "dn2", "dn3"}},
		{name: "skips full", n: 5, full: []string{"dn4", "dn5"}, want: 3, never: []string{"dn4", "dn5"}},
		{name: "skips dead", n: 5, dead: []string{"dn1"}, want: 4, never: []string{"dn1"}},
		{name: "none available", n: 1, full: []string{"dn1", "dn2", "dn3", "dn4", "dn5"}, kind: errs.Unavailable},
		{name: "none available, some excluded", n: 1, full: []string{"dn1", "dn2", "dn3"}, dead: []string{"dn4", "dn5"}, exclude: []string{"dn4"}, kind: errs.Unavailable},
		{name: "every one excluded", n: 3, exclude: []string{"dn1", "dn2", "dn3", "dn4", "dn5"}, kind: errs.Precondition},
		{name: "the rest full or excluded", n: 1, full: []string{"dn1", "dn2", "dn3"}, exclude: []string{"dn4", "dn5"}, kind: errs.Precondition},
		{name: "bad n", n: 0, kind: errs.Invalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, clk := newTestManager(t, 5)
			if len(tc.dead) > 0 {
				clk.Advance(time.Hour)
				for i := 1; i <= 5; i++ {
					if !slices.Contains(tc.dead, dn(i)) {
						heartbeatAll(m, dn(i))
					}
				}
				m.CheckLiveness()
			}
			for _, id := range tc.full {
				m.Heartbeat(id, 100*gib, 100*gib-blkSize+1, 0)
			}
			for trial := 0; trial < 50; trial++ {
				got, err := m.ChooseTargets(tc.n, blkSize, tc.exclude, "")
				if tc.kind != errs.Other {
					if !errs.Is(err, tc.kind) {
						t.Fatalf("err = %v, want kind %v", err, tc.kind)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != tc.want {
					t.Fatalf("got %d targets %v, want %d", len(got), ids(got), tc.want)
				}
				seen := map[string]bool{}
				for _, d := range got {
					if seen[d.ID] {
						t.Fatalf("duplicate target %s in %v", d.ID, ids(got))
					}
					seen[d.ID] = true
					if slices.Contains(tc.never, d.ID) {
						t.Fatalf("chose %s, which must not be chosen", d.ID)
					}
					if d.State != Live || d.Addr == "" {
						t.Fatalf("bad snapshot %+v", d)
					}
				}
			}
		})
	}
}

// Many consecutive calls between heartbeats (so usage does not change)
// spread evenly over equal datanodes, in every pipeline position.
func TestChooseTargetsSpreads(t *testing.T) {
	const nodes, calls = 5, 3000
	for _, repl := range []int{1, 3} {
		m, _ := newTestManager(t, nodes)
		picks := map[string]int{}
		first := map[string]int{}
		for i := 0; i < calls; i++ {
			got, err := m.ChooseTargets(repl, blkSize, nil, "")
			if err != nil {
				t.Fatal(err)
			}
			first[got[0].ID]++
			for _, d := range got {
				picks[d.ID]++
			}
		}
		mean := float64(calls*repl) / nodes
		firstMean := float64(calls) / nodes
		for i := 1; i <= nodes; i++ {
			p, f := float64(picks[dn(i)]), float64(first[dn(i)])
			if p < mean/2 || p > mean*2 || f < firstMean/2 || f > firstMean*2 {
				t.Errorf("repl %d: %s picked %v times (first %v), mean %v (first %v)", repl, dn(i), p, f, mean, firstMean)
			}
		}
		t.Logf("repl %d picks %v first %v", repl, picks, first)
	}
}

// Emptier datanodes are preferred, in proportion to free space.
func TestChooseTargetsPrefersFreeSpace(t *testing.T) {
	m, _ := newTestManager(t, 2)
	m.Heartbeat(dn(1), 100*gib, 90*gib, 0) // 10 GiB free
	m.Heartbeat(dn(2), 100*gib, 0, 0)      // 100 GiB free
	picks := map[string]int{}
	for i := 0; i < 2000; i++ {
		got, _ := m.ChooseTargets(1, blkSize, nil, "")
		picks[got[0].ID]++
	}
	if picks[dn(2)] < 5*picks[dn(1)] {
		t.Fatalf("picks %v: emptier dn2 should win about 10:1", picks)
	}
}
