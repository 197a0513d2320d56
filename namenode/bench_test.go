package namenode_test

import (
	"cmp"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/localcluster"
	"github.com/blockfs/blockfs/namenode"
)

// BenchmarkCreateRaft creates files through a 3-node Raft cluster on
// loopback TCP from 16 concurrent gRPC clients, below a directory with a
// quota (/bench: each create checks and charges it), and reports
// creates/s, for a
// plaintext cluster (simple auth, plain gRPC, plain Raft) and an mTLS one
// (namenode certificates on Raft and gRPC, the clients holding the
// superuser root's user certificate), both started in the same run. Raft
// batches concurrent applies into one log write and one FSM lock
// acquisition.
//
// The sub-benchmarks plaintext and mtls run one after the other;
// alternating runs both clusters in turns of 250 creates, in ABBA order, so
// that both see the same machine, and reports each rate and mtls/plaintext: the figure
// to read on a shared, noisy machine. quota-alternating does the same on
// the plaintext cluster between /bench (a quota) and /free (none) and
// reports quota/noquota, the quota's cost measured in one run.
func BenchmarkCreateRaft(b *testing.B) {
	plain := startCluster(b, 3, func(i int, c *namenode.Config) { c.Logger = quietLogger() })
	var plainConns []api.ClientServiceClient
	for i := range plain.conns {
		plainConns = append(plainConns, plain.client(i))
	}
	p := newRaftPKI(b)
	mc, mtlsConns := startMTLSCluster(b, p, 3, nil)
	setups := []*createSetup{
		// Plaintext callers name themselves; under mTLS the certificate does.
		{name: "plaintext", c: plain.c, conns: plainConns, ctx: metadata.AppendToOutgoingContext(context.Background(), namenode.UserKey, "root")},
		{name: "mtls", c: mc, conns: mtlsConns, ctx: context.Background()},
	}
	for _, s := range setups {
		for w := range createClients {
			mkdirVia(s.ctx, b, s.c, s.conns, fmt.Sprintf("/bench/%d", w))
		}
		// A quota on the files' grandparent, as a cluster with quotas
		// has one: every create checks and charges it (never reached).
		if _, err := s.conns[s.leaderIndex(b)].SetQuota(s.ctx, &api.SetQuotaRequest{Path: "/bench", NamespaceQuota: 1 << 40, SpaceQuota: 1 << 50}); err != nil {
			b.Fatal(err)
		}
	}
	for _, s := range setups {
		b.Run(s.name, func(b *testing.B) {
			d := s.creates(b, int64(b.N))
			b.ReportMetric(float64(b.N)/d.Seconds(), "creates/s")
			b.ReportMetric(histMean(b, s.leader(b), "blockfs_namenode_proposal_batch_commands"), "commands/entry")
		})
	}
	b.Run("alternating", func(b *testing.B) {
		plainRate, mtlsRate := alternate(b, setups[0], setups[1])
		b.ReportMetric(plainRate, "plaintext-creates/s")
		b.ReportMetric(mtlsRate, "mtls-creates/s")
		b.ReportMetric(mtlsRate/plainRate, "mtls/plaintext")
	})
	// The quota's cost measured in one run: the plaintext cluster's
	// creates below /bench (a quota) and below /free (none), alternated.
	free := &createSetup{name: "plaintext-free", dir: "/free", c: plain.c, conns: plainConns, ctx: setups[0].ctx}
	for w := range createClients {
		mkdirVia(free.ctx, b, free.c, free.conns, fmt.Sprintf("/free/%d", w))
	}
	b.Run("quota-alternating", func(b *testing.B) {
		quotaRate, freeRate := alternate(b, setups[0], free)
		b.ReportMetric(quotaRate, "quota-creates/s")
		b.ReportMetric(freeRate, "noquota-creates/s")
		b.ReportMetric(quotaRate/freeRate, "quota/noquota")
	})
}

const createClients = 16

// alternate runs b.N creates on each of x and y in turns of 250, in ABBA
// order, and returns their rates.
func alternate(b *testing.B, x, y *createSetup) (float64, float64) {
	const turn = 250
	var d [2]time.Duration
	s := [2]*createSetup{x, y}
	for k, done := 0, int64(0); done < int64(b.N); k, done = k+1, done+turn {
		n := min(turn, int64(b.N)-done)
		for j := range s {
			i := j ^ k&1 // ABBA: neither always goes first
			d[i] += s[i].creates(b, n)
		}
	}
	return float64(b.N) / d[0].Seconds(), float64(b.N) / d[1].Seconds()
}

