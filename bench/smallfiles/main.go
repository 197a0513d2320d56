// Command smallfiles measures small files end to end through the Go
// client, the workload SeaweedFS's `weed benchmark` headlines: --files
// files of --size bytes (plus 0..--jitter-1 random bytes) written by
// --clients concurrent clients, then every one read back and its bytes
// compared. It reports files/s and the p50/p90/p99 latency of each phase,
// and where a file's time goes step by step (create, write, close; locate,
// read), as a table and, with --json, as JSON. Every figure is the median
// of --rounds rounds, each on fresh paths.
//
// By default it runs against an in-process localcluster of 3 namenodes and
// 3 datanodes; --namenodes points it at a cluster started by hand (simple
// auth). Each client is a user of its own (sf0, sf1, ...), as separate
// clients of a real cluster are, so the namenode's per-user write rate
// (meant for abuse, docs/OPERATIONS.md) applies to each client alone.
//
// Each Create allocates the file's first block (client.CreateOptions.
// FirstBlock); --first-block=false measures the separate AddBlock.
// --read-by writer has each client read back the files it wrote, and
// --location-cache TTL turns on every client's location cache
// (client.Config.LocationCacheTTL): a file read back by its writer then
// costs one datanode call.
// --put writes each file with client.PutFile (one Raft entry per file:
// PrepareFile, the block side by side, PutFile) instead of Create, Write
// and Close; its one write step is "put".
// --cpuprofile with --profile-phase write or read profiles one phase.
//
//	go run ./bench/smallfiles --files 20000 --clients 16 --replication 3
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/blockfs/blockfs/bench/internal/results"
	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/localcluster"
)

// step names, in the order a file takes them.
var (
	writeSteps = []string{"create", "write", "close"}
	putSteps   = []string{"put"}
	readSteps  = []string{"locate", "read"}
)

// Phase is one phase's figures: files/s, latency per file and per step
// (milliseconds).
type Phase struct {
	FilesPerSec float64            `json:"files_per_sec"`
	P50Ms       float64            `json:"p50_ms"`
	P90Ms       float64            `json:"p90_ms"`
	P99Ms       float64            `json:"p99_ms"`
	StepP50Ms   map[string]float64 `json:"step_p50_ms"`
	StepP99Ms   map[string]float64 `json:"step_p99_ms"`
	Errors      int                `json:"errors"`
	// CPUMsPerFile is this process's CPU time (user + system) in the
	// phase per file: with the in-process cluster, every node's and
	// client's, the figure least moved by other load on the machine.
	CPUMsPerFile float64 `json:"cpu_ms_per_file"`
	// ClusterCPUMsPerFile is, with --procs, the 6 server processes' CPU
	// time (user + system) in the phase per file: what a file costs the
	// cluster, a second view of a change beside the rate.
	ClusterCPUMsPerFile float64 `json:"cluster_cpu_ms_per_file,omitempty"`
}

// Round is one round's write and read phases.
type Round struct {
	Write Phase `json:"write"`
	Read  Phase `json:"read"`
}

type config struct {
	files, size, jitter, clients, rounds int
	replication                          uint32
	firstBlock                           bool
	put                                  bool // --put: client.PutFile
	readBy                               string
	locCache                             time.Duration
	procs                                string // --procs
}

// writeSteps names the steps of a file's write.
func (c config) writeSteps() []string {
	if c.put {
		return putSteps
	}
	return writeSteps
}

