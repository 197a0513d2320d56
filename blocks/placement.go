package blocks

import "github.com/blockfs/blockfs/errs"

// ChooseTargets picks up to n distinct live datanodes, none of them in
// exclude (datanode ids), each with at least blockSize bytes free, for new
// replicas of a block. Datanodes are drawn at random without replacement,
// weighted by free space: emptier nodes are preferred, and nodes with
// similar free space share the load evenly across calls rather than one
// always winning between heartbeats. It returns fewer than n datanodes if
// fewer qualify, an errs.Unavailable error if none does, and an errs.Invalid
// error if n < 1.
func (m *Manager) ChooseTargets(n int, blockSize uint64, exclude []string) ([]Datanode, error) {
	if n < 1 {
		return nil, errs.Newf(errs.Invalid, "blocks.Manager.ChooseTargets", "", "asked for %d targets", n)
	}
	picked := m.choose(n, blockSize, func(x *node) bool {
		for _, id := range exclude {
			if x.id == id {
				return true
			}
		}
		return false
	})
	if len(picked) == 0 {
		return nil, errs.New(errs.Unavailable, "blocks.Manager.ChooseTargets", "", "no live datanodes with space")
	}
	out := make([]Datanode, len(picked))
	for i, p := range picked {
		out[i] = *p.d
	}
	return out, nil
}

type candidate struct {
	n      *node
	d      *Datanode
	weight float64
}

// choose is ChooseTargets over nodes; excluded may be nil.
func (m *Manager) choose(n int, blockSize uint64, excluded func(*node) bool) []candidate {
	all := m.nodes()
	cands := make([]candidate, 0, len(all))
	total := 0.0
	for _, x := range all {
		d := x.snap.Load()
		if d.State != Live || d.free() < blockSize || (excluded != nil && excluded(x)) {
			continue
		}
		w := float64(d.free()) + 1
		cands = append(cands, candidate{n: x, d: d, weight: w})
		total += w
	}
	n = min(n, len(cands))
	m.randMu.Lock()
	defer m.randMu.Unlock()
	for k := 0; k < n; k++ {
		// Weighted draw from cands[k:], swapped into place k.
		r := m.rng.Float64() * total
		j := k
		for ; j < len(cands)-1; j++ {
			if r < cands[j].weight {
				break
			}
			r -= cands[j].weight
		}
		total -= cands[j].weight
		cands[k], cands[j] = cands[j], cands[k]
	}
	return cands[:n]
}
