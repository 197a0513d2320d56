// Command flood measures what one user's flood of the limit-bound attacks
// (docs/SECURITY.md, finding 5; the "bounded everything" item 3)
// does to another user, in one run against an in-process localcluster of
// 3 namenodes and 3 datanodes with the production limits (their
// defaults): user B's GetBlockLocations latency on the leader, unloaded
// and then while user A floods the leader and the datanodes with
//
//   - streams: one connection holding --grpc-max-streams open streams
//     (health Watch), with more calls queued behind them;
//   - complete waits: Completes of blocks no datanode will report,
//     past --complete-waits-per-user;
//   - writes: Mkdirs as fast as it can, past --write-rate-per-user and
//     the fair scheduler's backoff (raw calls that do not honour the
//     retry hint);
//   - never-read ReadBlock streams on every datanode (smallest HTTP/2
//     window), past --read-buffer-bytes-per-user;
//   - stalled HTTP: WebHDFS requests whose headers or body never finish.
//
// It prints B's p50 and p99 in both phases, the p99 ratio (the floor is
// 2x), and how many of A's calls each limit refused (the servers'
// /metrics counters over the flood phase). Every figure is the median of
// --runs runs.
//
//	go run ./bench/flood --runs 3 --measure 5s --cpuprofile flood.pprof
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/bench/internal/results"
	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/datanode"
	"github.com/blockfs/blockfs/internal/node/serve"
	"github.com/blockfs/blockfs/localcluster"
	"github.com/blockfs/blockfs/namenode"
	"github.com/blockfs/blockfs/security"
)

// Result is one run's figures (and, in the JSON, the medians).
type Result struct {
	UnloadedP50Ms float64            `json:"unloaded_p50_ms"`
	UnloadedP99Ms float64            `json:"unloaded_p99_ms"`
	FloodP50Ms    float64            `json:"flood_p50_ms"`
	FloodP99Ms    float64            `json:"flood_p99_ms"`
	P99Ratio      float64            `json:"p99_ratio"`
	Calls         int                `json:"b_calls_per_phase"`
	Refused       map[string]float64 `json:"refused"`
	AdmittedA     map[string]float64 `json:"admitted_a"`
}