func main() {
	var cfg config
	flag.IntVar(&cfg.files, "files", 20000, "files per round")
	flag.IntVar(&cfg.size, "size", 1024, "bytes per file, before the jitter")
	flag.IntVar(&cfg.jitter, "jitter", 64, "add 0..jitter-1 random bytes to each file (0: none)")
	flag.IntVar(&cfg.clients, "clients", 16, "concurrent clients, each its own user")
	flag.IntVar(&cfg.rounds, "rounds", 2, "rounds; every figure is the median")
	repl := flag.Uint("replication", 3, "replicas per file")
	flag.BoolVar(&cfg.firstBlock, "first-block", true, "have each Create allocate the file's first block (client.CreateOptions.FirstBlock); false: a separate AddBlock, as before")
	flag.BoolVar(&cfg.put, "put", false, "write each file with client.PutFile (PrepareFile, the block side by side, PutFile: one Raft entry) instead of Create, Write and Close")
	flag.StringVar(&cfg.readBy, "read-by", "any", "which client reads a file back: any (the next free one) or writer (the one that wrote it, as a program reading its own output does; with --location-cache it reads from its cache)")
	flag.DurationVar(&cfg.locCache, "location-cache", 0, "client.Config.LocationCacheTTL of every client (0: off): a client reads back a file it wrote or opened with no namenode call")
	namenodes := flag.String("namenodes", "", "comma-separated namenode gRPC addresses of a running cluster (simple auth); empty: an in-process cluster of 3 namenodes and 3 datanodes")
	flag.StringVar(&cfg.procs, "procs", "", "start the cluster as 3 namenode and 3 datanode processes from the binaries in this directory (go build -o DIR ./cmd/namenode ./cmd/datanode), each its own Go runtime as deployed, in a temporary directory; empty: in-process")
	jsonOut := flag.String("json", "", "write every round and the medians as JSON to this file")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the rounds (the whole process: cluster and clients) to this file")
	profilePhase := flag.String("profile-phase", "both", "what --cpuprofile covers: both phases of every round, or the first round's write or read phase")
	flag.Parse()
	cfg.replication = uint32(*repl)
	if cfg.readBy != "any" && cfg.readBy != "writer" {
		log.Fatal("--read-by must be any or writer")
	}
	if cfg.files < 1 || cfg.clients < 1 || cfg.rounds < 1 || cfg.size < 0 || cfg.jitter < 0 || cfg.replication < 1 {
		log.Fatal("--files, --clients, --rounds and --replication must be at least 1, --size and --jitter at least 0")
	}

	ctx := context.Background()
	addrs := strings.Split(*namenodes, ",")
	clusterCPU := func() time.Duration { return 0 } // the server processes' CPU time, with --procs
	switch {
	case cfg.procs != "" && *namenodes != "":
		log.Fatal("--procs and --namenodes are exclusive")
	case cfg.procs != "":
		dir, err := os.MkdirTemp("", "smallfiles-procs-")
		check(err)
		defer os.RemoveAll(dir)
		pc, err := startProcs(ctx, cfg.procs, dir)
		check(err)
		defer pc.stop()
		addrs, clusterCPU = pc.addrs, pc.cpuTime
	case *namenodes == "":
		c, err := localcluster.Start(ctx, localcluster.Config{Namenodes: 3, Datanodes: 3})
		check(err)
		defer c.Close()
		check(c.WaitDatanodes(ctx))
		addrs = c.NamenodeAddrs()
	}
	clients := make([]*client.Client, cfg.clients)
	for i := range clients {
		cc := client.DefaultConfig(addrs...)
		cc.User = fmt.Sprintf("sf%d", i)
		cc.LocationCacheTTL = cfg.locCache
		c, err := client.New(cc)
		check(err)
		defer c.Close()
		clients[i] = c
	}
	root := client.DefaultConfig(addrs...)
	root.User = "root"
	rc, err := client.New(root)
	check(err)
	defer rc.Close()

	if *profilePhase != "both" && *profilePhase != "write" && *profilePhase != "read" {
		log.Fatal("--profile-phase must be both, write or read")
	}
	// profile runs a phase's fn, under the CPU profile if --profile-phase
	// names it: with both, every round's; with one, the first round's
	// only (a profile file holds one start to stop).
	var prof *os.File
	if *cpuprofile != "" {
		var err error
		prof, err = os.Create(*cpuprofile)
		check(err)
		defer prof.Close()
		if *profilePhase == "both" {
			check(pprof.StartCPUProfile(prof))
			defer pprof.StopCPUProfile()
		}
	}
	profile := func(r int, phase string, fn func() Phase) Phase {
		if prof == nil || r > 0 || *profilePhase != phase {
			return fn()
		}
		check(pprof.StartCPUProfile(prof))
		defer pprof.StopCPUProfile()
		return fn()
	}
	var rounds []Round
	for r := range cfg.rounds {
		base := fmt.Sprintf("/smallfiles/%d-%d", time.Now().UnixNano(), r)
		for i := range cfg.clients { // a directory per client's share, open to all
			d := fmt.Sprintf("%s/c%d", base, i)
			check(rc.Mkdirs(ctx, d, 0o777, true))
			for _, p := range []string{"/smallfiles", base, d} {
				check(rc.SetPermission(ctx, p, 0o777))
			}
		}
		data := files(cfg, r)
		wrote := make([][]int, cfg.clients) // by client: the files it wrote
		var wmu sync.Mutex
		w := profile(r, "write", func() Phase {
			return run(ctx, clients, shared(cfg.files, cfg.clients), cfg.writeSteps(), clusterCPU, func(ctx context.Context, ci int, c *client.Client, i int, t *timer) error {
				p, o := fmt.Sprintf("%s/c%d/f%d", base, i%cfg.clients, i), client.CreateOptions{Perm: 0o644, Replication: cfg.replication, FirstBlock: cfg.firstBlock}
				var err error
				if cfg.put {
					err = c.PutFile(ctx, p, data[i], o)
					t.mark()
				} else {
					err = write(ctx, c, p, data[i], o, t)
				}
				wmu.Lock()
				wrote[ci] = append(wrote[ci], i)
				wmu.Unlock()
				return err
			})
		})
		queues := shared(cfg.files, cfg.clients)
		if cfg.readBy == "writer" {
			queues = byClient(wrote)
		}
		rd := profile(r, "read", func() Phase {
			return run(ctx, clients, queues, readSteps, clusterCPU, func(ctx context.Context, _ int, c *client.Client, i int, t *timer) error {
				return read(ctx, c, fmt.Sprintf("%s/c%d/f%d", base, i%cfg.clients, i), data[i], t)
			})
		})
		rounds = append(rounds, Round{Write: w, Read: rd})
		log.Printf("round %d: write %.0f files/s (p50 %.1f ms), read %.0f files/s (p50 %.1f ms), errors %d/%d",
			r, w.FilesPerSec, w.P50Ms, rd.FilesPerSec, rd.P50Ms, w.Errors, rd.Errors)
	}
	med := Round{Write: medianPhase(rounds, func(r Round) Phase { return r.Write }), Read: medianPhase(rounds, func(r Round) Phase { return r.Read })}
	pprof.StopCPUProfile()
	printTable(os.Stdout, cfg, med)
	if *jsonOut != "" {
		check(results.WriteJSON(*jsonOut, map[string]any{"rounds": rounds, "median": med,
			"files": cfg.files, "size": cfg.size, "jitter": cfg.jitter, "clients": cfg.clients, "replication": cfg.replication,
			"read_by": cfg.readBy, "location_cache": cfg.locCache.String(), "put": cfg.put}))
	}
	for _, r := range rounds {
		if r.Write.Errors+r.Read.Errors > 0 {
			os.Exit(1)
		}
	}
}

