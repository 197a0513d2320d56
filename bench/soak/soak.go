package main

import (
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blockfs/blockfs/bench/internal/results"

	"github.com/anishathalye/porcupine"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/localcluster"
	"github.com/blockfs/blockfs/namenode"
	"github.com/blockfs/blockfs/tests/robustness"
)

// Config is one soak run.
type Config struct {
	Duration time.Duration
	Seed     uint64
	JSON     string
	Workers  int
}

const (
	namenodes = 3
	datanodes = 5
	blockSize = 64 << 10
	opTimeout = 20 * time.Second
)

// OpStats are one op type's figures.
type OpStats struct {
	Count  int     `json:"count"`
	Errors int     `json:"errors"`
	P50Ms  float64 `json:"p50_ms"`
	P99Ms  float64 `json:"p99_ms"`
	lat    []time.Duration
}

// Report is what a run found.
type Report struct {
	Seed             uint64              `json:"seed"`
	DurationS        float64             `json:"duration_s"`
	Ops              int                 `json:"ops"`
	OpsPerSec        float64             `json:"ops_per_s"`
	PerOp            map[string]*OpStats `json:"per_op"`
	Faults           int                 `json:"faults"`
	FaultKinds       map[string]int      `json:"fault_kinds"`
	HistoriesChecked int                 `json:"histories_checked"`
	HistoryOps       int                 `json:"history_ops"`
	HistoriesUnknown int                 `json:"histories_unknown"`
	Anomalies        []string            `json:"anomalies"`
	LostWrites       []string            `json:"lost_writes"`
	FilesVerified    int                 `json:"files_verified"`
	Goroutines       [2]int              `json:"goroutines_start_end"`
	HeapMiB          [2]float64          `json:"heap_mib_start_end"`
	MemoryGrew       bool                `json:"memory_grew"`
}

// Passed reports whether nothing was lost, no anomaly was found and memory
// stayed flat.
func (r *Report) Passed() bool {
	return len(r.Anomalies) == 0 && len(r.LostWrites) == 0 && !r.MemoryGrew
}

type soak struct {
	cfg   Config
	c     *localcluster.Cluster
	cl    *client.Client
	start time.Time

	mu        sync.Mutex
	rep       *Report
	files     map[string]int // acknowledged, live files -> size (guarded by mu)
	uncertain int
	ops       atomic.Int64
}

