package blocks

import (
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Readers, reports, heartbeats, liveness, placement and the leader's work
// loop all at once, under -race; then the invariants still hold.
func TestConcurrentUse(t *testing.T) {
	const nodes, nblocks = 6, 1000
	m, clk := newTestManager(t, nodes)
	for id := uint64(1); id <= nblocks; id++ {
		m.SetExpected(id, 1, 100, 3, true)
	}
	var wg sync.WaitGroup
	seed := uint64(0)
	run := func(iters int, f func(r *rand.Rand)) {
		wg.Add(1)
		seed++
		r := rand.New(rand.NewPCG(seed, 1))
		go func() {
			defer wg.Done()
			for i := 0; i < iters; i++ {
				f(r)
			}
		}()
	}
	for g := 0; g < 4; g++ { // GetBlockLocations
		run(300, func(r *rand.Rand) {
			var dst []Datanode
			base := r.Uint64N(nblocks)
			for id := base; id < base+100; id++ {
				dst = m.AppendLocations(dst[:0], id)
				for _, d := range dst {
					if d.State != Live || d.ID == "" {
						t.Errorf("served %+v", d)
					}
				}
			}
		})
	}
	for i := 1; i <= nodes; i++ { // each datanode reports
		id := dn(i)
		run(300, func(r *rand.Rand) {
			switch r.IntN(10) {
			case 0:
				var rs []Replica
				for b := uint64(1); b <= nblocks; b++ {
					if r.IntN(2) == 0 {
						rs = append(rs, rep(b))
					}
				}
				if !m.FullReport(id, rs) {
					m.Register(Datanode{ID: id, Capacity: 100 * gib})
				}
			case 1:
				m.ReportCorrupt(r.Uint64N(nblocks)+1, id)
			default:
				b := r.Uint64N(nblocks) + 1
				if !m.IncrementalReport(id, []Replica{rep(b)}, []uint64{r.Uint64N(nblocks) + 1}) {
					m.Heartbeat(id, 100*gib, r.Uint64N(50)*gib, 0)
				}
			}
			m.PendingCommands(id)
		})
	}
	run(200, func(r *rand.Rand) { // namespace + leader + monitor
		clk.Advance(time.Second)
		for i := 1; i <= nodes; i++ {
			if r.IntN(8) != 0 {
				m.Heartbeat(dn(i), 100*gib, r.Uint64N(50)*gib, 0)
			}
		}
		m.CheckLiveness()
		m.ComputeWork()
		b := r.Uint64N(nblocks) + 1
		m.Forget(b)
		m.SetExpected(b, 1, 100, 3, true)
		m.ChooseTargets(3, blkSize, []string{dn(1)}, "")
		m.Stats()
		m.UnderReplicated()
	})
	run(50, func(*rand.Rand) {
		reg := prometheus.NewRegistry()
		reg.MustRegister(NewCollector(m))
		if _, err := reg.Gather(); err != nil {
			t.Error(err)
		}
	})
	wg.Wait()
	checkInvariants(t, m)
}

// checkInvariants recounts every shard from scratch and compares with the
// incrementally kept counters and queues.
func checkInvariants(t *testing.T, m *Manager) {
	t.Helper()
	for si := range m.shards {
		s := &m.shards[si]
		rl := s.mu.RLock()
		var sum tally
		for _, id := range s.blocks.ids(nil) {
			b := s.blocks.get(id)
			tl := s.tally(b)
			sum.blocks += tl.blocks
			sum.good += tl.good
			sum.bad += tl.bad
			if !b.expected() && s.numLocs(b) == 0 {
				t.Errorf("block %d: empty unexpected entry kept", id)
			}
			_, inUnder := s.under[id]
			_, pend := s.pending[id]
			short := b.expected() && b.complete() && tl.good < int(b.replication)
			if inUnder && !short {
				t.Errorf("block %d in under queue with %d/%d good", id, tl.good, b.replication)
			}
			if short && !inUnder && !pend {
				t.Errorf("block %d short (%d/%d) but neither queued nor pending", id, tl.good, b.replication)
			}
			for _, l := range s.locs(b) { // the Manager is quiescent: read node state directly
				if n := s.node(l); !n.blocks.Has(id) {
					t.Errorf("block %d located on %s, which did not report it", id, n.id)
				}
			}
			checkSideTables(t, s, b)
		}
		for k := range s.stamps {
			if b := s.blocks.get(k.id); b == nil || s.find(b, s.m.reg.Load().byNum[k.num]) < 0 {
				t.Errorf("stamp of block %d on datanode %d left behind", k.id, k.num)
			}
		}
		for id := range s.extra {
			if b := s.blocks.get(id); b == nil || b.n != spilled {
				t.Errorf("spilled replicas of block %d left behind", id)
			}
		}
		if sum.blocks != s.nBlocks || sum.good != s.nGood || sum.bad != s.nBad {
			t.Errorf("shard %d counters %d/%d/%d, recount %d/%d/%d", si, s.nBlocks, s.nGood, s.nBad, sum.blocks, sum.good, sum.bad)
		}
		rl.RUnlock()
	}
	for _, n := range m.nodes() {
		for _, id := range n.blocks.Append(nil) {
			s := m.shard(id)
			if b := s.blocks.get(id); b == nil || s.find(b, n) < 0 {
				t.Errorf("%s reported block %d, which is not located on it", n.id, id)
			}
		}
		streams := 0
		for si := range m.shards {
			for _, p := range m.shards[si].pending {
				if p.source == n {
					streams++
				}
			}
		}
		if int(n.streams.Load()) != streams {
			t.Errorf("%s streams = %d, pending with it as source = %d", n.id, n.streams.Load(), streams)
		}
	}
}

// checkSideTables checks b's entries in s.extra and s.stamps: replicas
// spill only beyond inlineLocs, no datanode holds two, and a replica has an
// own stamp exactly when it differs from the block's. Caller holds s.mu.
func checkSideTables(t *testing.T, s *shard, b *blockInfo) {
	t.Helper()
	x, spilledOK := s.extra[b.id]
	switch {
	case b.n == spilled && (!spilledOK || len(x) <= inlineLocs):
		t.Errorf("block %d spilled with %d replicas", b.id, len(x))
	case b.n != spilled && (spilledOK || b.n > inlineLocs):
		t.Errorf("block %d: %d inline replicas and a spill entry %v", b.id, b.n, spilledOK)
	}
	seen := map[uint32]bool{}
	for _, l := range s.locs(b) {
		if seen[l.num()] {
			t.Errorf("block %d: datanode %d holds two replicas", b.id, l.num())
		}
		seen[l.num()] = true
		st, ok := s.stamps[stampKey{b.id, l.num()}]
		if ok != l.has(locOwnStamp) {
			t.Errorf("block %d datanode %d: stamp entry %v, flag %v", b.id, l.num(), ok, l.has(locOwnStamp))
		}
		if ok && st.genStamp == b.genStamp && st.length == b.length {
			t.Errorf("block %d datanode %d: own stamp equal to the block's", b.id, l.num())
		}
	}
}

func TestCollector(t *testing.T) {
	m, clk := newTestManager(t, 3)
	place(t, m, 1, 3, dn(1), dn(2))
	clk.Advance(time.Hour)
	heartbeatAll(m, dn(1), dn(2))
	m.CheckLiveness()
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(m))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			name := mf.GetName()
			for _, lp := range mt.GetLabel() {
				name += "{" + lp.GetName() + "=" + lp.GetValue() + "}"
			}
			got[name] = mt.GetGauge().GetValue() + mt.GetCounter().GetValue()
		}
	}
	want := map[string]float64{
		"blockfs_blocks_datanodes{state=live}":                      2,
		"blockfs_blocks_datanodes{state=dead}":                      1,
		"blockfs_blocks_capacity_bytes":                             float64(200 * gib),
		"blockfs_blocks_used_bytes":                                 0,
		"blockfs_blocks_expected":                                   1,
		"blockfs_blocks_replicas":                                   2,
		"blockfs_blocks_under_replicated":                           1,
		"blockfs_blocks_over_replicated":                            0,
		"blockfs_blocks_pending_replication":                        0,
		"blockfs_blocks_pending_deletion":                           0,
		"blockfs_blocks_corrupt_replicas":                           0,
		"blockfs_blocks_unknown":                                    0,
		"blockfs_blocks_suspect":                                    0,
		"blockfs_blocks_verifying":                                  0,
		"blockfs_blocks_mis_replicated":                             0,
		"blockfs_blocks_refused_total{reason=register_conflict}":    0,
		"blockfs_blocks_refused_total{reason=bad_report}":           0,
		"blockfs_blocks_refused_total{reason=bad_block_report}":     0,
		"blockfs_blocks_refused_total{reason=unrequested_verified}": 0,
		"blockfs_blocks_refused_total{reason=recovery_commit}":      0,
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok && strings.HasPrefix(k, "blockfs_") {
			t.Errorf("unexpected metric %s", k)
		}
	}
}