// createSetup is one cluster BenchmarkCreateRaft writes to.
type createSetup struct {
	name  string
	dir   string // the files go to dir/<client>/; "" is /bench
	c     *localcluster.Cluster
	conns []api.ClientServiceClient
	ctx   context.Context
	seq   atomic.Int64 // file names stay unique across rounds
}

func (s *createSetup) leader(b *testing.B) *namenode.Namenode { return s.c.Namenode(s.leaderIndex(b)) }

func (s *createSetup) leaderIndex(b *testing.B) int {
	l, err := s.c.WaitLeader(s.ctx)
	if err != nil {
		b.Fatal(err)
	}
	return l
}

// creates makes n files through the leader from createClients goroutines
// and returns the time taken, with the benchmark timer running only then.
func (s *createSetup) creates(b *testing.B, n int64) time.Duration {
	l, err := s.c.WaitLeader(s.ctx)
	if err != nil {
		b.Fatal(err)
	}
	cl := s.conns[l]
	var done atomic.Int64
	var wg sync.WaitGroup
	b.StartTimer()
	start := time.Now()
	for w := range createClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done.Add(1) <= n {
				path := fmt.Sprintf("%s/%d/f%d", cmp.Or(s.dir, "/bench"), w, s.seq.Add(1))
				if _, err := cl.Create(s.ctx, &api.CreateRequest{Path: path, Replication: 3, BlockSize: 1024}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	d := time.Since(start)
	b.StopTimer()
	return d
}

// histMean reads the mean of a histogram from a node's metrics.
func histMean(b *testing.B, n *namenode.Namenode, name string) float64 {
	mfs, err := n.Registry().Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			h := mf.GetMetric()[0].GetHistogram()
			if h.GetSampleCount() > 0 {
				return h.GetSampleSum() / float64(h.GetSampleCount())
			}
		}
	}
	return 0
}

// BenchmarkGetBlockLocationsScaling calls GetBlockLocations on a 10-block
// file in-process from 1 and 2 goroutines and reports calls/s. Its five
// datanodes send full block reports for the replicas AddBlock placed on
// them, so every block is listed with its 3 replicas, as in a real cluster
// (a reply without replicas skips the replica lookup, the costly part).
// Reads take only the FSM's shared read lock and the block map's sharded
// locks, so two goroutines should do close to twice the work of one.
//
// On a shared machine the CPU the process gets changes from second to
// second, so sequential sub-benchmarks compare different machines.
// alternating is the figure to read: it runs turns of 1 and 2 goroutines
// of GetBlockLocations and, as the control, of a loop that shares nothing
// (SHA-256 of a private buffer, about as long as one call), rotating the
// order every round, and reports gbl-2/1 and cpu-only-2/1: the namenode's
// scaling and what the machine allowed in the same seconds.
func BenchmarkGetBlockLocationsScaling(b *testing.B) {
	srv, req := locationsFixture(b, "/f10", 10)
	gbl := gblCall(srv, req)
	for _, g := range []int{1, 2} {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) { callsPerSec(b, g, gbl) })
	}
	b.Run("alternating", func(b *testing.B) { alternateScaling(b, gbl) })
}

// BenchmarkGetBlockLocationsLargeNamespaceScaling is the alternating
// figure of BenchmarkGetBlockLocationsScaling on a namenode that also
// holds 200,000 other one-block files, each with 3 reported replicas
// (namenode.LoadFiles, then full block reports), and reports the live heap
// too. The small fixture's live heap is a few MB, so the garbage collector
// runs every few thousand calls and pays its per-cycle costs (stacks,
// globals, the stop-the-world phases) each time; a namenode's live heap is
// hundreds of MB or more, which spreads those costs over many more calls.
// Both figures are worth reading: the small one is the worst case.
func BenchmarkGetBlockLocationsLargeNamespaceScaling(b *testing.B) {
	srv, req := locationsFixtureWith(b, "/f10", 10, 200000)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	live := float64(ms.HeapAlloc) / (1 << 20)
	gbl := gblCall(srv, req)
	for _, g := range []int{1, 2} {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) { callsPerSec(b, g, gbl) })
	}
	b.Run("alternating", func(b *testing.B) {
		alternateScaling(b, gbl)
		b.ReportMetric(live, "live-heap-MiB")
	})
}

// gblCall returns one GetBlockLocations call of req as root as the
// server makes it: the handler, then the server's codec marshaling the
// reply (which returns it to the namenode's pool) and the bytes freed once
// "sent". It checks that the reply lists 10 blocks with 3 replicas each.
func gblCall(srv api.ClientServiceServer, req *api.GetBlockLocationsRequest) func() error {
	return serverCall(srv, req, 10)
}

