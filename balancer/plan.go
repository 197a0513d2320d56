package balancer

import (
	"sort"

	"github.com/blockfs/blockfs/topology"
)

// Node is a datanode as the planner sees it: live, in Rack, with Used of
// Capacity bytes.
type Node struct {
	ID, Rack       string
	Capacity, Used uint64
}

// Block is one block on a source datanode: its length, replication and
// the datanodes holding a good replica (the source among them).
type Block struct {
	ID          uint64
	Length      uint64
	Replication int
	Holders     []string
}

// Move is one planned replica move.
type Move struct {
	Block          uint64
	Source, Target string
	Length         uint64
}

// Spread is the utilisation of the datanodes, in percent.
type Spread struct {
	Min, Max, Mean float64
}

// Limits bound one plan.
type Limits struct {
	// Threshold is the allowed distance from the mean utilisation, in
	// percentage points (HDFS's -threshold): (0, 100].
	Threshold float64
	// MaxBytesPerNode bounds the bytes planned off one source and onto
	// one target in one iteration (0: unbounded).
	MaxBytesPerNode uint64
}

// Plan is one iteration's plan.
type Plan struct {
	Spread Spread
	// Over and Under are the datanodes above mean+threshold and below
	// mean-threshold, by id.
	Over, Under []string
	// BytesToMove is what balancing still needs, as HDFS counts it: the
	// larger of the bytes over-utilised nodes hold above mean+threshold
	// and the bytes under-utilised ones lack below mean-threshold.
	BytesToMove uint64
	Moves       []Move
}

// Balanced reports whether every datanode is within the threshold.
func (p Plan) Balanced() bool { return len(p.Over) == 0 && len(p.Under) == 0 }

// class is where a node stands against the mean.
type class int

const (
	overUtilized  class = iota // u > mean + threshold
	aboveAverage               // mean < u <= mean + threshold
	belowAverage               // mean - threshold <= u < mean
	underUtilized              // u < mean - threshold
	atMean
)

type planNode struct {
	Node
	util   float64 // percent
	class  class
	budget uint64 // bytes it may still give (source) or take (target)
}

func utilisation(n Node) float64 {
	if n.Capacity == 0 {
		return 100
	}
	return float64(n.Used) * 100 / float64(n.Capacity)
}

// Classify computes the spread, the over- and under-utilised nodes and
// the bytes to move, without planning moves.
func Classify(nodes []Node, threshold float64) Plan {
	p, _ := classify(nodes, Limits{Threshold: threshold})
	return p
}

func classify(nodes []Node, lim Limits) (Plan, []*planNode) {
	var p Plan
	var used, capacity uint64
	for _, n := range nodes {
		used += n.Used
		capacity += n.Capacity
	}
	if len(nodes) == 0 || capacity == 0 {
		return p, nil
	}
	mean := float64(used) * 100 / float64(capacity)
	p.Spread = Spread{Min: 100, Mean: mean}
	var overBytes, underBytes float64
	pns := make([]*planNode, 0, len(nodes))
	for _, n := range nodes {
		u := utilisation(n)
		p.Spread.Min, p.Spread.Max = min(p.Spread.Min, u), max(p.Spread.Max, u)
		pn := &planNode{Node: n, util: u}
		diff := u - mean
		switch {
		case diff > lim.Threshold:
			pn.class = overUtilized
			p.Over = append(p.Over, n.ID)
			overBytes += (diff - lim.Threshold) * float64(n.Capacity) / 100
		case diff > 0:
			pn.class = aboveAverage
		case diff < -lim.Threshold:
			pn.class = underUtilized
			p.Under = append(p.Under, n.ID)
			underBytes += (-diff - lim.Threshold) * float64(n.Capacity) / 100
		case diff < 0:
			pn.class = belowAverage
		default:
			pn.class = atMean
		}
		// As HDFS: a node may give (or take) its distance from the mean.
		pn.budget = uint64(abs(diff) * float64(n.Capacity) / 100)
		if lim.MaxBytesPerNode > 0 {
			pn.budget = min(pn.budget, lim.MaxBytesPerNode)
		}
		pns = append(pns, pn)
	}
	p.BytesToMove = uint64(max(overBytes, underBytes))
	return p, pns
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// PlanMoves plans one iteration: it classifies nodes against the mean
// utilisation, then pairs sources with targets as HDFS's balancer does
// (over-utilised with under-utilised, over-utilised with below-average,
// above-average with under-utilised; within each, the same rack before
// any rack) and, for each pair, takes the source's blocks (blocks[source])
// that the target does not hold and whose move keeps the rack policy,
// while both have budget left. Nothing is planned when the nodes are
// balanced. The result depends only on the arguments (ties go by id).
func PlanMoves(nodes []Node, blocks map[string][]Block, lim Limits) Plan {
	p, pns := classify(nodes, lim)
	if p.Balanced() {
		return p
	}
	sort.Slice(pns, func(i, j int) bool { return pns[i].ID < pns[j].ID })
	racks := map[string]string{}
	for _, n := range pns {
		racks[n.ID] = rackOrDefault(n.Rack)
	}
	nracks := len(distinct(racks))
	byClass := func(c class) []*planNode {
		var out []*planNode
		for _, n := range pns {
			if n.class == c {
				out = append(out, n)
			}
		}
		return out
	}
	over, above := byClass(overUtilized), byClass(aboveAverage)
	below, under := byClass(belowAverage), byClass(underUtilized)
	taken := map[uint64]bool{}
	pair := func(srcs, dsts []*planNode, sameRack bool) {
		for _, s := range srcs {
			for _, d := range dsts {
				if sameRack && racks[s.ID] != racks[d.ID] {
					continue
				}
				for _, b := range blocks[s.ID] {
					if s.budget == 0 || d.budget == 0 {
						break
					}
					if taken[b.ID] || b.Length > s.budget || b.Length > d.budget ||
						!holds(b, s.ID) || holds(b, d.ID) || !keepsRacks(b, s.ID, d.ID, racks, nracks) {
						continue
					}
					taken[b.ID] = true
					s.budget -= b.Length
					d.budget -= b.Length
					p.Moves = append(p.Moves, Move{Block: b.ID, Source: s.ID, Target: d.ID, Length: b.Length})
				}
			}
		}
	}
	for _, same := range []bool{true, false} {
		pair(over, under, same)
		pair(over, below, same)
		pair(above, under, same)
	}
	return p
}

func holds(b Block, id string) bool {
	for _, h := range b.Holders {
		if h == id {
			return true
		}
	}
	return false
}

// keepsRacks reports whether b's holders, with src replaced by dst, keep
// HDFS's rack policy (blocks/placement.go): at least two racks when the
// cluster has more and the block more than one replica, and at most
// (replicas-1)/racks + 2 replicas in one rack.
func keepsRacks(b Block, src, dst string, racks map[string]string, nracks int) bool {
	if nracks < 2 {
		return true
	}
	count := map[string]int{}
	total := 0
	for _, h := range b.Holders {
		if h == src {
			h = dst
		}
		r, ok := racks[h]
		if !ok {
			r = "?" + h // not a live node here: a rack of its own
		}
		count[r]++
		total++
	}
	for _, k := range count {
		if k > (total-1)/nracks+2 {
			return false
		}
	}
	return total < 2 || len(count) >= 2
}

func rackOrDefault(r string) string {
	if r == "" {
		return topology.DefaultRack
	}
	return r
}

func distinct(m map[string]string) map[string]bool {
	out := map[string]bool{}
	for _, v := range m {
		out[v] = true
	}
	return out
}
