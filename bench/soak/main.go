// Command soak runs a mixed workload against an in-process cluster (3
// namenodes, 5 datanodes, small blocks) while it stops and restarts random
// namenodes and datanodes, and reports throughput, latency, faults and
// anomalies:
//
//	go run ./bench/soak --duration 2m [--seed N] [--json FILE]
//
// Workload: writes of files of a few blocks (content derived from the
// file's name), byte-compared reads, GetBlockLocations, deletes and
// renames, through the Go client; plus windows of single-RPC namespace
// operations on a tiny path set whose histories are checked for
// linearizability with porcupine (robustness.Model). At the end every file
// whose write was acknowledged (and not deleted or renamed away) must read
// back byte-identical, and the namenodes must agree. Heap (after GC) and
// goroutines are sampled after warm-up and at the end; they must stay
// within a generous bound. The last line reads
// "anomalies: N, lost writes: N, faults: N, ops: N"; the exit status is
// non-zero if anything was lost, any anomaly was found, or memory grew.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"
)

func main() {
	cfg := Config{}
	flag.DurationVar(&cfg.Duration, "duration", 2*time.Minute, "how long to run the workload")
	flag.Uint64Var(&cfg.Seed, "seed", uint64(time.Now().UnixNano()), "random seed (workload and fault choice)")
	flag.StringVar(&cfg.JSON, "json", "", "also write the report as JSON to this file")
	flag.IntVar(&cfg.Workers, "workers", 4, "concurrent file workers")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Duration+5*time.Minute)
	defer cancel()
	rep, err := Run(ctx, cfg, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(2)
	}
	if !rep.Passed() {
		os.Exit(1)
	}
}
