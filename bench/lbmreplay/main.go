// Command lbmreplay reproduces the KUDU-3779 startup-replay table for the
// lbm block store: for each test it builds a population of tiny blocks in
// batches on the real file system, deletes a share of them, then times
// store reopens with the streaming replay path (threshold 0) and the
// in-memory path (threshold 64 MiB): a warm-up reopen, then the mean of
// --reopens timed reopens per path, measured in the same run.
//
//	go run ./bench/lbmreplay --groups A,B,C,D --scale 0.2 --json out.json
package main

import (
	"context"
	"encoding/json"
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

// Row is one line of the JSON output.
type Row struct {
	Group          string  `json:"group"`
	Test           string  `json:"test"`
	Encrypted      bool    `json:"encrypted"`
	Records        int64   `json:"records"`
	LiveBlocks     int     `json:"live_blocks"`
	Containers     int     `json:"containers"`
	StreamingMS    float64 `json:"streaming_ms"`
	InmemMS        float64 `json:"inmem_ms"`
	Speedup        float64 `json:"speedup"`
	ReadsStreaming int64   `json:"reads_streaming"`
	ReadsInmem     int64   `json:"reads_inmem"`
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
	jsonOut := flag.String("json", "", "write the rows as JSON to this file")
	dir := flag.String("dir", "", "parent directory for the data (default: a temp dir, removed afterwards)")
	reopens := flag.Int("reopens", 5, "timed reopens per path")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the reopens")
	flag.Parse()
	if *scale <= 0 {
		log.Fatal("--scale must be > 0")
	}
	want := map[string]bool{}
	for _, g := range strings.Split(*groups, ",") {
		want[strings.TrimSpace(strings.ToUpper(g))] = true
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
	fmt.Printf("lbmreplay: scale %g, %d reopens per path, GOMAXPROCS %d, data under %s\n\n",
		*scale, *reopens, runtime.GOMAXPROCS(0), root)
	var rows []Row
	for _, t := range tests() {
		if !want[t.group] {
			continue
		}
		t.batches = max(1, int(float64(t.batches)**scale+0.5))
		r, err := run(filepath.Join(root, t.name), t, *reopens)
		if err != nil {
			log.Fatalf("%s: %v", t.name, err)
		}
		fmt.Fprintf(os.Stderr, "%-13s %3dx%d dirs=%d records=%d live=%d containers=%d stream=%.1fms inmem=%.1fms reads=%d/%d\n",
			t.name, t.batches, t.perBatch, t.dirs, r.Records, r.LiveBlocks, r.Containers, r.StreamingMS, r.InmemMS, r.ReadsStreaming, r.ReadsInmem)
		rows = append(rows, r)
		os.RemoveAll(filepath.Join(root, t.name))
	}
	printTable(rows)
	checkTargets(rows)
	fmt.Printf("\ntotal wall time %.1fs\n", time.Since(start).Seconds())
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(rows, "", "  ")
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
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

func run(base string, t test, reopens int) (Row, error) {
	ctx := context.Background()
	row := Row{Group: t.group, Test: t.name, Encrypted: t.encrypted}
	cfg := config(lbm.OSFS(), base, t)
	buildStart := time.Now()
	s, err := lbm.Open(ctx, cfg)
	if err != nil {
		return row, err
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
			return row, err
		}
	}
	putTime := time.Since(buildStart)
	rng := rand.New(rand.NewSource(42))
	rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	del := int(float64(n) * t.delPct / 100)
	for i := 0; i < del; i += t.perBatch {
		if err := s.DeleteBatch(ctx, ids[i:min(del, i+t.perBatch)]); err != nil {
			return row, err
		}
	}
	probe := ids[len(ids)-1] // live (if any block is)
	s.Close()
	buildTime := time.Since(buildStart)
	defer func() {
		fmt.Fprintf(os.Stderr, "  %s: build %.1fs (puts %.1fs), reopens %.1fs\n", t.name, buildTime.Seconds(), putTime.Seconds(), time.Since(buildStart.Add(buildTime)).Seconds())
	}()

	timePath := func(threshold int64) (ms float64, reads int64, st lbm.OpenStats, err error) {
		cfs := lbm.NewCountingFS(lbm.OSFS())
		c := config(cfs, base, t)
		c.InmemReplayThreshold = threshold
		var total time.Duration
		for i := -1; i < reopens; i++ { // i == -1: warm-up
			cfs.Reset()
			t0 := time.Now()
			s, err := lbm.Open(ctx, c)
			d := time.Since(t0)
			if err != nil {
				return 0, 0, st, err
			}
			reads, st = cfs.Reads(), s.OpenStats()
			if del < n {
				if _, err := s.Read(ctx, probe, 0, 1); err != nil {
					return 0, 0, st, fmt.Errorf("probe read: %w", err)
				}
			}
			s.Close()
			if i >= 0 {
				total += d
			}
		}
		return float64(total.Microseconds()) / 1000 / float64(reopens), reads, st, nil
	}
	var sst, ist lbm.OpenStats
	if row.StreamingMS, row.ReadsStreaming, sst, err = timePath(0); err != nil {
		return row, err
	}
	if row.InmemMS, row.ReadsInmem, ist, err = timePath(64 << 20); err != nil {
		return row, err
	}
	if sst.LiveBlocks != ist.LiveBlocks || sst.Records != ist.Records || sst.Containers != ist.Containers {
		return row, fmt.Errorf("paths disagree: streaming %+v in-memory %+v", sst, ist)
	}
	if ist.InmemContainers != ist.Containers {
		return row, fmt.Errorf("only %d of %d containers took the in-memory path", ist.InmemContainers, ist.Containers)
	}
	row.Records, row.LiveBlocks, row.Containers = ist.Records, ist.LiveBlocks, ist.Containers
	row.Speedup = row.StreamingMS / row.InmemMS
	return row, nil
}

func printTable(rows []Row) {
	fmt.Printf("| Group | Test | enc | records | live | containers | streaming ms | in-memory ms | speedup | reads str | reads mem |\n")
	fmt.Printf("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		fmt.Printf("| %s | %s | %v | %d | %d | %d | %.1f | %.1f | %.2fx | %d | %d |\n",
			r.Group, r.Test, r.Encrypted, r.Records, r.LiveBlocks, r.Containers,
			r.StreamingMS, r.InmemMS, r.Speedup, r.ReadsStreaming, r.ReadsInmem)
	}
}

func checkTargets(rows []Row) {
	by := map[string]Row{}
	for _, r := range rows {
		by[r.Test] = r
	}
	fmt.Println()
	for _, r := range rows {
		if r.Containers > 0 && r.ReadsInmem > int64(4*r.Containers) {
			fmt.Printf("MISS %s: %d in-memory reads for %d containers (> 4 each)\n", r.Test, r.ReadsInmem, r.Containers)
		}
	}
	maxPer := 0.0
	for _, r := range rows {
		if r.Containers > 0 {
			maxPer = max(maxPer, float64(r.ReadsInmem)/float64(r.Containers))
		}
	}
	fmt.Printf("in-memory read calls per container: max %.2f (target <= 4)\n", maxPer)
	if a, ok := by["A_medium"]; ok {
		fmt.Printf("A_medium encrypted speedup: %.2fx (floor 3.0x, goal 8x) %s\n", a.Speedup, verdict(a.Speedup >= 3))
		if d, ok := by["D_regression"]; ok {
			q := a.InmemMS / d.InmemMS
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
