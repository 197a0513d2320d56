package main

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/blockfs/blockfs/bench/internal/results"
)

// printTable prints the rows in the KUDU-3210 shape: one line per
// configuration, throughput and speedup against the 1-goroutine run
// without a cache on the same side.
func printTable(rows []Row) {
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "side\tworkload\tgoroutines\tlock\tops/s (median)\tspeedup vs 1g none\tcpu us/op\thit ratio\t")
	for _, r := range rows {
		lock := "sharded"
		if r.GlobalMutex {
			lock = "global mutex"
		}
		hr := "-"
		if r.HitRatio != nil {
			hr = fmt.Sprintf("%.3f", *r.HitRatio)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%.0f\t%.2fx\t%.3f\t%s\t\n", r.Side, r.Workload, r.Goroutines, lock, r.OpsPerSec, r.Speedup, r.CPUPerOp, hr)
	}
	tw.Flush()
}

// runRatios returns a's ops/s over b's, run by run (both series were
// measured once in every run, so each ratio compares the same stretch of
// machine load), and their median.
func runRatios(a, b *Row) (per []float64, med float64) {
	if a == nil || b == nil {
		return nil, math.NaN()
	}
	for i := range a.Runs {
		per = append(per, a.Runs[i]/b.Runs[i])
	}
	return per, results.Median(per)
}

// printFloors checks the floors on each side, each as the median
// of per-run ratios, and says which were missed; it never changes a
// figure.
func printFloors(rows []Row, gs []int, c1, c2 float64) {
	floor := func(side, what string, a, b *Row, limit float64, atMost bool) {
		per, med := runRatios(a, b)
		ok := med >= limit
		bound := "at least"
		if atMost {
			ok, bound = med <= limit, "at most"
		}
		verdict := "ok"
		if !ok {
			verdict = "MISSED"
		}
		runs := make([]string, len(per))
		for i, x := range per {
			runs[i] = fmt.Sprintf("%.2f", x)
		}
		fmt.Printf("floor %-8s %-36s %7.2fx (%s %.1fx) %-6s runs: %s\n", side, what, med, bound, limit, verdict, strings.Join(runs, " "))
	}
	for _, side := range []string{"issuer", "verifier"} {
		none1 := findRow(rows, side, "none", 1, false)
		for _, g := range gs {
			if g <= 2 {
				// A miss costs none/miss times a call without a cache.
				none, miss := findRow(rows, side, "none", g, false), findRow(rows, side, "miss", g, false)
				floor(side, fmt.Sprintf("miss cost / none cost, %d goroutine(s)", g), none, miss, 1.3, true)
				if none != nil && miss != nil {
					cpu := make([]float64, len(miss.CPURuns))
					for i := range cpu {
						cpu[i] = miss.CPURuns[i] / none.CPURuns[i]
					}
					fmt.Printf("      %-8s %-36s %7.2fx (CPU per op, not subject to other load)\n", side, "  same in CPU time", results.Median(cpu))
				}
			}
		}
		floor(side, "hit / none, 1 goroutine", findRow(rows, side, "hit", 1, false), none1, 30, false)
		if slices.Contains(gs, 2) {
			floor(side, "none, 2 goroutines / 1 goroutine", findRow(rows, side, "none", 2, false), none1, 1.6, false)
		}
	}
	fmt.Printf("control: bare ed25519.Verify 1 goroutine %.0f/s, 2 goroutines %.0f/s (%.2fx): the machine's ceiling for the scaling floors\n", c1, c2, c2/c1)
}
