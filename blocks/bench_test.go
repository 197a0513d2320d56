package blocks

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// BenchmarkLocations1000 resolves 1000 consecutive blocks (one large file's
// GetBlockLocations) per op, from parallel goroutines, with one reused
// destination slice per goroutine. Run with -cpu 1,2,... to see read
// scaling; the "reports" variant adds a datanode re-reporting its replicas
// (incremental reports, shard write locks) throughout.
func BenchmarkLocations1000(b *testing.B) {
	const nodes, nblocks, perCall = 10, 100_000, 1000
	m := reportedManager(b, nodes, nblocks)
	// globalLock emulates a block map behind one exclusive lock, for a
	// same-run baseline.
	var globalLock sync.Mutex
	for _, tc := range []struct {
		name                string
		withReports, global bool
	}{{"idle", false, false}, {"reports", true, false}, {"baseline-global-mutex", false, true}} {
		withReports := tc.withReports
		b.Run(tc.name, func(b *testing.B) {
			var stop atomic.Bool
			done := make(chan struct{})
			if withReports {
				go func() {
					defer close(done)
					// dn1 re-reports replicas it holds (block ids 10k).
					r, who := []Replica{rep(0)}, dn(1)
					for id := uint64(nodes); !stop.Load(); id = id%nblocks + nodes {
						r[0] = rep(id)
						m.IncrementalReport(who, r, nil)
					}
				}()
			} else {
				close(done)
			}
			var next atomic.Uint64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				dst := make([]Datanode, 0, 4*perCall)
				for pb.Next() {
					base := next.Add(perCall) % (nblocks - perCall)
					dst = dst[:0]
					for id := base + 1; id <= base+perCall; id++ {
						if tc.global {
							globalLock.Lock()
							dst = m.AppendLocations(dst, id)
							globalLock.Unlock()
						} else {
							dst = m.AppendLocations(dst, id)
						}
					}
					if len(dst) < 2*perCall {
						b.Fatalf("resolved %d replicas for %d blocks", len(dst), perCall)
					}
				}
			})
			b.StopTimer()
			stop.Store(true)
			<-done
		})
	}
}

// BenchmarkFullReport1M is one full block report from a datanode holding a
// million blocks (ids 1..1M, all expected, 3 replicas each on 3 datanodes),
// per op. "same" re-reports what the datanode holds (the steady state);
// "churn" alternates between all of them and all but every 100th, so each
// op adds or drops 10,000 replicas.
func BenchmarkFullReport1M(b *testing.B) {
	const nblocks = 1_000_000
	m, _ := newTestManager(b, 3)
	all := make([]Replica, nblocks)
	for i := range all {
		all[i] = rep(uint64(i + 1))
		m.SetExpected(uint64(i+1), 1, 100, 3, true)
	}
	for i := 1; i <= 3; i++ {
		if !m.FullReport(dn(i), all) {
			b.Fatal("report refused")
		}
	}
	var fewer []Replica
	for i := range all {
		if i%100 != 0 {
			fewer = append(fewer, all[i])
		}
	}
	for _, tc := range []struct {
		name  string
		churn bool
	}{{"same", false}, {"churn", true}} {
		b.Run(tc.name, func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				rs := all
				if tc.churn && i%2 == 0 {
					rs = fewer
				}
				if !m.FullReport(dn(1), rs) {
					b.Fatal("report refused")
				}
			}
			m.FullReport(dn(1), all)
		})
	}
}

// BenchmarkReader1000 is the read path alone: one LocationReader resolving
// 1000 consecutive blocks to datanode numbers per op, from one goroutine
// (no datanode copies, no contention), so a change to the block record
// shows in it.
func BenchmarkReader1000(b *testing.B) {
	const nodes, nblocks, perCall = 10, 100_000, 1000
	m := reportedManager(b, nodes, nblocks)
	var r LocationReader
	dst := make([]uint32, 0, 4*perCall)
	base := uint64(0)
	for b.Loop() {
		r.Reset(m)
		dst = dst[:0]
		for id := base + 1; id <= base+perCall; id++ {
			dst = r.Append(dst, id)
		}
		if len(dst) != 3*perCall {
			b.Fatalf("resolved %d replicas for %d blocks", len(dst), perCall)
		}
		base = (base + perCall) % (nblocks - perCall)
	}
}

// reportedManager returns a block map of nblocks expected blocks, each with
// three replicas that nodes datanodes reported in full reports, on the real
// clock (a fake one would serialize readers on its mutex).
func reportedManager(b *testing.B, nodes int, nblocks uint64) *Manager {
	b.Helper()
	cfg := DefaultConfig()
	cfg.Seed = 1
	m, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	for i := 1; i <= nodes; i++ {
		m.Register(Datanode{ID: dn(i), Addr: "10.0.0.1:9866", Capacity: 100 * gib})
	}
	for id := uint64(1); id <= nblocks; id++ {
		m.SetExpected(id, 1, 100, 3, true)
	}
	for i := 0; i < nodes; i++ {
		var rs []Replica
		for id := uint64(1); id <= nblocks; id++ {
			if int(id%uint64(nodes)) == i || int((id+1)%uint64(nodes)) == i || int((id+2)%uint64(nodes)) == i {
				rs = append(rs, rep(id))
			}
		}
		m.FullReport(dn(i+1), rs)
	}
	return m
}

// BenchmarkComputeWorkRestart runs the replication monitor's pass on a
// block map as a restart leaves it: a million expected blocks, every one
// under-replicated, and no datanode registered yet.
func BenchmarkComputeWorkRestart(b *testing.B) {
	m, err := New(DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	for id := uint64(1); id <= 1<<20; id++ {
		m.SetExpected(id, 1, 100, 3, true)
	}
	b.ResetTimer()
	for range b.N {
		m.ComputeWork()
	}
}

// BenchmarkReset1M installs a million expected blocks in an empty block
// map through a Reset, as a namenode restarting from a snapshot does, and
// reports ns per block: told the count first (Expect), as the namenode
// does, and not.
func BenchmarkReset1M(b *testing.B) {
	for _, hint := range []bool{true, false} {
		b.Run(fmt.Sprintf("expect=%v", hint), func(b *testing.B) { benchReset(b, hint) })
	}
}

func benchReset(b *testing.B, hint bool) {
	const n = 1 << 20
	for range b.N {
		b.StopTimer()
		m, err := New(DefaultConfig())
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		r := m.BeginReset()
		if hint {
			r.Expect(n)
		}
		for id := uint64(1); id <= n; id++ {
			r.Add(ExpectedBlock{ID: id, GenStamp: 1, Inode: 100, Replication: 3, Complete: true})
		}
		r.Finish()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/block")
}
