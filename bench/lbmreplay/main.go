// Command lbmreplay reproduces the KUDU-3779 startup-replay table for the
// lbm block store, with honest baselines: for each test it builds a
// population of tiny blocks in batches on the real file system, deletes a
// share of them, then times store reopens with three replay paths:
//
//   - streaming: Kudu's path, two ReadAt calls per record (threshold 0,
//     lbm.StreamingPread);
//   - buffered-streaming: one sequential reader through a 1 MiB readahead
//     window, the strongest streaming reader (threshold 0,
//     lbm.StreamingBuffered);
//   - inmem: one read of the whole metadata file (threshold 64 MiB).
//
// After one untimed warm-up reopen per path (it also does the startup
// compaction), --reopens repetitions each time one reopen of every path,
// the order rotating between repetitions. Every figure printed is the
// median over the repetitions: the times of each path, and the speedups,
// which are the medians of the per-repetition ratios. The page cache is
// not dropped unless --drop-caches is given; the program says whether the
// metadata files were resident when it timed them.
//
//	go run ./bench/lbmreplay --groups A,B,C,D --scale 0.2 --json out.json
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	benchresults "github.com/blockfs/blockfs/bench/internal/results"

	"github.com/blockfs/blockfs/lbm"
)

type test struct {
	group, name string
	batches     int
	perBatch    int
	dirs        int
	delPct      float64
	maxBlocks   int
	encrypted   bool
}

// mode is one replay path under test.
type mode struct {
	name      string
	threshold int64
	stream    lbm.StreamingMode
}

var modes = []mode{
	{"streaming", 0, lbm.StreamingPread},
	{"buffered-streaming", 0, lbm.StreamingBuffered},
	{"inmem", 64 << 20, lbm.StreamingPread},
}

// Row is one line of the JSON output: one test replayed by one mode.
type Row struct {
	Group      string    `json:"group"`
	Test       string    `json:"test"`
	Encrypted  bool      `json:"encrypted"`
	Mode       string    `json:"mode"`
	Records    int64     `json:"records"`
	LiveBlocks int       `json:"live_blocks"`
	Containers int       `json:"containers"`
	MedianMS   float64   `json:"median_ms"`
	RunsMS     []float64 `json:"runs_ms"`
	Reads      int64     `json:"reads"`
	// PageCache is "warm" (metadata resident when timed), "dropped"
	// (dropped before every timed reopen) or "partly warm".
	PageCache string `json:"page_cache"`
	// Medians of the per-repetition ratios streaming/this and
	// buffered-streaming/this (so 1 for the mode itself).
	SpeedupVsStreaming float64 `json:"speedup_vs_streaming"`
	SpeedupVsBuffered  float64 `json:"speedup_vs_buffered"`
}

// result is one test over all modes, in the order of modes.
type result struct {
	rows []Row
}

func (r result) mode(name string) Row {
	for _, row := range r.rows {
		if row.Mode == name {
			return row
		}
	}
	return Row{}
}

func tests() []test {
	var ts []test
	ts = append(ts,
		test{"A", "A_small", 200, 500, 4, 90, -1, true},
		test{"A", "A_medium", 500, 1000, 8, 90, -1, true},
		test{"A", "A_large", 1000, 1000, 8, 90, -1, true})
	for _, p := range []float64{0, 50, 90, 99} {
		ts = append(ts, test{"B", fmt.Sprintf("B_del%d", int(p)), 500, 1000, 8, p, -1, true})
	}
	for _, m := range []int{-1, 10000, 1000} {
		ts = append(ts, test{"C", fmt.Sprintf("C_maxb%d", m), 500, 1000, 8, 90, m, true})
	}
	ts = append(ts, test{"D", "D_regression", 500, 1000, 8, 90, -1, false})
	return ts
}