// content derives a file's bytes from its id (the part of its name before
// any rename suffix) and size.
func content(id string, size int) []byte {
	h := fnv.New64a()
	h.Write([]byte(id))
	r := rand.New(rand.NewPCG(h.Sum64(), uint64(size)))
	b := make([]byte, size)
	for i := 0; i < size; i += 8 {
		v := r.Uint64()
		for j := 0; j < 8 && i+j < size; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

// fileID returns the id a path's content is derived from: its base name up
// to the first '.'.
func fileID(p string) string {
	base := p[strings.LastIndexByte(p, '/')+1:]
	id, _, _ := strings.Cut(base, ".")
	return id
}

func (s *soak) record(op string, d time.Duration, err error) {
	s.ops.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.rep.PerOp[op]
	if st == nil {
		st = &OpStats{}
		s.rep.PerOp[op] = st
	}
	st.Count++
	if err != nil {
		st.Errors++
		return
	}
	st.lat = append(st.lat, d)
}

func (s *soak) anomaly(format string, a ...any) {
	s.mu.Lock()
	s.rep.Anomalies = append(s.rep.Anomalies, fmt.Sprintf(format, a...))
	s.mu.Unlock()
}

// pick returns a random acknowledged file owned by worker w.
func (s *soak) pick(rng *rand.Rand, w int) (string, int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	prefix := fmt.Sprintf("/soak/w%d/", w)
	var cands []string
	for p := range s.files {
		if strings.HasPrefix(p, prefix) {
			cands = append(cands, p)
		}
	}
	if len(cands) == 0 {
		return "", 0, false
	}
	slices.Sort(cands)
	p := cands[rng.IntN(len(cands))]
	return p, s.files[p], true
}

func (s *soak) worker(ctx context.Context, w int, rng *rand.Rand) {
	n := 0
	for ctx.Err() == nil {
		x := rng.IntN(100)
		p, size, ok := s.pick(rng, w)
		if !ok || x < 35 {
			n++
			size := blockSize/2 + rng.IntN(4*blockSize)
			np := fmt.Sprintf("/soak/w%d/f%d_%d", w, n, size)
			cctx, cancel := context.WithTimeout(ctx, opTimeout)
			t0 := time.Now()
			err := s.cl.WriteFile(cctx, np, content(fileID(np), size), client.CreateOptions{Perm: 0o644})
			cancel()
			if ctx.Err() != nil {
				return
			}
			s.record("write", time.Since(t0), err)
			if err == nil {
				s.mu.Lock()
				s.files[np] = size
				s.mu.Unlock()
			}
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, opTimeout)
		t0 := time.Now()
		switch {
		case x < 65:
			got, err := s.cl.ReadFile(cctx, p)
			if ctx.Err() == nil {
				s.record("read", time.Since(t0), err)
			}
			if err == nil && !bytes.Equal(got, content(fileID(p), size)) {
				s.anomaly("read %s: %d bytes differ from what was written (%d bytes)", p, len(got), size)
			}
			if errs.KindOf(err) == errs.NotFound {
				s.anomaly("read %s: acknowledged file not found: %v", p, err)
			}
		case x < 80:
			r, err := s.cl.GetBlockLocations(cctx, p, 0, 0)
			if ctx.Err() == nil {
				s.record("get_block_locations", time.Since(t0), err)
			}
			if err == nil {
				want := (size + blockSize - 1) / blockSize
				if int(r.FileLength) != size || len(r.Blocks) != want {
					s.anomaly("get block locations %s: length %d, %d blocks; want %d, %d", p, r.FileLength, len(r.Blocks), size, want)
				}
			}
			if errs.KindOf(err) == errs.NotFound {
				s.anomaly("get block locations %s: acknowledged file not found: %v", p, err)
			}
		case x < 90:
			err := s.cl.Delete(cctx, p, false)
			if ctx.Err() == nil {
				s.record("delete", time.Since(t0), err)
			}
			s.mu.Lock()
			delete(s.files, p) // deleted, or maybe: no longer checked
			if err != nil {
				s.uncertain++
			}
			s.mu.Unlock()
		default:
			dst := fmt.Sprintf("%s.r%d", p, rng.IntN(1000))
			err := s.cl.Rename(cctx, p, dst)
			if ctx.Err() == nil {
				s.record("rename", time.Since(t0), err)
			}
			s.mu.Lock()
			delete(s.files, p)
			if err == nil {
				s.files[dst] = size
			} else {
				s.uncertain++
			}
			s.mu.Unlock()
		}
		cancel()
	}
}

// faults stops and restarts a random namenode or datanode, one at a time.
func (s *soak) faults(ctx context.Context, rng *rand.Rand, every time.Duration, log io.Writer) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(every/2 + rand.N(every)):
		}
		down := time.Duration(500+rng.IntN(1500)) * time.Millisecond
		var kind string
		if rng.IntN(2) == 0 {
			i := rng.IntN(namenodes)
			kind = "restart-namenode"
			s.c.StopNamenode(i)
			sleepCtx(ctx, down)
			rctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			if err := s.c.RestartNamenode(rctx, i); err != nil {
				s.anomaly("restart namenode %d: %v", i, err)
			}
			cancel()
		} else {
			i := rng.IntN(datanodes)
			kind = "restart-datanode"
			s.c.StopDatanode(i)
			sleepCtx(ctx, down)
			rctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			if err := s.c.RestartDatanode(rctx, i); err != nil {
				s.anomaly("restart datanode %d: %v", i, err)
			}
			cancel()
		}
		s.mu.Lock()
		s.rep.Faults++
		s.rep.FaultKinds[kind]++
		s.mu.Unlock()
		fmt.Fprintf(log, "  fault %s at %s (down %s)\n", kind, time.Since(s.start).Round(time.Second), down.Round(time.Millisecond))
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// histories runs windows of single-RPC namespace operations on a tiny
// path set, each on a fresh root, and checks each window's history.
func (s *soak) histories(ctx context.Context, rng *rand.Rand, window time.Duration) {
	var nns []api.ClientServiceClient
	for _, a := range s.c.NamenodeAddrs() {
		conn, err := grpc.NewClient(a, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			s.anomaly("dial %s: %v", a, err)
			return
		}
		defer conn.Close()
		nns = append(nns, api.NewClientServiceClient(conn))
	}
	paths := []string{"/a", "/b", "/a/x", "/b/x"}
	dirs := []string{"/", "/a", "/b"}
	as := func(ctx context.Context) context.Context {
		return metadata.AppendToOutgoingContext(ctx, namenode.UserKey, "root")
	}
	for win := 0; ctx.Err() == nil; win++ {
		rootDir := fmt.Sprintf("/hist/%d", win)
		if !retry(ctx, func(i int) bool {
			cctx, cancel := context.WithTimeout(as(ctx), 2*time.Second)
			defer cancel()
			_, err := nns[i%len(nns)].Mkdirs(cctx, &api.MkdirsRequest{Path: rootDir, Mode: 0o755, Parents: true})
			return err == nil
		}) {
			return
		}
		h := robustness.NewHistory()
		wctx, cancel := context.WithTimeout(ctx, window)
		var wg sync.WaitGroup
		for id := range 2 {
			wrng := rand.New(rand.NewPCG(rng.Uint64(), uint64(id)))
			wg.Go(func() {
				target, backoff := id, 20*time.Millisecond
				for wctx.Err() == nil {
					in := randomInput(wrng, paths, dirs)
					cctx, cancel := context.WithTimeout(as(ctx), 2*time.Second)
					call := h.Now()
					out, _, valid := robustness.Exec(cctx, nns[target%len(nns)], rootDir, in, nil)
					ret := h.Now()
					cancel()
					if valid {
						h.Add(id, in, call, out, ret)
					}
					if !valid || out.Unknown {
						target++
						sleepCtx(wctx, backoff)
						backoff = min(2*backoff, 500*time.Millisecond)
					} else {
						backoff = 20 * time.Millisecond
					}
				}
			})
		}
		wg.Wait()
		cancel()
		// Pin the end state with reads that must get an answer.
		for _, in := range finalReads(paths, dirs) {
			if !retry(ctx, func(i int) bool {
				cctx, cancel := context.WithTimeout(as(ctx), 2*time.Second)
				defer cancel()
				call := h.Now()
				out, _, ok := robustness.Exec(cctx, nns[i%len(nns)], rootDir, in, nil)
				if ok {
					h.Add(2, in, call, out, h.Now())
				}
				return ok
			}) {
				return
			}
		}
		ops := h.Ops()
		res, _ := robustness.Check(ops, time.Minute)
		s.mu.Lock()
		s.rep.HistoriesChecked++
		s.rep.HistoryOps += len(ops)
		switch res {
		case porcupine.Illegal:
			s.rep.Anomalies = append(s.rep.Anomalies, fmt.Sprintf("history of %s (%d ops) is not linearizable", rootDir, len(ops)))
		case porcupine.Unknown:
			s.rep.HistoriesUnknown++
		}
		s.mu.Unlock()
	}
}

func randomInput(rng *rand.Rand, paths, dirs []string) robustness.Input {
	p := paths[rng.IntN(len(paths))]
	switch x := rng.IntN(100); {
	case x < 15:
		return robustness.Input{Kind: robustness.OpMkdir, Path: p}
	case x < 30:
		return robustness.Input{Kind: robustness.OpCreate, Path: p}
	case x < 42:
		return robustness.Input{Kind: robustness.OpDelete, Path: p}
	case x < 57:
		return robustness.Input{Kind: robustness.OpRename, Path: p, Dst: paths[rng.IntN(len(paths))]}
	case x < 80:
		return robustness.Input{Kind: robustness.OpStat, Path: p}
	default:
		return robustness.Input{Kind: robustness.OpList, Path: dirs[rng.IntN(len(dirs))]}
	}
}

func finalReads(paths, dirs []string) []robustness.Input {
	var out []robustness.Input
	for _, p := range paths {
		out = append(out, robustness.Input{Kind: robustness.OpStat, Path: p})
	}
	for _, d := range dirs {
		out = append(out, robustness.Input{Kind: robustness.OpList, Path: d})
	}
	return out
}

// retry calls fn (with the attempt number) until it reports success, for
// up to a minute.
func retry(ctx context.Context, fn func(attempt int) bool) bool {
	deadline := time.Now().Add(time.Minute)
	for i := 0; ctx.Err() == nil && time.Now().Before(deadline); i++ {
		if fn(i) {
			return true
		}
		sleepCtx(ctx, 100*time.Millisecond)
	}
	return false
}

func memSample() (goroutines int, heap uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return runtime.NumGoroutine(), ms.HeapAlloc
}

// Run runs one soak and prints its report to out.
func Run(ctx context.Context, cfg Config, out io.Writer) (*Report, error) {
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	rep := &Report{Seed: cfg.Seed, PerOp: map[string]*OpStats{}, FaultKinds: map[string]int{}, Anomalies: []string{}, LostWrites: []string{}}
	dir, err := os.MkdirTemp("", "blockfs-soak-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	c, err := localcluster.Start(sctx, localcluster.Config{
		Namenodes: namenodes, Datanodes: datanodes, Dir: dir,
		Namenode: func(i int, c *namenode.Config) { c.Namespace.DefaultBlockSize = blockSize },
	})
	cancel()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	cl, err := c.Client()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	s := &soak{cfg: cfg, c: c, cl: cl, rep: rep, files: map[string]int{}, start: time.Now()}
	fmt.Fprintf(out, "soak: %s, seed %d, %d namenodes, %d datanodes, %d KiB blocks, %d workers\n",
		cfg.Duration, cfg.Seed, namenodes, datanodes, blockSize>>10, cfg.Workers)

	rng := rand.New(rand.NewPCG(cfg.Seed, 0))
	wctx, stopWork := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for w := range cfg.Workers {
		wrng := rand.New(rand.NewPCG(cfg.Seed, uint64(w+1)))
		wg.Go(func() { s.worker(wctx, w, wrng) })
	}
	window := min(max(cfg.Duration/8, 2*time.Second), 15*time.Second)
	hrng := rand.New(rand.NewPCG(cfg.Seed, 1000))
	wg.Go(func() { s.histories(wctx, hrng, window) })

	warm := min(max(cfg.Duration/10, time.Second), 15*time.Second)
	sleepCtx(ctx, warm)
	g0, h0 := memSample()
	fctx, stopFaults := context.WithCancel(wctx)
	every := min(max(cfg.Duration/20, 2*time.Second), 8*time.Second)
	var fwg sync.WaitGroup
	fwg.Go(func() { s.faults(fctx, rng, every, out) })
	sleepCtx(ctx, cfg.Duration-warm)
	stopFaults()
	fwg.Wait()
	g1, h1 := memSample()
	stopWork()
	wg.Wait()
	elapsed := time.Since(s.start)

	// Heal: every node up, the namenodes agreed, every acknowledged file
	// back byte for byte.
	for i := range namenodes {
		if c.Namenode(i) == nil {
			if err := c.RestartNamenode(ctx, i); err != nil {
				return nil, err
			}
		}
	}
	for i := range datanodes {
		if c.Datanode(i) == nil {
			if err := c.RestartDatanode(ctx, i); err != nil {
				return nil, err
			}
		}
	}
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	if err := c.WaitConverged(cctx); err != nil {
		s.anomaly("namenodes did not converge: %v", err)
	}
	cancel()
	s.mu.Lock()
	files := make([]string, 0, len(s.files))
	for p := range s.files {
		files = append(files, p)
	}
	s.mu.Unlock()
	sort.Strings(files)
	for _, p := range files {
		size := s.files[p]
		var got []byte
		var err error
		for attempt := 0; attempt < 5; attempt++ {
			rctx, cancel := context.WithTimeout(ctx, opTimeout)
			got, err = cl.ReadFile(rctx, p)
			cancel()
			if err == nil || errs.KindOf(err) == errs.NotFound {
				break
			}
			sleepCtx(ctx, time.Second)
		}
		switch {
		case errs.KindOf(err) == errs.NotFound:
			rep.LostWrites = append(rep.LostWrites, fmt.Sprintf("%s (%d bytes): %v", p, size, err))
		case err != nil:
			rep.Anomalies = append(rep.Anomalies, fmt.Sprintf("final read %s: %v", p, err))
		case !bytes.Equal(got, content(fileID(p), size)):
			rep.Anomalies = append(rep.Anomalies, fmt.Sprintf("final read %s: content differs (%d of %d bytes)", p, len(got), size))
		default:
			rep.FilesVerified++
		}
	}

	rep.DurationS = elapsed.Seconds()
	rep.Ops = int(s.ops.Load()) + rep.HistoryOps
	rep.OpsPerSec = float64(rep.Ops) / elapsed.Seconds()
	rep.Goroutines = [2]int{g0, g1}
	rep.HeapMiB = [2]float64{float64(h0) / (1 << 20), float64(h1) / (1 << 20)}
	rep.MemoryGrew = g1 > 2*g0+50 || h1 > 3*h0+64<<20
	if rep.MemoryGrew {
		rep.Anomalies = append(rep.Anomalies, fmt.Sprintf("memory grew: goroutines %d -> %d, heap %.1f -> %.1f MiB", g0, g1, rep.HeapMiB[0], rep.HeapMiB[1]))
	}
	for _, st := range rep.PerOp {
		slices.Sort(st.lat)
		st.P50Ms, st.P99Ms = pct(st.lat, 0.50), pct(st.lat, 0.99)
	}
	printReport(out, rep, s.uncertain)
	if cfg.JSON != "" {
		if err := results.WriteJSON(cfg.JSON, rep); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

func pct(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return float64(sorted[int(q*float64(len(sorted)-1))]) / float64(time.Millisecond)
}

func printReport(out io.Writer, rep *Report, uncertain int) {
	fmt.Fprintf(out, "\nran %.1fs: %d ops, %.1f ops/s\n", rep.DurationS, rep.Ops, rep.OpsPerSec)
	fmt.Fprintf(out, "%-22s %8s %8s %10s %10s\n", "op", "count", "errors", "p50 ms", "p99 ms")
	names := make([]string, 0, len(rep.PerOp))
	for k := range rep.PerOp {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		st := rep.PerOp[k]
		fmt.Fprintf(out, "%-22s %8d %8d %10.2f %10.2f\n", k, st.Count, st.Errors, st.P50Ms, st.P99Ms)
	}
	fmt.Fprintf(out, "faults injected: %d %v\n", rep.Faults, rep.FaultKinds)
	fmt.Fprintf(out, "histories checked: %d (%d namespace ops, linearizable; %d timed out unchecked)\n", rep.HistoriesChecked, rep.HistoryOps, rep.HistoriesUnknown)
	fmt.Fprintf(out, "files verified at the end: %d (plus %d whose delete/rename failed, not checked)\n", rep.FilesVerified, uncertain)
	fmt.Fprintf(out, "goroutines: %d -> %d; heap after GC: %.1f -> %.1f MiB; flat: %v\n",
		rep.Goroutines[0], rep.Goroutines[1], rep.HeapMiB[0], rep.HeapMiB[1], !rep.MemoryGrew)
	for _, a := range rep.Anomalies {
		fmt.Fprintf(out, "ANOMALY: %s\n", a)
	}
	for _, l := range rep.LostWrites {
		fmt.Fprintf(out, "LOST: %s\n", l)
	}
	fmt.Fprintf(out, "anomalies: %d, lost writes: %d, faults: %d, ops: %d\n", len(rep.Anomalies), len(rep.LostWrites), rep.Faults, rep.Ops)
}
