// Command nnscale measures the namenode at scale, in one run: the memory
// of the namespace and of the block map per file and per block, the
// snapshot (its time, the heap it needs beyond the live state, and how
// long a create waits while it runs), restoring the image, restarting a
// namenode from a snapshot, and GetBlockLocations on a big file and on
// random files as a cold cache sees them.
//
// It runs in two phases, and the output says which figure came from which:
//
//   - structures, at --files: the namespace.Tree and blocks.Manager built
//     by the calls the FSM applies (Mkdirs, Create, AddBlock, Complete,
//     SetExpected) and fed full block reports from 10 datanodes, 3
//     replicas of every block, 1 block per file, 1000 files per
//     directory. Memory is the live heap (runtime/metrics after a full
//     GC) before and after each structure. The snapshot is the FSM's
//     encode (a namespace.View, copy-on-write, encoded with no namespace
//     lock held and streamed to a file) while a writer
//     applies creates under the write lock; restore is namespace.ReadImage
//     streamed from that file.
//   - cluster, at --cluster-files: a real 1-namenode localcluster whose
//     files are written through its ClientService handler (so through
//     Raft and the FSM), with 10 scripted datanodes sending full reports.
//     GetBlockLocations is called on the handler in-process. The node is
//     then snapshotted, stopped and started again in per-request token
//     mode; restart_ready_ms runs until it answers a linearizable read.
//     A twin in cached token mode then starts from a copy of the same
//     state, and the random reads run on both, in alternating turns, so
//     that the two token modes are compared at the same time (GetFileInfo
//     on both is the control). Between runs both nodes restart from their
//     own state in the other mode, so each mode runs on each node
//     (runs_cached_node).
//
// Every figure is the median of --runs runs.
//
//	go run ./bench/nnscale --files 1000000 --json out.json
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/blockfs/blockfs/bench/internal/results"

	"github.com/blockfs/blockfs/namenode"
)

