// Command tokenverify measures the block-token caches KUDU-3210 style, on
// both sides: the namenode's issuer (FileToken) and the datanode's verifier
// (Verify). Each side runs three workloads at 1 and 2 goroutines:
//
//   - none: no cache (per-request signing; verification with the cache off)
//   - hit:  a cache holding every key of a small hit set (--hit-set)
//   - miss: a cache of --cache-size entries cycled over --miss-factor times
//     as many distinct (user, inode) pairs, so nearly every call misses and
//     evicts
//
// and, with --global-mutex, the verifier's none and hit again with every
// call under one mutex (the KUDU-3210 anti-pattern) for contrast. Every
// series is measured --runs times, interleaved so that all of them see the
// same noise, and the median is reported; ratios are within one side.
//
//	go run ./bench/tokenverify --json out.json
package main

import (
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/blockfs/blockfs/bench/internal/results"

	"github.com/blockfs/blockfs/security"
)

// Row is one line of the JSON output: the median of the runs of one series.
type Row struct {
	Side        string    `json:"side"`     // issuer or verifier
	Workload    string    `json:"workload"` // none, hit or miss
	Goroutines  int       `json:"goroutines"`
	GlobalMutex bool      `json:"global_mutex"`
	OpsPerSec   float64   `json:"ops_per_sec"`         // median of Runs
	Runs        []float64 `json:"runs_ops_per_sec"`    // every run, in order
	CPUPerOp    float64   `json:"cpu_us_per_op"`       // median of CPURuns
	CPURuns     []float64 `json:"runs_cpu_us_per_op"`  // process CPU time per operation, every run
	HitRatio    *float64  `json:"hit_ratio,omitempty"` // cache hits / lookups over all runs; absent without a cache
	Speedup     float64   `json:"speedup"`             // vs 1 goroutine, workload none, same side, no global mutex
}

func main() {
	jsonOut := flag.String("json", "", "write rows as JSON to this file")
	duration := flag.Duration("duration", time.Second, "measuring time per series and run")
	runs := flag.Int("runs", 5, "runs per series; the median is reported")
	cacheSize := flag.Int("cache-size", 4096, "issuer and verifier cache size (entries)")
	hitSet := flag.Int("hit-set", 1000, "distinct keys of the hit workload (at most --cache-size)")
	missFactor := flag.Int("miss-factor", 8, "the miss workload cycles over this many times --cache-size distinct keys")
	gList := flag.String("goroutines", "1,2", "goroutine counts, comma-separated (1 is required: speedups are against it)")
	globalMutex := flag.Bool("global-mutex", true, "also measure the verifier's none and hit under one global mutex")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run")
	flag.Parse()
	log.SetFlags(0)
	gs := parseGoroutines(*gList)
	if *hitSet < 1 || *hitSet > *cacheSize || *missFactor < 2 || *runs < 1 {
		log.Fatal("need 1 <= --hit-set <= --cache-size, --miss-factor >= 2, --runs >= 1")
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}

	cfg := security.DefaultConfig()
	cfg.TokenLifetime = time.Hour // outlives any run
	cfg.CacheSize, cfg.VerifyCacheSize = *cacheSize, *cacheSize
	km, err := security.NewKeyManager(cfg)
	if err != nil {
		log.Fatal(err)
	}
	pk, err := km.Rotate(time.Now())
	if err != nil {
		log.Fatal(err)
	}
	pub := security.NewKeySet(cfg.TokenLifetime, cfg.ClockSkew)
	if err := pub.Add(pk); err != nil {
		log.Fatal(err)
	}
	pr := cfg
	pr.Mode = security.PerRequest
	signer, err := security.NewIssuer(pr, km, nil)
	if err != nil {
		log.Fatal(err)
	}
	keys := newKeySet(*missFactor**cacheSize, signer)
	fmt.Printf("tokenverify: cache %d entries, hit set %d keys, miss set %d keys, tokens ~%d bytes, %v x %d runs per series, GOMAXPROCS=%d NumCPU=%d\n",
		*cacheSize, *hitSet, len(keys.toks), len(keys.toks[0]), *duration, *runs, runtime.GOMAXPROCS(0), runtime.NumCPU())

	var all []*series
	for _, w := range []string{"none", "miss", "hit"} {
		all = append(all, newIssuerSeries(cfg, km, w, keys, *hitSet))
	}
	for _, w := range []string{"none", "miss", "hit"} {
		all = append(all, newVerifierSeries(cfg, pub, w, keys, *hitSet, false))
	}
	if *globalMutex {
		for _, w := range []string{"none", "hit"} {
			all = append(all, newVerifierSeries(cfg, pub, w, keys, *hitSet, true))
		}
	}
	for _, s := range all {
		if s.workload == "none" {
			_, _ = s.run(1, 100*time.Millisecond)
		} else {
			s.warm()
		}
	}

	// The control runs right before the rows it explains, so both see the
	// same load from whatever else shares the machine.
	c1, c2 := control(1, *duration), control(2, *duration)

	type acc struct {
		ops, cpu   []float64
		hits, seen float64
	}
	res := make([][]acc, len(all))
	for i := range res {
		res[i] = make([]acc, len(gs))
	}
	// Every run measures every series once, so the floors can compare
	// series within one run: the machine is shared and its load drifts.
	for r := 0; r < *runs; r++ {
		for i, s := range all {
			for j, g := range gs {
				h0, m0 := s.counters()
				ops, cpu := s.run(g, *duration)
				h1, m1 := s.counters()
				a := &res[i][j]
				a.ops = append(a.ops, ops)
				a.cpu = append(a.cpu, cpu*1e6)
				a.hits += h1 - h0
				a.seen += h1 - h0 + m1 - m0
			}
		}
	}
	var rows []Row
	for i, s := range all {
		for j, g := range gs {
			a := res[i][j]
			row := Row{Side: s.side, Workload: s.workload, Goroutines: g, GlobalMutex: s.global, OpsPerSec: results.Median(a.ops), Runs: a.ops, CPUPerOp: results.Median(a.cpu), CPURuns: a.cpu}
			if a.seen > 0 {
				hr := a.hits / a.seen
				row.HitRatio = &hr
			}
			rows = append(rows, row)
		}
	}
	for i := range rows {
		rows[i].Speedup = rows[i].OpsPerSec / find(rows, rows[i].Side, "none", 1, false)
	}
	printTable(rows)
	printFloors(rows, gs, c1, c2)

	if *jsonOut != "" {
		if err := results.WriteJSON(*jsonOut, rows); err != nil {
			log.Fatal(err)
		}
	}
}

func parseGoroutines(s string) []int {
	var gs []int
	for _, f := range strings.Split(s, ",") {
		g, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || g < 1 {
			log.Fatalf("bad --goroutines %q", s)
		}
		gs = append(gs, g)
	}
	if !slices.Contains(gs, 1) {
		log.Fatal("--goroutines must include 1")
	}
	return gs
}

// find returns the median ops/s of one series at g goroutines (NaN if it
// was not measured).
func find(rows []Row, side, workload string, g int, global bool) float64 {
	if r := findRow(rows, side, workload, g, global); r != nil {
		return r.OpsPerSec
	}
	return math.NaN()
}

func findRow(rows []Row, side, workload string, g int, global bool) *Row {
	for i, r := range rows {
		if r.Side == side && r.Workload == workload && r.Goroutines == g && r.GlobalMutex == global {
			return &rows[i]
		}
	}
	return nil
}
