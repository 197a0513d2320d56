package balancer

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

const mb = 1 << 20

func node(id, rack string, capacity, used uint64) Node {
	return Node{ID: id, Rack: rack, Capacity: capacity, Used: used}
}

// TestClassify: the threshold math, as HDFS's: percentage points around
// the cluster's used/capacity, over above mean+t, under below mean-t.
func TestClassify(t *testing.T) {
	for _, c := range []struct {
		name        string
		nodes       []Node
		threshold   float64
		over, under []string
		mean        float64
		toMove      uint64
	}{
		{"even", []Node{node("a", "", 100, 50), node("b", "", 100, 50)}, 10, nil, nil, 50, 0},
		{"within", []Node{node("a", "", 100, 59), node("b", "", 100, 41)}, 10, nil, nil, 50, 0},
		{"just over", []Node{node("a", "", 100, 61), node("b", "", 100, 39)}, 10, []string{"a"}, []string{"b"}, 50, 1},
		{"one empty of five", []Node{node("e", "", 1000, 0), node("f1", "", 1000, 800), node("f2", "", 1000, 800),
			node("f3", "", 1000, 800), node("f4", "", 1000, 800)}, 10, []string{"f1", "f2", "f3", "f4"}, []string{"e"}, 64, 540},
		{"tight threshold", []Node{node("a", "", 1000, 505), node("b", "", 1000, 495)}, 0.1, []string{"a"}, []string{"b"}, 50, 4},
		// Utilisation is used/capacity: a big half-full node is not over.
		{"mixed sizes", []Node{node("big", "", 4000, 2000), node("small", "", 1000, 500)}, 5, nil, nil, 50, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := Classify(c.nodes, c.threshold)
			if fmt.Sprint(p.Over) != fmt.Sprint(c.over) || fmt.Sprint(p.Under) != fmt.Sprint(c.under) {
				t.Fatalf("over %v under %v, want %v %v", p.Over, p.Under, c.over, c.under)
			}
			if math.Abs(p.Spread.Mean-c.mean) > 1e-9 {
				t.Fatalf("mean %v, want %v", p.Spread.Mean, c.mean)
			}
			if p.BytesToMove != c.toMove {
				t.Fatalf("bytes to move %d, want %d", p.BytesToMove, c.toMove)
			}
			if p.Balanced() != (len(c.over) == 0 && len(c.under) == 0) {
				t.Fatal("Balanced disagrees with the classes")
			}
		})
	}
}

// cluster builds nodes in racks and nblocks blocks of replication 3 placed
// by HDFS's policy (first at random, second off-rack, third beside it) on
// every node but the empty ones.
func cluster(rng *rand.Rand, racks, perRack, empty, nblocks int) ([]Node, map[string][]Block, map[string]string) {
	var nodes []Node
	rackOf := map[string]string{}
	for r := range racks {
		for i := range perRack {
			id := fmt.Sprintf("dn%d-%d", r, i)
			nodes = append(nodes, Node{ID: id, Rack: fmt.Sprintf("/r%d", r), Capacity: 1000 * mb})
			rackOf[id] = fmt.Sprintf("/r%d", r)
		}
	}
	full := nodes[:max(3, len(nodes)-empty)]
	blocks := map[string][]Block{}
	used := map[string]uint64{}
	for id := range uint64(nblocks) {
		first := full[rng.IntN(len(full))]
		second := first
		for second.ID == first.ID || racks > 1 && second.Rack == first.Rack {
			second = full[rng.IntN(len(full))]
		}
		third := first
		for try := 0; third.ID == first.ID || third.ID == second.ID || try < 20 && third.Rack != second.Rack; try++ {
			third = full[rng.IntN(len(full))]
		}
		b := Block{ID: id, Length: 4 * mb, Replication: 3, Holders: []string{first.ID, second.ID, third.ID}}
		for _, h := range b.Holders {
			blocks[h] = append(blocks[h], b)
			used[h] += b.Length
		}
	}
	for i := range nodes {
		nodes[i].Used = used[nodes[i].ID]
	}
	return nodes, blocks, rackOf
}

// racksOK checks the rack policy on holders.
func racksOK(holders []string, rackOf map[string]string, nracks int) bool {
	count := map[string]int{}
	for _, h := range holders {
		count[rackOf[h]]++
	}
	for _, k := range count {
		if k > (len(holders)-1)/nracks+2 {
			return false
		}
	}
	return nracks < 2 || len(holders) < 2 || len(count) >= 2
}