// Result is the JSON output.
type Result struct {
	Files                       int     `json:"files"`
	NsBytesPerFile              float64 `json:"ns_bytes_per_file"`
	BlockmapBytesPerBlock       float64 `json:"blockmap_bytes_per_block"`
	TotalBytesPerFile           float64 `json:"total_bytes_per_file"`
	SnapshotMs                  float64 `json:"snapshot_ms"`
	SnapshotPeakHeapOverLiveMiB float64 `json:"snapshot_peak_heap_over_live_mib"`
	CreateP50Ms                 float64 `json:"create_p50_ms"`
	CreateMaxDuringSnapshotMs   float64 `json:"create_max_during_snapshot_ms"`
	CreateP50DuringSnapshotMs   float64 `json:"create_p50_during_snapshot_ms"`  // median over runs
	CreateP99DuringSnapshotMs   float64 `json:"create_p99_during_snapshot_ms"`  // median over runs
	CreateMaxOutsideSnapshotMs  float64 `json:"create_max_outside_snapshot_ms"` // median over runs: the machine's noise
	// The same through a real namenode: Create calls through Raft and the
	// FSM while the admin Snapshot call takes a Raft snapshot of the whole
	// cluster namespace (raftSnapshots). Medians over runs, like the above.
	CreateRPCP50Ms                float64 `json:"create_rpc_p50_ms"` // every create that overlapped no snapshot
	CreateRPCMaxDuringSnapshotMs  float64 `json:"create_rpc_max_during_snapshot_ms"`
	CreateRPCP99DuringSnapshotMs  float64 `json:"create_rpc_p99_during_snapshot_ms"`
	CreateRPCMaxOutsideSnapshotMs float64 `json:"create_rpc_max_outside_snapshot_ms"`
	RaftSnapshotMs                float64 `json:"raft_snapshot_ms"`
	RestoreMs                     float64 `json:"restore_ms"`
	RestartReadyMs                float64 `json:"restart_ready_ms"`
	GblNsPerBlock1000             float64 `json:"gbl_ns_per_block_1000"`
	GblRandomCachedUs             float64 `json:"gbl_random_cached_us"`
	GblRandomPerRequestUs         float64 `json:"gbl_random_per_request_us"`
	// Each run times both modes in interleaved turns, so its two figures
	// are a pair: this is the median over runs of each pair's ratio.
	GblRandomCachedOverPerRequest float64 `json:"gbl_random_cached_over_per_request"`
	// The control of the two above: GetFileInfo (no token) on the same
	// two namenodes in the same turns; see twinReads.
	StatRandomCachedNodeUs         float64   `json:"stat_random_cached_node_us"`
	StatRandomPerRequestNodeUs     float64   `json:"stat_random_per_request_node_us"`
	StatRandomCachedOverPerRequest float64   `json:"stat_random_cached_over_per_request_node"` // the control's paired ratio
	ClusterFiles                   int       `json:"cluster_files"`                            // files behind restart_ready_ms and the gbl figures
	LargestBlockReportBytes        int       `json:"largest_block_report_bytes"`               // one datanode's full report in the cluster phase
	DefaultMaxRequestBytes         int       `json:"default_max_request_bytes"`                // namenode.DefaultConfig().MaxRequestSize
	ImageBytes                     int       `json:"image_bytes"`
	Runs                           int       `json:"runs"`
	Structures                     string    `json:"structures"` // how the first phase's figures were measured
	Cluster                        string    `json:"cluster"`    // how the second phase's figures were measured
	RunsSnapshotMs                 []float64 `json:"runs_snapshot_ms"`
	RunsCreateMaxDuringSnapshot    []float64 `json:"runs_create_max_during_snapshot_ms"`
	RunsCreateP99DuringSnapshot    []float64 `json:"runs_create_p99_during_snapshot_ms"`
	RunsCreateP50DuringSnapshot    []float64 `json:"runs_create_p50_during_snapshot_ms"`
	RunsCreateMaxOutside           []float64 `json:"runs_create_max_outside_snapshot_ms"`
	RunsRestoreMs                  []float64 `json:"runs_restore_ms"`
	RunsRaftSnapshotMs             []float64 `json:"runs_raft_snapshot_ms"`
	RunsCreateRPCMaxDuring         []float64 `json:"runs_create_rpc_max_during_snapshot_ms"`
	RunsCreateRPCMaxOutside        []float64 `json:"runs_create_rpc_max_outside_snapshot_ms"`
	RunsGblRandomCachedUs          []float64 `json:"runs_gbl_random_cached_us"`
	RunsGblRandomPerRequestUs      []float64 `json:"runs_gbl_random_per_request_us"`
	RunsStatRandomCachedNodeUs     []float64 `json:"runs_stat_random_cached_node_us"`
	RunsStatRandomPerRequestNodeUs []float64 `json:"runs_stat_random_per_request_node_us"`
	RunsGblNsPerBlock1000          []float64 `json:"runs_gbl_ns_per_block_1000"`
	RunsCachedNode                 []string  `json:"runs_cached_node"` // "A" or "B": the node in cached mode in each run (the other is per-request)
	CreatesDuringSnapshotP50Runs   []int     `json:"runs_creates_completed_during_snapshot"`
}

// Config is what one run measures.
type Config struct {
	Files        int
	ClusterFiles int
	PerDir       int
	Runs         int
	Calls        int // random GetBlockLocations calls per run
	Logf         func(string, ...any)
}