func main() {
	runs := flag.Int("runs", 3, "runs; every figure is the median")
	measure := flag.Duration("measure", 5*time.Second, "how long B's reads are timed in each phase")
	writers := flag.Int("writers", 16, "A's goroutines calling Mkdirs")
	completers := flag.Int("completers", 96, "A's goroutines calling Complete on blocks never reported")
	readStreams := flag.Int("read-streams", 64, "A's never-read ReadBlock streams per datanode")
	httpConns := flag.Int("http-conns", 64, "A's stalled HTTP connections")
	writeRate := flag.Int("write-rate", 0, "the namenodes' --write-rate-per-user (burst twice it); 0 keeps the production default, which is what the floor is measured at")
	refusalRate := flag.Float64("refusal-rate", -1, "every server's --grpc-refusal-rate; -1 keeps the production default, 0 turns the refusal budget off (to see what it buys)")
	attacks := flag.String("attacks", "streams,completes,writes,reads,http", "which of A's attacks to run (comma-separated), to see what each costs B")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the flood phases to this file")
	jsonOut := flag.String("json", "", "write the results as JSON to this file")
	flag.Parse()

	ctx := context.Background()
	cfg := localcluster.Config{Namenodes: 3, Datanodes: 3}
	cfg.Namenode = func(_ int, c *namenode.Config) {
		if *writeRate > 0 {
			c.Limits.WriteRatePerUser, c.Limits.WriteBurstPerUser = *writeRate, 2**writeRate
		}
		if *refusalRate >= 0 {
			c.Limits.Serve = withRefusalRate(c.Limits.Serve, *refusalRate)
		}
	}
	cfg.Datanode = func(_ int, c *datanode.Config) {
		if *refusalRate >= 0 {
			c.Serve = withRefusalRate(c.Serve, *refusalRate)
		}
	}
	c, err := localcluster.Start(ctx, cfg)
	check(err)
	defer c.Close()
	check(c.WaitDatanodes(ctx))
	root, err := c.Client()
	check(err)
	defer root.Close()
	check(root.Mkdirs(ctx, "/pub", 0o777, true))
	check(root.SetPermission(ctx, "/pub", 0o777))
	check(root.WriteFile(ctx, "/pub/b.dat", make([]byte, 3<<20), client.CreateOptions{Replication: 3, BlockSize: 1 << 20, Perm: 0o644}))
	alice, err := c.ClientAs("alice")
	check(err)
	defer alice.Close()
	check(alice.WriteFile(ctx, "/pub/a.dat", make([]byte, 8<<20), client.CreateOptions{Replication: 3, BlockSize: 8 << 20, Perm: 0o644}))

	leader := c.Namenode(c.Leader())
	bob := api.NewClientServiceClient(dial(leader.GRPCAddr(), "bob"))
	var prof *os.File
	if *cpuprofile != "" {
		prof, err = os.Create(*cpuprofile)
		check(err)
	}
	var all []Result
	for run := range *runs {
		var r Result
		lat := timeReads(bob, *measure)
		r.UnloadedP50Ms, r.UnloadedP99Ms, r.Calls = pct(lat, 50), pct(lat, 99), len(lat)
		before := refusals(c)
		fctx, stop := context.WithCancel(ctx)
		a := &attacker{c: c, leader: leader.GRPCAddr(), http: leader.HTTPAddr(), on: map[string]bool{}}
		for _, k := range strings.Split(*attacks, ",") {
			a.on[k] = true
		}
		a.start(fctx, *writers, *completers, *readStreams, *httpConns)
		time.Sleep(time.Second) // the attacks reach their limits
		if prof != nil && run == 0 {
			check(pprof.StartCPUProfile(prof))
		}
		lat = timeReads(bob, *measure)
		if prof != nil && run == 0 {
			pprof.StopCPUProfile()
		}
		r.FloodP50Ms, r.FloodP99Ms = pct(lat, 50), pct(lat, 99)
		r.Refused = diff(refusals(c), before)
		r.AdmittedA = map[string]float64{"mkdirs_ok": float64(a.writesOK.Load()), "completes_ok": float64(a.completesOK.Load())}
		stop()
		a.wg.Wait()
		r.P99Ratio = r.FloodP99Ms / r.UnloadedP99Ms
		all = append(all, r)
		log.Printf("run %d: unloaded p99 %.2f ms, flood p99 %.2f ms, ratio %.2f", run, r.UnloadedP99Ms, r.FloodP99Ms, r.P99Ratio)
		time.Sleep(6 * time.Second) // waiting Completes time out, stalled reads are ended
	}
	med := median(all)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "figure\tvalue\tnote\n")
	fmt.Fprintf(tw, "B GetBlockLocations p50 unloaded\t%.3f ms\t%d calls a phase, sequential, on the leader\n", med.UnloadedP50Ms, med.Calls)
	fmt.Fprintf(tw, "B GetBlockLocations p99 unloaded\t%.3f ms\t\n", med.UnloadedP99Ms)
	fmt.Fprintf(tw, "B GetBlockLocations p50 under flood\t%.3f ms\t\n", med.FloodP50Ms)
	fmt.Fprintf(tw, "B GetBlockLocations p99 under flood\t%.3f ms\t\n", med.FloodP99Ms)
	fmt.Fprintf(tw, "p99 under flood / unloaded\t%.2fx\tfloor: <= 2x (median of the runs' ratios)\n", med.P99Ratio)
	for _, k := range sortedKeys(med.Refused) {
		fmt.Fprintf(tw, "A refused: %s\t%.0f\tserver counter, flood phase\n", k, med.Refused[k])
	}
	for _, k := range sortedKeys(med.AdmittedA) {
		fmt.Fprintf(tw, "A admitted: %s\t%.0f\tflood phase\n", k, med.AdmittedA[k])
	}
	fmt.Fprintf(tw, "runs\t%d\t%s a phase\n", *runs, *measure)
	tw.Flush()
	if *jsonOut != "" {
		check(results.WriteJSON(*jsonOut, map[string]any{"runs": all, "median": med}))
	}
}

// withRefusalRate is l (the defaults if unset) with the refusal budget
// rate r.
func withRefusalRate(l serve.Limits, r float64) serve.Limits {
	if l == (serve.Limits{}) {
		l = serve.DefaultLimits()
	}
	l.RefusalRate = r
	return l
}

