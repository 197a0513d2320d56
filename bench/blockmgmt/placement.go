package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"text/tabwriter"
	"time"

	"github.com/blockfs/blockfs/bench/internal/results"
	"github.com/blockfs/blockfs/blocks"
)

// The placement floor: choosing targets at 10,000 datanodes costs at most
// this many times what it costs at 10.
const placementFloor = 2.0

// PlacementRow is one cluster size's target choice.
type PlacementRow struct {
	Datanodes int       `json:"datanodes"`
	Racks     int       `json:"racks"`
	NsPerOp   float64   `json:"ns_per_op"` // median over runs
	Runs      []float64 `json:"runs_ns_per_op"`
	// Ratio is NsPerOp over the 10-datanode row's (medians of per-run
	// ratios).
	Ratio float64 `json:"ratio_vs_10"`
}

const benchBlock = 128 << 20

// placementManager registers n datanodes over 10 racks, with capacities
// and usage spread as a real cluster's are (free space from 10% to 90%),
// so the weighted draws reject some candidates.
func placementManager(n int) (*blocks.Manager, error) {
	cfg := blocks.DefaultConfig()
	cfg.Seed = 1
	m, err := blocks.New(cfg)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(7, uint64(n)))
	for i := range n {
		id := fmt.Sprintf("dn%05d", i)
		capacity := uint64(4 << 40)
		used := uint64(float64(capacity) * (0.1 + 0.8*rng.Float64()))
		d := blocks.Datanode{ID: id, Addr: fmt.Sprintf("10.%d.%d.%d:9866", i%10, i/250, i%250), Rack: fmt.Sprintf("/dc/rack%d", i%10), Capacity: capacity, Used: used}
		if err := m.Register(d); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// runPlacement times calls target choices per run at each size.
func runPlacement(runs, calls int) ([]PlacementRow, error) {
	sizes := []int{10, 100, 1000, 10000}
	ms := make([]*blocks.Manager, len(sizes))
	for i, n := range sizes {
		m, err := placementManager(n)
		if err != nil {
			return nil, err
		}
		ms[i] = m
	}
	per := make([][]float64, len(sizes))
	for range runs {
		for i, m := range ms { // each run visits every size, so drift hits all alike
			start := time.Now()
			for range calls {
				got, err := m.ChooseTargets(3, benchBlock, nil, "")
				if err != nil || len(got) != 3 {
					return nil, fmt.Errorf("%d datanodes: %d targets, %v", sizes[i], len(got), err)
				}
			}
			per[i] = append(per[i], float64(time.Since(start).Nanoseconds())/float64(calls))
		}
	}
	rows := make([]PlacementRow, len(sizes))
	for i, n := range sizes {
		ratios := make([]float64, runs)
		for r := range runs {
			ratios[r] = per[i][r] / per[0][r]
		}
		rows[i] = PlacementRow{Datanodes: n, Racks: 10, NsPerOp: results.Median(per[i]), Runs: per[i], Ratio: results.Median(ratios)}
	}
	return rows, nil
}

func printPlacement(out io.Writer, rows []PlacementRow) {
	fmt.Fprintln(out, "target choice per AddBlock (3 replicas, 10 racks, free space 10-90%), median of runs")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "datanodes\tns/op\tratio\tagainst\tneeds\tverdict\t")
	for _, r := range rows {
		if r.Datanodes == 10 {
			fmt.Fprintf(tw, "%d\t%.0f\t1.00x\t-\t-\t-\t\n", r.Datanodes, r.NsPerOp)
			continue
		}
		v, need := "-", "-"
		if r.Datanodes == 10000 {
			v, need = verdict(r.Ratio, placementFloor, true), fmt.Sprintf("<= %.1fx", placementFloor)
		}
		fmt.Fprintf(tw, "%d\t%.0f\t%.2fx\tns/op at 10\t%s\t%s\t\n", r.Datanodes, r.NsPerOp, r.Ratio, need, v)
	}
	tw.Flush()
}