func main() {
	files := flag.Int("files", 1_000_000, "files (1 block each) in the structures phase")
	clusterFiles := flag.Int("cluster-files", 0, "files in the real namenode for restart and GetBlockLocations; 0 means --files")
	perDir := flag.Int("per-dir", 1000, "files per directory")
	runs := flag.Int("runs", 4, "runs per figure; the median is reported (even, so that the cluster phase's two nodes each run each token mode equally often)")
	calls := flag.Int("calls", 10000, "random GetBlockLocations calls per run, in turns of 100 per node")
	quick := flag.Bool("quick", false, "CI smoke: 20000 files in both phases, 1 run")
	jsonOut := flag.String("json", "", "write the result as JSON to this file")
	flag.Parse()
	log.SetFlags(0)
	cfg := Config{Files: *files, ClusterFiles: *clusterFiles, PerDir: *perDir, Runs: *runs, Calls: *calls, Logf: log.Printf}
	if *quick {
		cfg.Files, cfg.ClusterFiles, cfg.Runs, cfg.Calls = 20_000, 20_000, 1, 500
	}
	if cfg.ClusterFiles == 0 {
		cfg.ClusterFiles = cfg.Files
	}
	cfg.ClusterFiles = min(cfg.ClusterFiles, cfg.Files)
	if cfg.Files < 1 || cfg.ClusterFiles < 1 || cfg.PerDir < 1 || cfg.Runs < 1 || cfg.Calls < 1 {
		log.Fatal("--files, --cluster-files, --per-dir, --runs and --calls must be positive")
	}
	fmt.Printf("nnscale: %d files (structures), %d files (cluster), %d per directory, %d datanodes, %d replicas, 1 block per file, %d runs, GOMAXPROCS=%d\n",
		cfg.Files, cfg.ClusterFiles, cfg.PerDir, datanodes, replicas, cfg.Runs, runtime.GOMAXPROCS(0))
	r, err := Run(context.Background(), cfg)
	if err != nil {
		log.Fatal(err)
	}
	printTable(r)
	if *jsonOut != "" {
		if err := results.WriteJSON(*jsonOut, r); err != nil {
			log.Fatal(err)
		}
	}
}