// serverCall is gblCall for a file of nblocks blocks.
func serverCall(srv api.ClientServiceServer, req *api.GetBlockLocationsRequest, nblocks int) func() error {
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs(namenode.UserKey, "root"))
	codec := namenode.ReplyCodec()
	return func() error {
		r, err := srv.GetBlockLocations(ctx, req)
		if err != nil {
			return err
		}
		if err := checkReplicas(r, nblocks); err != nil {
			return err
		}
		if os.Getenv("EXP") != "" {
			r.Header = &api.ResponseHeader{AppliedIndex: r.Header.AppliedIndex, ServedBy: r.Header.ServedBy}
			for i, d := range r.Datanodes {
				r.Datanodes[i] = &api.DatanodeInfo{Id: d.Id, Addr: d.Addr, HttpAddr: d.HttpAddr, State: d.State, Capacity: d.Capacity}
			}
		}
		data, err := codec.Marshal(r)
		data.Free()
		return err
	}
}

// alternateScaling runs turns of 1 and 2 goroutines of gbl and, as the
// control, of a loop that shares nothing (SHA-256 of a private buffer,
// about as long as one call), rotating the order every round, and reports
// gbl-2/1 and cpu-only-2/1.
func alternateScaling(b *testing.B, gbl func() error) {
	cpu := func() error {
		var buf [256]byte
		for range 8 {
			s := sha256.Sum256(buf[:])
			buf[0] = s[0]
		}
		return nil
	}
	const turn = 2000
	type setup struct {
		g    int
		call func() error
		d    time.Duration
		n    int64
	}
	ss := []*setup{{g: 1, call: gbl}, {g: 2, call: gbl}, {g: 1, call: cpu}, {g: 2, call: cpu}}
	for k, done := 0, int64(0); done < int64(b.N); k, done = k+1, done+turn {
		for j := range ss {
			s := ss[(j+k)%len(ss)] // every setup goes first in turn
			t0 := time.Now()
			if err := runCalls(s.g, turn, s.call); err != nil {
				b.Fatal(err)
			}
			s.d += time.Since(t0)
			s.n += turn
		}
	}
	rate := func(s *setup) float64 { return float64(s.n) / s.d.Seconds() }
	b.ReportMetric(rate(ss[0]), "gbl-1-calls/s")
	b.ReportMetric(rate(ss[1]), "gbl-2-calls/s")
	b.ReportMetric(rate(ss[1])/rate(ss[0]), "gbl-2/1")
	b.ReportMetric(rate(ss[3])/rate(ss[2]), "cpu-only-2/1")
}