// timeReads times B's sequential GetBlockLocations calls for d.
func timeReads(bob api.ClientServiceClient, d time.Duration) []time.Duration {
	var lat []time.Duration
	for end := time.Now().Add(d); time.Now().Before(end); {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		t0 := time.Now()
		_, err := bob.GetBlockLocations(ctx, &api.GetBlockLocationsRequest{Path: "/pub/b.dat", Length: 3 << 20})
		lat = append(lat, time.Since(t0))
		cancel()
		if err != nil {
			log.Printf("B's read failed: %v", err)
		}
	}
	return lat
}

func pct(lat []time.Duration, p int) float64 {
	s := slices.Clone(lat)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return float64(s[min(len(s)-1, len(s)*p/100)].Microseconds()) / 1000
}

// dial connects to addr as user (simple auth), with extra options.
func dial(addr, user string, opts ...grpc.DialOption) *grpc.ClientConn {
	opts = append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(security.SimpleCredentials(security.Identity{Role: security.RoleUser, Name: user})))
	conn, err := grpc.NewClient(addr, opts...)
	check(err)
	return conn
}

// attacker is user A's flood; start runs it until ctx ends.
type attacker struct {
	c                     *localcluster.Cluster
	leader, http          string
	on                    map[string]bool // attacks to run
	wg                    sync.WaitGroup
	writesOK, completesOK atomic.Int64
}

func (a *attacker) start(ctx context.Context, writers, completers, readStreams, httpConns int) {
	go1 := func(f func()) { a.wg.Go(f) }
	// Streams: fill one connection, and queue calls behind it.
	conn := dial(a.leader, "alice")
	go1(func() { <-ctx.Done(); conn.Close() })
	h := healthpb.NewHealthClient(conn)
	for range (256 + 16) * b2i(a.on["streams"]) {
		go1(func() {
			if w, err := h.Watch(ctx, &healthpb.HealthCheckRequest{}); err == nil {
				for _, err := w.Recv(); err == nil; _, err = w.Recv() {
				}
			}
		})
	}
	// Each attack has connections of its own, so that one attack's
	// refusals (which slow the connection they arrive on) never throttle
	// another: the strongest flood, not the one the penalty box likes.
	nnConn := func() api.ClientServiceClient {
		c := dial(a.leader, "alice")
		go1(func() { <-ctx.Done(); c.Close() })
		return api.NewClientServiceClient(c)
	}
	nn := nnConn()
	var seq atomic.Int64
	for g := range writers * b2i(a.on["writes"]) {
		nn := nnConn() // one connection each: no shared budget to hide behind
		go1(func() {
			for ctx.Err() == nil {
				_, err := nn.Mkdirs(ctx, &api.MkdirsRequest{Path: fmt.Sprintf("/pub/m%d/%d", g, seq.Add(1)), Mode: 0o755, Parents: true})
				if err == nil {
					a.writesOK.Add(1)
				}
			}
		})
	}
	nnc := nnConn()
	for range completers * b2i(a.on["completes"]) {
		nn := nnc
		go1(func() {
			for ctx.Err() == nil {
				p := fmt.Sprintf("/pub/cw%d", seq.Add(1))
				cr, err := nn.Create(ctx, &api.CreateRequest{Path: p, Replication: 1, BlockSize: 1 << 20, Mode: 0o644})
				if err != nil {
					backoff(ctx, err)
					continue
				}
				ab, err := nn.AddBlock(ctx, &api.AddBlockRequest{Path: p, InodeId: cr.Status.InodeId})
				if err != nil {
					backoff(ctx, err)
					continue
				}
				b := ab.Block.Block
				b.Length = 10 // never written: no datanode reports it
				if _, err = nn.Complete(ctx, &api.CompleteRequest{Path: p, InodeId: cr.Status.InodeId, Blocks: []*api.Block{b}}); err == nil {
					a.completesOK.Add(1)
				}
			}
		})
	}
	// Never-read ReadBlock streams on every datanode holding A's block.
	locs, err := nn.GetBlockLocations(ctx, &api.GetBlockLocationsRequest{Path: "/pub/a.dat", Length: 8 << 20})
	if err == nil {
		err = client.ExpandLocations(locs)
	}
	if err == nil && len(locs.Blocks) > 0 {
		lb := locs.Blocks[0]
		tok := lb.Token
		if len(tok) == 0 {
			tok = locs.Token // per-request token mode: one token for the file
		}
		for _, dn := range lb.Locations {
			dc := api.NewDataServiceClient(dial(dn.GetAddr(), "alice", grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10)))
			for range readStreams * b2i(a.on["reads"]) {
				go1(func() {
					for ctx.Err() == nil {
						s, err := dc.ReadBlock(ctx, &api.ReadBlockRequest{Block: lb.Block, InodeId: locs.GetInodeId(), Token: tok})
						if err != nil {
							backoff(ctx, err)
							continue
						}
						if _, err := s.Header(); err != nil || s.Trailer() != nil {
							backoff(ctx, err) // refused: try again, as an attacker would
							continue
						}
						<-ctx.Done() // held: read nothing until the end
					}
				})
			}
		}
	} else {
		log.Printf("no locations for A's block: %v", err)
	}
	// Stalled HTTP: half the connections never finish their headers, half
	// never finish their body; each reconnects when the server closes it.
	for i := range httpConns * b2i(a.on["http"]) {
		req := "PUT /webhdfs/v1/pub/h?op=CREATE&user.name=alice HTTP/1.1\r\nHost: x\r\nContent-Length: 1048576\r\n\r\n" + string(make([]byte, 100))
		if i%2 == 0 {
			req = "GET /webhdfs/v1/pub?op=LISTSTATUS HTTP/1.1\r\nHost: x\r\n"
		}
		go1(func() {
			for ctx.Err() == nil {
				conn, err := net.Dial("tcp", a.http)
				if err != nil {
					return
				}
				go func() { <-ctx.Done(); conn.Close() }()
				io.WriteString(conn, req)
				io.Copy(io.Discard, conn) // until the server's timeout closes it
				conn.Close()
			}
		})
	}
}