// Run measures both phases.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	logf := cfg.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	r := &Result{Files: cfg.Files, ClusterFiles: cfg.ClusterFiles, Runs: cfg.Runs,
		Structures: "in-process namespace.Tree + blocks.Manager built by the FSM's apply calls; snapshot = a namespace.View opened under the write lock, encoded holding no namespace lock (the view orders itself against writers per record) and streamed to a file, as fsm.Snapshot/Persist do; creates under the write lock",
		Cluster:    "1-namenode localcluster, files written through Raft, GetBlockLocations on the in-process ClientService handler (stale reads), restart from a Raft snapshot",
	}
	st, err := buildStructs(cfg.Files, cfg.PerDir)
	if err != nil {
		return nil, fmt.Errorf("structures: %w", err)
	}
	logf("structures: %d files built in %.1fs", cfg.Files, st.buildNs.Seconds())
	r.NsBytesPerFile = float64(st.nsBytes) / float64(cfg.Files)
	r.BlockmapBytesPerBlock = float64(st.bmBytes) / float64(st.blocks)
	r.TotalBytesPerFile = float64(st.nsBytes+st.bmBytes) / float64(cfg.Files)

	var mu sync.RWMutex
	var seq atomic.Int64
	var lat []float64
	var peaks []float64
	dir, err := os.MkdirTemp("", "nnscale-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	img := filepath.Join(dir, "image")
	for range cfg.Runs {
		sr, l, err := snapshot(st, &mu, &seq, 100*time.Millisecond, dir)
		if err != nil {
			return nil, fmt.Errorf("snapshot: %w", err)
		}
		lat = append(lat, l...)
		r.RunsSnapshotMs = append(r.RunsSnapshotMs, sr.ms)
		r.RunsCreateMaxDuringSnapshot = append(r.RunsCreateMaxDuringSnapshot, sr.creates.max)
		r.RunsCreateP99DuringSnapshot = append(r.RunsCreateP99DuringSnapshot, sr.creates.p99)
		r.RunsCreateP50DuringSnapshot = append(r.RunsCreateP50DuringSnapshot, sr.creates.p50)
		r.RunsCreateMaxOutside = append(r.RunsCreateMaxOutside, sr.creates.maxOutside)
		r.CreatesDuringSnapshotP50Runs = append(r.CreatesDuringSnapshotP50Runs, sr.creates.done)
		peaks = append(peaks, float64(sr.peakOver)/(1<<20))
		r.ImageBytes = sr.imageBytes
	}
	r.SnapshotMs = results.Median(r.RunsSnapshotMs)
	r.SnapshotPeakHeapOverLiveMiB = results.Median(peaks)
	r.CreateP50Ms = results.Median(lat)
	r.CreateMaxDuringSnapshotMs = results.Median(r.RunsCreateMaxDuringSnapshot)
	r.CreateP99DuringSnapshotMs = results.Median(r.RunsCreateP99DuringSnapshot)
	r.CreateP50DuringSnapshotMs = results.Median(r.RunsCreateP50DuringSnapshot)
	r.CreateMaxOutsideSnapshotMs = results.Median(r.RunsCreateMaxOutside)
	// The block map and the live tree are not needed for restore; drop
	// them so restore runs with the heap a restarting node would have.
	st = nil
	runtime.GC()
	for range cfg.Runs {
		ms, n, err := restore(img)
		if err != nil {
			return nil, fmt.Errorf("restore: %w", err)
		}
		if n < cfg.Files {
			return nil, fmt.Errorf("restore: %d files, want at least %d", n, cfg.Files)
		}
		r.RunsRestoreMs = append(r.RunsRestoreMs, ms)
		runtime.GC()
	}
	r.RestoreMs = results.Median(r.RunsRestoreMs)

	cr, err := runCluster(ctx, cfg.ClusterFiles, cfg.PerDir, cfg.Runs, cfg.Calls, logf)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	r.RestartReadyMs = cr.restartReadyMs
	r.LargestBlockReportBytes = cr.largestReport
	r.DefaultMaxRequestBytes = namenode.DefaultConfig().MaxRequestSize
	r.RunsGblNsPerBlock1000 = cr.nsPerBlock1000
	var p99s []float64
	for _, c := range cr.rpcCreates {
		r.RunsCreateRPCMaxDuring = append(r.RunsCreateRPCMaxDuring, c.max)
		r.RunsCreateRPCMaxOutside = append(r.RunsCreateRPCMaxOutside, c.maxOutside)
		p99s = append(p99s, c.p99)
	}
	r.RunsRaftSnapshotMs = cr.raftSnapshotMs
	r.RaftSnapshotMs = results.Median(cr.raftSnapshotMs)
	r.CreateRPCP50Ms = results.Median(cr.rpcOutside)
	r.CreateRPCMaxDuringSnapshotMs = results.Median(r.RunsCreateRPCMaxDuring)
	r.CreateRPCP99DuringSnapshotMs = results.Median(p99s)
	r.CreateRPCMaxOutsideSnapshotMs = results.Median(r.RunsCreateRPCMaxOutside)
	r.RunsGblRandomCachedUs = cr.cachedUs
	r.RunsGblRandomPerRequestUs = cr.perRequestUs
	r.RunsCachedNode = cr.cachedNode
	r.GblNsPerBlock1000 = results.Median(cr.nsPerBlock1000)
	r.GblRandomCachedUs = results.Median(cr.cachedUs)
	r.GblRandomPerRequestUs = results.Median(cr.perRequestUs)
	r.RunsStatRandomCachedNodeUs = cr.statCachedUs
	r.RunsStatRandomPerRequestNodeUs = cr.statPerRequestUs
	r.StatRandomCachedNodeUs = results.Median(cr.statCachedUs)
	r.StatRandomPerRequestNodeUs = results.Median(cr.statPerRequestUs)
	r.GblRandomCachedOverPerRequest = pairedRatio(cr.cachedUs, cr.perRequestUs)
	r.StatRandomCachedOverPerRequest = pairedRatio(cr.statCachedUs, cr.statPerRequestUs)
	return r, nil
}

// pairedRatio returns the median over runs of a[i]/b[i].
func pairedRatio(a, b []float64) float64 {
	rs := make([]float64, len(a))
	for i := range a {
		rs[i] = a[i] / b[i]
	}
	return results.Median(rs)
}