func main() {
	groups := flag.String("groups", "A,B,C,D", "comma-separated groups to run")
	scale := flag.Float64("scale", 1, "multiplies the number of batches (1 = Kudu's sizes)")
	jsonOut := flag.String("json", "", "write the rows (one per test and mode) as JSON to this file")
	dir := flag.String("dir", "", "parent directory for the data (default: a temp dir, removed afterwards)")
	reopens := flag.Int("reopens", 5, "timed repetitions; each times one reopen of every mode")
	dropCaches := flag.Bool("drop-caches", false, "sync and drop the page cache (needs a writable /proc/sys/vm/drop_caches) before every timed reopen")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the reopens")
	flag.Parse()
	if *scale <= 0 || *reopens < 1 {
		log.Fatal("--scale must be > 0 and --reopens >= 1")
	}
	want := map[string]bool{}
	for _, g := range strings.Split(*groups, ",") {
		want[strings.TrimSpace(strings.ToUpper(g))] = true
	}
	canDrop, why := dropCachesWritable()
	if *dropCaches && !canDrop {
		log.Fatalf("--drop-caches: cannot write %s: %s", dropCachesPath, why)
	}
	root, err := os.MkdirTemp(*dir, "lbmreplay-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			log.Fatal(err)
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	start := time.Now()
	fmt.Printf("lbmreplay: scale %g, median of %d repetitions (modes interleaved, order rotating), GOMAXPROCS %d, data under %s\n",
		*scale, *reopens, runtime.GOMAXPROCS(0), root)
	if *dropCaches {
		fmt.Printf("page cache: dropped (sync; echo 3 > %s) before every timed reopen, for all modes alike\n\n", dropCachesPath)
	} else {
		fmt.Printf("page cache: NOT dropped (%s %s): figures are page-cache-warm for all modes alike; residency is measured below\n\n",
			dropCachesPath, map[bool]string{true: "is writable but --drop-caches was not given", false: "is not writable: " + why}[canDrop])
	}
	var results []result
	for _, t := range tests() {
		if !want[t.group] {
			continue
		}
		t.batches = max(1, int(float64(t.batches)**scale+0.5))
		r, err := run(filepath.Join(root, t.name), t, *reopens, *dropCaches)
		if err != nil {
			log.Fatalf("%s: %v", t.name, err)
		}
		s, b, m := r.mode("streaming"), r.mode("buffered-streaming"), r.mode("inmem")
		fmt.Fprintf(os.Stderr, "%-13s %3dx%d dirs=%d records=%d live=%d containers=%d stream=%v buffered=%v inmem=%v reads=%d/%d/%d cache=%s\n",
			t.name, t.batches, t.perBatch, t.dirs, m.Records, m.LiveBlocks, m.Containers, s.RunsMS, b.RunsMS, m.RunsMS,
			s.Reads, b.Reads, m.Reads, m.PageCache)
		results = append(results, r)
		os.RemoveAll(filepath.Join(root, t.name))
	}
	printTable(results)
	checkTargets(results)
	fmt.Printf("\ntotal wall time %.1fs\n", time.Since(start).Seconds())
	if *jsonOut != "" {
		var rows []Row
		for _, r := range results {
			rows = append(rows, r.rows...)
		}
		if err := benchresults.WriteJSON(*jsonOut, rows); err != nil {
			log.Fatal(err)
		}
	}
}

func config(fs lbm.FS, base string, t test) lbm.Config {
	cfg := lbm.DefaultConfig()
	for i := range t.dirs {
		cfg.Dirs = append(cfg.Dirs, filepath.Join(base, fmt.Sprintf("d%d", i)))
	}
	cfg.FS = fs
	cfg.Encrypt = t.encrypted
	cfg.KeyFile = filepath.Join(base, "server.key")
	cfg.MaxBlocksPerContainer = t.maxBlocks
	// As in Kudu's benchmark: no runtime compaction; full, mostly dead
	// containers are compacted by the (untimed) warm-up reopen.
	cfg.RuntimeCompaction = false
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	return cfg
}

func run(base string, t test, reps int, drop bool) (result, error) {
	ctx := context.Background()
	var res result
	cfg := config(lbm.OSFS(), base, t)
	buildStart := time.Now()
	s, err := lbm.Open(ctx, cfg)
	if err != nil {
		return res, err
	}
	// Populate: one creation transaction per batch, 1-byte blocks (each
	// occupies one 4 KiB fs block), as Kudu's StartupBenchmark.
	n := t.batches * t.perBatch
	data := []byte("x")
	ids := make([]uint64, 0, n)
	for b := range t.batches {
		ms := make([]lbm.BlockMeta, t.perBatch)
		ds := make([][]byte, t.perBatch)
		for i := range ms {
			id := uint64(b*t.perBatch + i + 1)
			ms[i] = lbm.BlockMeta{ID: id, Inode: id / 16, GenStamp: 1}
			ds[i] = data
			ids = append(ids, id)
		}
		if err := s.PutBatch(ctx, ms, ds); err != nil {
			return res, err
		}
	}
	putTime := time.Since(buildStart)
	rng := rand.New(rand.NewSource(42))
	rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	del := int(float64(n) * t.delPct / 100)
	for i := 0; i < del; i += t.perBatch {
		if err := s.DeleteBatch(ctx, ids[i:min(del, i+t.perBatch)]); err != nil {
			return res, err
		}
	}
	probe := ids[len(ids)-1] // live (if any block is)
	s.Close()
	buildTime := time.Since(buildStart)
	defer func() {
		fmt.Fprintf(os.Stderr, "  %s: build %.1fs (puts %.1fs), reopens %.1fs\n", t.name, buildTime.Seconds(), putTime.Seconds(), time.Since(buildStart.Add(buildTime)).Seconds())
	}()

	// reopen opens the store once with mode m and returns the wall time
	// of Open, its read calls and stats.
	reopen := func(m mode) (time.Duration, int64, lbm.OpenStats, error) {
		cfs := lbm.NewCountingFS(lbm.OSFS())
		c := config(cfs, base, t)
		c.InmemReplayThreshold, c.StreamingReplay = m.threshold, m.stream
		t0 := time.Now()
		s, err := lbm.Open(ctx, c)
		d := time.Since(t0)
		if err != nil {
			return 0, 0, lbm.OpenStats{}, fmt.Errorf("%s: %w", m.name, err)
		}
		reads, st := cfs.Reads(), s.OpenStats()
		if del < n {
			if _, err := s.Read(ctx, probe, 0, 1); err != nil {
				s.Close()
				return 0, 0, st, fmt.Errorf("%s: probe read: %w", m.name, err)
			}
		}
		s.Close()
		return d, reads, st, nil
	}
	res.rows = make([]Row, len(modes))
	stats := make([]lbm.OpenStats, len(modes))
	for i, m := range modes { // untimed warm-up
		if _, _, _, err := reopen(m); err != nil {
			return res, err
		}
		res.rows[i] = Row{Group: t.group, Test: t.name, Encrypted: t.encrypted, Mode: m.name}
	}
	resident, total := residency(base)
	for rep := range reps {
		for k := range modes {
			i := (rep + k) % len(modes)
			if drop {
				if err := dropPageCache(); err != nil {
					return res, err
				}
			}
			if drop && rep == 0 && k == 0 {
				if r, _ := residency(base); r > 0 {
					return res, fmt.Errorf("--drop-caches: %d metadata pages still resident after a drop", r)
				}
			}
			d, reads, st, err := reopen(modes[i])
			if err != nil {
				return res, err
			}
			res.rows[i].RunsMS = append(res.rows[i].RunsMS, float64(d.Microseconds())/1000)
			res.rows[i].Reads, stats[i] = reads, st
		}
	}
	cache := "warm"
	switch {
	case drop:
		cache = "dropped"
	case resident < total:
		cache = fmt.Sprintf("partly warm (%d of %d metadata pages resident)", resident, total)
	}
	ref := stats[0]
	for i, st := range stats {
		m := modes[i]
		if st.LiveBlocks != ref.LiveBlocks || st.Records != ref.Records || st.Containers != ref.Containers {
			return res, fmt.Errorf("modes disagree: %s %+v, %s %+v", modes[0].name, ref, m.name, st)
		}
		if m.threshold > 0 && st.InmemContainers != st.Containers {
			return res, fmt.Errorf("%s: only %d of %d containers took the in-memory path", m.name, st.InmemContainers, st.Containers)
		}
		if m.threshold == 0 && st.StreamingContainers != st.Containers {
			return res, fmt.Errorf("%s: only %d of %d containers streamed", m.name, st.StreamingContainers, st.Containers)
		}
		r := &res.rows[i]
		r.Records, r.LiveBlocks, r.Containers, r.PageCache = st.Records, st.LiveBlocks, st.Containers, cache
		r.MedianMS = benchresults.Median(r.RunsMS)
		r.SpeedupVsStreaming = medianRatio(res.rows[0].RunsMS, r.RunsMS)
		r.SpeedupVsBuffered = medianRatio(res.rows[1].RunsMS, r.RunsMS)
	}
	return res, nil
}

// medianRatio is the median over repetitions i of num[i]/den[i].
func medianRatio(num, den []float64) float64 {
	r := make([]float64, len(num))
	for i := range num {
		r[i] = num[i] / den[i]
	}
	return benchresults.Median(r)
}

func printTable(results []result) {
	fmt.Printf("| Group | Test | enc | records | live | containers | streaming ms | buffered-streaming ms | in-memory ms | in-mem vs streaming | in-mem vs buffered | reads str/buf/mem | page cache |\n")
	fmt.Printf("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range results {
		s, b, m := r.mode("streaming"), r.mode("buffered-streaming"), r.mode("inmem")
		fmt.Printf("| %s | %s | %v | %d | %d | %d | %.1f | %.1f | %.1f | %.2fx | %.2fx | %d/%d/%d | %s |\n",
			m.Group, m.Test, m.Encrypted, m.Records, m.LiveBlocks, m.Containers,
			s.MedianMS, b.MedianMS, m.MedianMS, m.SpeedupVsStreaming, m.SpeedupVsBuffered,
			s.Reads, b.Reads, m.Reads, m.PageCache)
	}
}

func checkTargets(results []result) {
	by := map[string]result{}
	for _, r := range results {
		by[r.rows[0].Test] = r
	}
	fmt.Println()
	maxPer := 0.0
	for _, r := range results {
		m := r.mode("inmem")
		if m.Containers > 0 && m.Reads > int64(4*m.Containers) {
			fmt.Printf("MISS %s: %d in-memory reads for %d containers (> 4 each)\n", m.Test, m.Reads, m.Containers)
		}
		if m.Containers > 0 {
			maxPer = max(maxPer, float64(m.Reads)/float64(m.Containers))
		}
	}
	fmt.Printf("in-memory read calls per container: max %.2f (target <= 4)\n", maxPer)
	if a, ok := by["A_medium"]; ok {
		m := a.mode("inmem")
		fmt.Printf("A_medium encrypted speedup vs Kudu streaming: %.2fx (floor 3.0x, goal 8x) %s\n", m.SpeedupVsStreaming, verdict(m.SpeedupVsStreaming >= 3))
		fmt.Printf("A_medium encrypted speedup vs buffered streaming: %.2fx (no target: the honest baseline)\n", m.SpeedupVsBuffered)
		if d, ok := by["D_regression"]; ok {
			q := m.MedianMS / d.mode("inmem").MedianMS
			fmt.Printf("A_medium in-memory / D in-memory: %.2f (ceiling 1.5, goal 1.2) %s\n", q, verdict(q <= 1.5))
		}
	}
}

func verdict(ok bool) string {
	if ok {
		return "OK"
	}
	return "MISS"
}