// files returns round r's file contents, seeded so every run writes the
// same bytes.
func files(cfg config, r int) [][]byte {
	rng := rand.New(rand.NewPCG(uint64(r), 42))
	out := make([][]byte, cfg.files)
	for i := range out {
		n := cfg.size
		if cfg.jitter > 0 {
			n += rng.IntN(cfg.jitter)
		}
		out[i] = make([]byte, n)
		for j := range out[i] {
			out[i][j] = byte(rng.Uint32())
		}
	}
	return out
}

// timer records the time of each step of one file.
type timer struct {
	last  time.Time
	steps []time.Duration
}

func (t *timer) mark() {
	now := time.Now()
	t.steps = append(t.steps, now.Sub(t.last))
	t.last = now
}

func write(ctx context.Context, c *client.Client, p string, data []byte, o client.CreateOptions, t *timer) error {
	w, err := c.Create(ctx, p, o)
	if err != nil {
		return err
	}
	t.mark()
	if _, err := w.Write(data); err != nil {
		w.Close()
		return err
	}
	t.mark()
	err = w.Close()
	t.mark()
	return err
}

func read(ctx context.Context, c *client.Client, p string, want []byte, t *timer) error {
	r, err := c.Open(ctx, p)
	if err != nil {
		return err
	}
	t.mark()
	got, err := io.ReadAll(r)
	r.Close()
	t.mark()
	if err != nil {
		return err
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("%s: read %d bytes that differ from the %d written", p, len(got), len(want))
	}
	return nil
}

// shared is one queue of files 0..n-1 that every one of clients takes
// from: each client takes the next file as it finishes one.
func shared(n, clients int) []chan int {
	q := make(chan int, n)
	for i := range n {
		q <- i
	}
	close(q)
	out := make([]chan int, clients)
	for i := range out {
		out[i] = q
	}
	return out
}

// byClient gives client k the files of lists[k] only.
func byClient(lists [][]int) []chan int {
	out := make([]chan int, len(lists))
	for k, l := range lists {
		out[k] = make(chan int, len(l))
		for _, i := range l {
			out[k] <- i
		}
		close(out[k])
	}
	return out
}