// backoff waits a refused call's retry hint (or 10 ms): A's completers
// keep the waits full without spinning on the rate limit.
func backoff(ctx context.Context, err error) {
	d := 10 * time.Millisecond
	if status.Code(err) == codes.ResourceExhausted {
		d = 50 * time.Millisecond
	}
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// refusals sums the limits' refusal counters over every node.
func refusals(c *localcluster.Cluster) map[string]float64 {
	out := map[string]float64{}
	add := func(reg *prometheus.Registry) {
		mfs, err := reg.Gather()
		check(err)
		for _, mf := range mfs {
			name := mf.GetName()
			for _, m := range mf.GetMetric() {
				v := m.GetCounter().GetValue()
				switch name {
				case "blockfs_namenode_rate_limited_total", "blockfs_namenode_fair_backoffs_total", "blockfs_grpc_streams_at_limit_total", "blockfs_http_stalled_total":
					out[name] += v
				case "blockfs_namenode_limit_refusals_total", "blockfs_datanode_read_refused_total":
					for _, l := range m.GetLabel() {
						out[name+"{"+l.GetValue()+"}"] += v
					}
				}
			}
		}
	}
	for _, n := range c.Namenodes() {
		add(n.Registry())
	}
	for _, d := range c.Datanodes() {
		add(d.Registry())
	}
	return out
}

func diff(after, before map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		out[k] = v - before[k]
	}
	return out
}

func median(rs []Result) Result {
	f := func(g func(Result) float64) float64 {
		var xs []float64
		for _, r := range rs {
			xs = append(xs, g(r))
		}
		return results.Median(xs)
	}
	m := Result{
		UnloadedP50Ms: f(func(r Result) float64 { return r.UnloadedP50Ms }),
		UnloadedP99Ms: f(func(r Result) float64 { return r.UnloadedP99Ms }),
		FloodP50Ms:    f(func(r Result) float64 { return r.FloodP50Ms }),
		FloodP99Ms:    f(func(r Result) float64 { return r.FloodP99Ms }),
		P99Ratio:      f(func(r Result) float64 { return r.P99Ratio }),
		Calls:         int(f(func(r Result) float64 { return float64(r.Calls) })),
		Refused:       map[string]float64{},
		AdmittedA:     map[string]float64{},
	}
	for _, k := range sortedKeys(rs[0].Refused) {
		m.Refused[k] = f(func(r Result) float64 { return r.Refused[k] })
	}
	for _, k := range sortedKeys(rs[0].AdmittedA) {
		m.AdmittedA[k] = f(func(r Result) float64 { return r.AdmittedA[k] })
	}
	return m
}

func sortedKeys(m map[string]float64) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