// TestPlanKeepsRackPolicy: over many random clusters, no planned move
// puts a block in one rack or over the per-rack bound, no target already
// holds its block, no block moves twice, every source gives and every
// target takes within its budget, and moves go from fuller to emptier.
func TestPlanKeepsRackPolicy(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		racks, perRack := 1+rng.IntN(4), 3+rng.IntN(3)
		empty := 1 + rng.IntN(2)
		nodes, blocks, rackOf := cluster(rng, racks, perRack, empty, 300)
		maxPer := uint64(40 * mb)
		p := PlanMoves(nodes, blocks, Limits{Threshold: 5, MaxBytesPerNode: maxPer})
		if len(p.Moves) == 0 && !p.Balanced() {
			t.Fatalf("trial %d: unbalanced (%v over, %v under) and nothing planned", trial, p.Over, p.Under)
		}
		util := map[string]float64{}
		for _, n := range nodes {
			util[n.ID] = utilisation(n)
		}
		holders := map[uint64][]string{}
		for _, bs := range blocks {
			for _, b := range bs {
				holders[b.ID] = b.Holders
			}
		}
		out, in := map[string]uint64{}, map[string]uint64{}
		seen := map[uint64]bool{}
		for _, mv := range p.Moves {
			if seen[mv.Block] {
				t.Fatalf("trial %d: block %d moved twice", trial, mv.Block)
			}
			seen[mv.Block] = true
			h := holders[mv.Block]
			var after []string
			for _, x := range h {
				if x == mv.Target {
					t.Fatalf("trial %d: target %s already holds block %d", trial, x, mv.Block)
				}
				if x == mv.Source {
					x = mv.Target
				}
				after = append(after, x)
			}
			if !racksOK(after, rackOf, racks) {
				t.Fatalf("trial %d: move %+v breaks the rack policy: %v", trial, mv, after)
			}
			if util[mv.Source] <= util[mv.Target] {
				t.Fatalf("trial %d: move %+v from %.1f%% to %.1f%%", trial, mv, util[mv.Source], util[mv.Target])
			}
			out[mv.Source] += mv.Length
			in[mv.Target] += mv.Length
		}
		for id, n := range out {
			if n > maxPer {
				t.Fatalf("trial %d: %s gives %d bytes, over the bound %d", trial, id, n, maxPer)
			}
		}
		for id, n := range in {
			if n > maxPer {
				t.Fatalf("trial %d: %s takes %d bytes, over the bound %d", trial, id, n, maxPer)
			}
		}
	}
}

// TestPlanNothingWhenBalanced: a balanced cluster gets no moves, however
// many blocks could go.
func TestPlanNothingWhenBalanced(t *testing.T) {
	b := Block{ID: 1, Length: mb, Replication: 1, Holders: []string{"a"}}
	nodes := []Node{node("a", "", 100*mb, 55*mb), node("b", "", 100*mb, 45*mb)}
	if p := PlanMoves(nodes, map[string][]Block{"a": {b}}, Limits{Threshold: 10}); len(p.Moves) != 0 || !p.Balanced() {
		t.Fatalf("balanced cluster planned %+v", p)
	}
	if p := PlanMoves(nodes, map[string][]Block{"a": {b}}, Limits{Threshold: 4}); len(p.Moves) != 1 || p.Balanced() {
		t.Fatalf("unbalanced at 4%%: %+v", p)
	}
	if p := PlanMoves(nil, nil, Limits{Threshold: 10}); len(p.Moves) != 0 || !p.Balanced() {
		t.Fatalf("empty cluster: %+v", p)
	}
}

// TestPlanSameRackFirst: a target in the source's rack is used before one
// in another rack, and a block whose only off-rack copy is the source
// does not move into the other holders' rack.
func TestPlanSameRackFirst(t *testing.T) {
	nodes := []Node{
		node("a1", "/a", 100*mb, 90*mb), node("a2", "/a", 100*mb, 0),
		node("b1", "/b", 100*mb, 90*mb), node("b2", "/b", 100*mb, 0),
	}
	blocks := map[string][]Block{
		"a1": {{ID: 1, Length: 10 * mb, Replication: 2, Holders: []string{"a1", "b1"}}},
		"b1": {{ID: 2, Length: 10 * mb, Replication: 2, Holders: []string{"b1", "a1"}}},
	}
	p := PlanMoves(nodes, blocks, Limits{Threshold: 10})
	if len(p.Moves) != 2 {
		t.Fatalf("moves %+v", p.Moves)
	}
	for _, mv := range p.Moves {
		if mv.Source[0] != mv.Target[0] {
			t.Fatalf("move %+v left its rack with a same-rack target free", mv)
		}
	}
	// Only /a has room: block 1 (a1,b1) may go a1->a2, but block 2's
	// source b1 is its only /b copy, and a2 would put it all in /a.
	nodes[3].Used = 90 * mb
	p = PlanMoves(nodes, blocks, Limits{Threshold: 10})
	for _, mv := range p.Moves {
		if mv.Block == 2 {
			t.Fatalf("move %+v puts block 2 in one rack", mv)
		}
	}
}