// runCalls makes n calls from g goroutines, claimed callGrain at a time.
func runCalls(g int, n int64, call func() error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, g)
	for range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				hi := next.Add(callGrain)
				lo := hi - callGrain
				if lo >= n {
					return
				}
				for range min(hi, n) - lo {
					if err := call(); err != nil {
						errc <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	return <-errc
}

// BenchmarkGetBlockLocations1000 calls GetBlockLocations on a 1000-block
// file whose blocks have 3 reported replicas each (the HDFS-1081 shape) and
// reports ns/block.
func BenchmarkGetBlockLocations1000(b *testing.B) {
	const n = 1000
	srv, req := locationsFixture(b, "/f1000", n)
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs(namenode.UserKey, "root"))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		r, err := srv.GetBlockLocations(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		if len(r.BlockIds) != n {
			b.Fatalf("%d blocks, want %d", len(r.BlockIds), n)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/block")
}

// BenchmarkGetBlockLocationsOneBlock calls GetBlockLocations on a
// one-block file with 3 reported replicas, the shape of most files, as the
// server does (gblCall: the handler, then the marshal that recycles the
// reply), and reports allocations.
func BenchmarkGetBlockLocationsOneBlock(b *testing.B) {
	srv, req := locationsFixture(b, "/f1", 1)
	call := serverCall(srv, req, 1)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := call(); err != nil {
			b.Fatal(err)
		}
	}
}

// locationsFixture starts one namenode with 5 heartbeating datanodes,
// writes a file of nblocks 1 KiB blocks with replication 3, has every
// datanode send a full block report of the replicas placed on it, waits
// until every block is served with 3 replicas, and returns the in-process
// client server and a stale-read request for the whole file.
func locationsFixture(b *testing.B, path string, nblocks int) (api.ClientServiceServer, *api.GetBlockLocationsRequest) {
	return locationsFixtureWith(b, path, nblocks, 0)
}

// locationsFixtureWith is locationsFixture on a namenode that first gets
// others one-block files (namenode.LoadFiles), each placed on 3 of the 5
// datanodes and listed in their block reports.
func locationsFixtureWith(b *testing.B, path string, nblocks, others int) (api.ClientServiceServer, *api.GetBlockLocationsRequest) {
	_, _, srv, req := locationsCluster(b, path, nblocks, others)
	return srv, req
}

// locationsCluster is locationsFixtureWith returning the cluster and its
// leader too, for callers that go through gRPC.
func locationsCluster(b testing.TB, path string, nblocks, others int, adjust ...func(*namenode.Config)) (*tc, int, api.ClientServiceServer, *api.GetBlockLocationsRequest) {
	x := startCluster(b, 1, func(i int, c *namenode.Config) {
		c.Logger = quietLogger()
		if others > 0 {
			c.MaxRequestSize = 256 << 20 // the datanodes' full reports of the other files
		}
		for _, a := range adjust {
			a(c)
		}
	})
	x.registerDatanodes(5)
	l := x.leader()
	c := x.client(l)
	held := map[string][]*api.ReportedBlock{}
	loaded, err := namenode.LoadFiles(x.c.Namenode(l), others, 1000, 1024)
	if err != nil {
		b.Fatal(err)
	}
	for i, f := range loaded {
		for r := range 3 {
			id := fmt.Sprintf("dn%d", (i+r)%5)
			held[id] = append(held[id], &api.ReportedBlock{Block: f.Block, InodeId: f.Inode})
		}
	}
	cr, err := c.Create(x.root(), &api.CreateRequest{Path: path, Replication: 3, BlockSize: 1024})
	if err != nil {
		b.Fatal(err)
	}
	var blocks []*api.Block
	var prev *api.Block
	for range nblocks {
		r, err := c.AddBlock(x.root(), &api.AddBlockRequest{Path: path, InodeId: cr.Status.InodeId, Previous: prev})
		if err != nil {
			b.Fatal(err)
		}
		prev = r.Block.Block
		prev.Length = 1024
		blocks = append(blocks, prev)
		for _, d := range r.Block.Locations {
			held[d.Id] = append(held[d.Id], &api.ReportedBlock{Block: prev, InodeId: cr.Status.InodeId})
		}
	}
	if _, err := c.Complete(x.root(), &api.CompleteRequest{Path: path, InodeId: cr.Status.InodeId, Blocks: blocks}); err != nil {
		b.Fatal(err)
	}
	dp := api.NewDatanodeProtocolClient(x.conns[l])
	for id, rbs := range held {
		if _, err := dp.BlockReport(asDatanode(b.Context(), id), &api.BlockReportRequest{DatanodeId: id, Blocks: rbs}); err != nil {
			b.Fatalf("block report of %s: %v", id, err)
		}
	}
	srv := x.c.Namenode(l).ClientServer()
	req := &api.GetBlockLocationsRequest{Path: path, Read: &api.ReadOptions{Consistency: api.ReadConsistency_READ_CONSISTENCY_STALE}}
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs(namenode.UserKey, "root"))
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := srv.GetBlockLocations(ctx, req)
		if err == nil {
			err = checkReplicas(r, nblocks)
		}
		for _, i := range []int{0, len(loaded) / 2, len(loaded) - 1} {
			if err == nil && len(loaded) > 0 {
				p := fmt.Sprintf("/load/d%06d/f%06d", i/1000, i%1000)
				if r, err = srv.GetBlockLocations(ctx, &api.GetBlockLocationsRequest{Path: p, Read: req.Read}); err == nil {
					err = checkReplicas(r, 1)
				}
			}
		}
		if err == nil {
			return x, l, srv, req
		}
		if time.Now().After(deadline) {
			b.Fatalf("replicas never reported: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkReplicas: r lists n blocks, each with 3 replicas.
func checkReplicas(r *api.GetBlockLocationsResponse, n int) error {
	if len(r.BlockIds) != n {
		return fmt.Errorf("%d blocks, want %d", len(r.BlockIds), n)
	}
	for i, k := range r.ReplicaCounts {
		if k != 3 {
			return fmt.Errorf("block %d has %d replicas, want 3", i, k)
		}
	}
	return nil
}

// callsPerSec runs call b.N times over g goroutines and reports calls/s;
// the first error stops that goroutine and fails the benchmark.
// callGrain is how many calls a callsPerSec goroutine claims at a time.
const callGrain = 64

func callsPerSec(b *testing.B, g int, call func() error) {
	b.ResetTimer()
	start := time.Now()
	if err := runCalls(g, int64(b.N), call); err != nil {
		b.Errorf("get block locations: %v", err)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// incomingAs is the server-side context of a call made as user.
func incomingAs(user string) context.Context {
	return metadata.NewIncomingContext(context.Background(), metadata.Pairs(namenode.UserKey, user))
}