// run does the queued files' op over the clients, client k taking files
// from queues[k], and returns the phase's figures; clusterCPU is the
// servers' CPU time (0 when they run in this process).
func run(ctx context.Context, clients []*client.Client, queues []chan int, steps []string, clusterCPU func() time.Duration, op func(context.Context, int, *client.Client, int, *timer) error) Phase {
	var (
		mu    sync.Mutex
		total []time.Duration
		per   = make([][]time.Duration, len(steps))
		errs  int
		wg    sync.WaitGroup
		n     int
	)
	seen := map[chan int]bool{}
	for _, q := range queues {
		if !seen[q] {
			seen[q] = true
			n += len(q)
		}
	}
	start, cpu0, ccpu0 := time.Now(), cpuTime(), clusterCPU()
	for ci, c := range clients {
		wg.Go(func() {
			for i := range queues[ci] {
				t := &timer{last: time.Now()}
				t0 := t.last
				err := op(ctx, ci, c, i, t)
				d := time.Since(t0)
				mu.Lock()
				if err != nil {
					if errs == 0 {
						log.Printf("first error: %v", err)
					}
					errs++
				} else {
					total = append(total, d)
					for k := range steps {
						per[k] = append(per[k], t.steps[k])
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	el, cpu, cc := time.Since(start), cpuTime()-cpu0, clusterCPU()-ccpu0
	ph := Phase{FilesPerSec: float64(n-errs) / el.Seconds(), P50Ms: pct(total, 50), P90Ms: pct(total, 90), P99Ms: pct(total, 99),
		StepP50Ms: map[string]float64{}, StepP99Ms: map[string]float64{}, Errors: errs,
		CPUMsPerFile: float64(cpu.Microseconds()) / 1000 / float64(n), ClusterCPUMsPerFile: float64(cc.Microseconds()) / 1000 / float64(n)}
	for k, s := range steps {
		ph.StepP50Ms[s], ph.StepP99Ms[s] = pct(per[k], 50), pct(per[k], 99)
	}
	return ph
}

func pct(lat []time.Duration, p int) float64 {
	if len(lat) == 0 {
		return 0
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	return float64(s[min(len(s)-1, len(s)*p/100)].Microseconds()) / 1000
}

func medianPhase(rs []Round, get func(Round) Phase) Phase {
	f := func(g func(Phase) float64) float64 {
		var xs []float64
		for _, r := range rs {
			xs = append(xs, g(get(r)))
		}
		return results.Median(xs)
	}
	ph := Phase{
		FilesPerSec:         f(func(p Phase) float64 { return p.FilesPerSec }),
		P50Ms:               f(func(p Phase) float64 { return p.P50Ms }),
		P90Ms:               f(func(p Phase) float64 { return p.P90Ms }),
		P99Ms:               f(func(p Phase) float64 { return p.P99Ms }),
		Errors:              int(f(func(p Phase) float64 { return float64(p.Errors) })),
		CPUMsPerFile:        f(func(p Phase) float64 { return p.CPUMsPerFile }),
		ClusterCPUMsPerFile: f(func(p Phase) float64 { return p.ClusterCPUMsPerFile }),
		StepP50Ms:           map[string]float64{},
		StepP99Ms:           map[string]float64{},
	}
	for s := range get(rs[0]).StepP50Ms {
		ph.StepP50Ms[s] = f(func(p Phase) float64 { return p.StepP50Ms[s] })
		ph.StepP99Ms[s] = f(func(p Phase) float64 { return p.StepP99Ms[s] })
	}
	return ph
}

// printTable prints the seed's table shape (setup, copies, writes/s,
// reads/s, write p50 / p99), then the steps.
func printTable(w io.Writer, cfg config, m Round) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "setup\tcopies\twrites/s\treads/s\twrite p50 / p99 ms\tread p50 / p99 ms\n")
	where := "in-process"
	if cfg.procs != "" {
		where = "processes"
	}
	api := "Create/Write/Close"
	if cfg.put {
		api = "PutFile"
	}
	fmt.Fprintf(tw, "blockfs (%s, %s), %d clients, %d B files (+0..%d), read by %s, location cache %v\t%d\t%.0f\t%.0f\t%.1f / %.1f\t%.1f / %.1f\n",
		where, api, cfg.clients, cfg.size, max(cfg.jitter-1, 0), cfg.readBy, cfg.locCache, cfg.replication, m.Write.FilesPerSec, m.Read.FilesPerSec,
		m.Write.P50Ms, m.Write.P99Ms, m.Read.P50Ms, m.Read.P99Ms)
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "step\tp50 ms\tp99 ms\n")
	for _, s := range cfg.writeSteps() {
		fmt.Fprintf(tw, "write: %s\t%.2f\t%.2f\n", s, m.Write.StepP50Ms[s], m.Write.StepP99Ms[s])
	}
	for _, s := range readSteps {
		fmt.Fprintf(tw, "read: %s\t%.2f\t%.2f\n", s, m.Read.StepP50Ms[s], m.Read.StepP99Ms[s])
	}
	fmt.Fprintf(tw, "write: CPU ms per file\t%.2f\t(this process)\n", m.Write.CPUMsPerFile)
	fmt.Fprintf(tw, "read: CPU ms per file\t%.2f\t(this process)\n", m.Read.CPUMsPerFile)
	if cfg.procs != "" {
		fmt.Fprintf(tw, "write: cluster CPU ms per file\t%.2f\t(the 6 server processes)\n", m.Write.ClusterCPUMsPerFile)
		fmt.Fprintf(tw, "read: cluster CPU ms per file\t%.2f\t(the 6 server processes)\n", m.Read.ClusterCPUMsPerFile)
	}
	fmt.Fprintf(tw, "rounds\t%d\t%d files each; medians\n", cfg.rounds, cfg.files)
	tw.Flush()
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

// cpuTime is the CPU time this process has used (user + system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