func printTable(r *Result) {
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	row := func(name, val, scale, how string) { fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, val, scale, how) }
	s := fmt.Sprintf("%d files", r.Files)
	c := fmt.Sprintf("%d files", r.ClusterFiles)
	fmt.Fprintln(tw, "figure\tvalue\tat\tmeasured on")
	row("ns_bytes_per_file", fmt.Sprintf("%.0f", r.NsBytesPerFile), s, "namespace.Tree, live heap delta")
	row("blockmap_bytes_per_block", fmt.Sprintf("%.0f", r.BlockmapBytesPerBlock), s, "blocks.Manager, 3 replicas reported")
	row("total_bytes_per_file", fmt.Sprintf("%.0f", r.TotalBytesPerFile), s, "both")
	row("image_bytes", fmt.Sprintf("%d", r.ImageBytes), s, "namespace image")
	row("snapshot_ms", fmt.Sprintf("%.1f", r.SnapshotMs), s, "View encoded with no namespace lock, to a file")
	row("snapshot_peak_heap_over_live_mib", fmt.Sprintf("%.1f", r.SnapshotPeakHeapOverLiveMiB), s, "heap objects sampled every 0.5 ms")
	row("create_p50_ms", fmt.Sprintf("%.4f", r.CreateP50Ms), s, "Create under the write lock, no snapshot")
	row("create_max_during_snapshot_ms", fmt.Sprintf("%.3f", r.CreateMaxDuringSnapshotMs), s, "same, overlapping the encode")
	row("create_p50_during_snapshot_ms", fmt.Sprintf("%.4f", r.CreateP50DuringSnapshotMs), s, "same, median")
	row("create_p99_during_snapshot_ms", fmt.Sprintf("%.3f", r.CreateP99DuringSnapshotMs), s, "same, 99th percentile")
	row("create_max_outside_snapshot_ms", fmt.Sprintf("%.3f", r.CreateMaxOutsideSnapshotMs), s, "control: longest create not overlapping it")
	row("restore_ms", fmt.Sprintf("%.1f", r.RestoreMs), s, "namespace.ReadImage, streamed from the file")
	rep := fmt.Sprintf("%d", r.LargestBlockReportBytes)
	if r.LargestBlockReportBytes > r.DefaultMaxRequestBytes {
		rep += fmt.Sprintf(" (over namenode.Config.MaxRequestSize, default %d; raised here)", r.DefaultMaxRequestBytes)
	}
	row("largest_block_report_bytes", rep, c, "one datanode's full report")
	row("raft_snapshot_ms", fmt.Sprintf("%.0f", r.RaftSnapshotMs), c, "real namenode, admin Snapshot call (encode, fsync, log compaction)")
	row("create_rpc_p50_ms", fmt.Sprintf("%.3f", r.CreateRPCP50Ms), c, "Create through Raft and the FSM, no snapshot")
	row("create_rpc_max_during_snapshot_ms", fmt.Sprintf("%.2f", r.CreateRPCMaxDuringSnapshotMs), c, "same, overlapping the Raft snapshot")
	row("create_rpc_p99_during_snapshot_ms", fmt.Sprintf("%.2f", r.CreateRPCP99DuringSnapshotMs), c, "same, 99th percentile")
	row("create_rpc_max_outside_snapshot_ms", fmt.Sprintf("%.2f", r.CreateRPCMaxOutsideSnapshotMs), c, "control: longest create not overlapping it")
	row("restart_ready_ms", fmt.Sprintf("%.0f", r.RestartReadyMs), c, "real namenode, snapshot to first read")
	row("gbl_ns_per_block_1000", fmt.Sprintf("%.1f", r.GblNsPerBlock1000), c, "handler, 1000-block file, cached token, on the cached node")
	row("gbl_random_cached_us", fmt.Sprintf("%.1f", r.GblRandomCachedUs), c, "handler, random file, new user each call, cached mode")
	row("gbl_random_per_request_us", fmt.Sprintf("%.1f", r.GblRandomPerRequestUs), c, "same, per-request mode, on the other node, in alternating turns; the nodes swap modes between runs")
	row("gbl_random_cached_over_per_request", fmt.Sprintf("%.3f", r.GblRandomCachedOverPerRequest), c, "the two above, median of each run's ratio")
	row("stat_random_cached_node_us", fmt.Sprintf("%.1f", r.StatRandomCachedNodeUs), c, "control: GetFileInfo, same files, on the cached node")
	row("stat_random_per_request_node_us", fmt.Sprintf("%.1f", r.StatRandomPerRequestNodeUs), c, "control: same, on the per-request node")
	row("stat_random_cached_over_per_request_node", fmt.Sprintf("%.3f", r.StatRandomCachedOverPerRequest), c, "control: the two above, median of each run's ratio")
	tw.Flush()
}
