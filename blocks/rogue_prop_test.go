package blocks

import (
	"testing"

	"pgregory.net/rapid"
)

// TestNoReportLosesLastGoodReplica is the property of issue 21, item 2: no
// sequence of reports from datanodes that are not a block's pipeline (full
// and incremental reports, received and deleted, bad-block reports, false
// "verified" answers nobody asked for, and restarts of the block map in
// between) makes the namenode delete a block's last good replica, one its
// pipeline wrote. The real datanodes do what a datanode does: they carry
// out deletes, answer verifies truthfully, and report in full after a
// restart. The fakes answer no verify (a datanode that answers verifies
// falsely is the limit docs/SECURITY.md states).
func TestNoReportLosesLastGoodReplica(t *testing.T) {
	const nBlocks = 4
	rapid.Check(t, func(rt *rapid.T) {
		real := []string{dn(1), dn(2), dn(3)}
		fakes := []string{"fake1", "fake2", "fake3"}
		repl := uint32(rapid.IntRange(1, 3).Draw(rt, "replication"))
		// held: what each real datanode stores, block id -> replica.
		held := map[string]map[uint64]Replica{}
		var m *Manager
		var clk *fakeClock
		restart := func() {
			clk = newFakeClock()
			var err error
			if m, err = New(testConfig(clk)); err != nil {
				rt.Fatal(err)
			}
			for _, id := range append(append([]string{}, real...), fakes...) {
				capacity := uint64(100 * gib)
				if id[0] == 'f' {
					capacity = 1 << 62 // the fakes look emptiest: the best place to keep
				}
				if err := m.Register(Datanode{ID: id, Addr: id + ":1", Capacity: capacity}); err != nil {
					rt.Fatal(err)
				}
			}
			for id := uint64(1); id <= nBlocks; id++ {
				m.SetExpected(id, 1, 100, repl, true)
			}
		}
		restart()
		// The pipeline writes every block on the real datanodes.
		for id := uint64(1); id <= nBlocks; id++ {
			m.SetExpected(id, 1, 100, repl, false)
			m.SetPipeline(id, real)
		}
		for _, d := range real {
			held[d] = map[uint64]Replica{}
			for id := uint64(1); id <= nBlocks; id++ {
				held[d][id] = rep(id)
				m.IncrementalReport(d, []Replica{rep(id)}, nil)
			}
		}
		for id := uint64(1); id <= nBlocks; id++ {
			m.SetExpected(id, 1, 100, repl, true)
		}
		fullReport := func(d string) {
			rs := make([]Replica, 0, len(held[d]))
			for _, r := range held[d] {
				rs = append(rs, r)
			}
			m.FullReport(d, rs)
		}
		replica := func(rt *rapid.T) Replica {
			r := rep(rapid.Uint64Range(1, nBlocks).Draw(rt, "block"))
			r.GenStamp = rapid.Uint64Range(1, 2).Draw(rt, "genstamp")
			r.Length = rapid.SampledFrom([]uint64{0, 1, blkSize}).Draw(rt, "length")
			return r
		}
		rt.Repeat(map[string]func(*rapid.T){
			"fake full report": func(rt *rapid.T) {
				f := rapid.SampledFrom(fakes).Draw(rt, "fake")
				rs := rapid.SliceOfN(rapid.Custom(replica), 0, nBlocks).Draw(rt, "replicas")
				m.FullReport(f, rs)
			},
			"fake received": func(rt *rapid.T) {
				f := rapid.SampledFrom(fakes).Draw(rt, "fake")
				m.IncrementalReport(f, []Replica{replica(rt)}, nil)
			},
			"fake deleted": func(rt *rapid.T) {
				f := rapid.SampledFrom(fakes).Draw(rt, "fake")
				m.IncrementalReport(f, nil, []uint64{rapid.Uint64Range(1, nBlocks).Draw(rt, "block")})
			},
			"fake bad block": func(rt *rapid.T) {
				f := rapid.SampledFrom(fakes).Draw(rt, "fake")
				id := rapid.Uint64Range(1, nBlocks).Draw(rt, "block")
				m.ReportCorrupt(id, f) // its own replica: trusted
				// As a user it may name anyone's replica: only suspect.
				m.ReportSuspect(id, 1, rapid.SampledFrom(append(append([]string{}, real...), fakes...)).Draw(rt, "holder"))
			},
			"fake verified, unasked": func(rt *rapid.T) {
				f := rapid.SampledFrom(fakes).Draw(rt, "fake")
				m.ReportVerified(f, []Replica{replica(rt)})
			},
			"block map restart": func(rt *rapid.T) {
				restart()
				for _, d := range real {
					fullReport(d)
				}
			},
			"real full report": func(rt *rapid.T) {
				fullReport(rapid.SampledFrom(real).Draw(rt, "real"))
			},
			"work": func(rt *rapid.T) {
				clk.Advance(m.cfg.HeartbeatInterval)
				heartbeatAll(m, append(append([]string{}, real...), fakes...)...)
				m.ComputeWork()
				for _, d := range real {
					for _, c := range commands(m, d) {
						switch c.Kind {
						case Delete:
							var gone []uint64
							for _, r := range c.Blocks {
								delete(held[d], r.BlockID)
								gone = append(gone, r.BlockID)
							}
							m.IncrementalReport(d, nil, gone)
						case Verify:
							if r, ok := held[d][c.Block.BlockID]; ok && r == c.Block {
								m.ReportVerified(d, []Replica{c.Block})
							}
						}
					}
				}
				for _, f := range fakes {
					commands(m, f) // the fakes do nothing they are told
				}
			},
			"": func(rt *rapid.T) {
				for id := uint64(1); id <= nBlocks; id++ {
					k := 0
					for _, d := range real {
						if _, ok := held[d][id]; ok {
							k++
						}
					}
					if k == 0 {
						rt.Fatalf("block %d lost its last good replica", id)
					}
				}
			},
		})
	})
}
