package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/datanode"
	"github.com/blockfs/blockfs/localcluster"
	"github.com/blockfs/blockfs/namenode"
)

// The balancer figure: on an in-process cluster of one namenode and two
// datanodes, one holding balFill bytes of single-replica blocks and one
// empty, a balancer run at balLimit bytes/s per datanode moves half of it
// (the only sender is the full datanode, so the limit is the run's). The
// figure is the bytes moved over the time from StartBalancer to the last
// move done (polled), against the limit; the floor is within 10% of it.
const (
	balLimit    = 4 << 20  // bytes/s per datanode
	balFill     = 80 << 20 // bytes on the full datanode
	balBlock    = 1 << 20
	balCapacity = 200 << 20
	balFloor    = 0.9 // of the limit
)

type balancerResult struct {
	Runs       int     `json:"runs"`
	LimitMBps  float64 `json:"limit_mb_per_s"`
	MovedMB    float64 `json:"moved_mb"`       // median run
	MovesMBps  float64 `json:"moves_mb_per_s"` // bytes moved / start..last move done, median
	RunMBps    float64 `json:"run_mb_per_s"`   // bytes moved / start..balanced, median
	Ratio      float64 `json:"ratio"`          // MovesMBps / LimitMBps
	Iterations uint32  `json:"iterations"`
	FloorMet   bool    `json:"floor_met"`
}

// runBalancer measures the balancer's MB/s under its bandwidth limit,
// the median of runs runs, each on a fresh cluster.
func runBalancer(ctx context.Context, runs int) (balancerResult, error) {
	if runs < 1 {
		runs = 1
	}
	type one struct {
		moved       uint64
		moves, wall time.Duration
		iterations  uint32
	}
	var all []one
	for range runs {
		moved, moves, wall, iters, err := balancerOnce(ctx)
		if err != nil {
			return balancerResult{}, err
		}
		all = append(all, one{moved, moves, wall, iters})
	}
	mbps := func(b uint64, d time.Duration) float64 { return float64(b) / (1 << 20) / d.Seconds() }
	sort.Slice(all, func(i, j int) bool { return mbps(all[i].moved, all[i].moves) < mbps(all[j].moved, all[j].moves) })
	m := all[len(all)/2]
	r := balancerResult{Runs: runs, LimitMBps: float64(balLimit) / (1 << 20), MovedMB: float64(m.moved) / (1 << 20),
		MovesMBps: mbps(m.moved, m.moves), RunMBps: mbps(m.moved, m.wall), Iterations: m.iterations}
	r.Ratio = r.MovesMBps / r.LimitMBps
	r.FloorMet = r.Ratio >= balFloor && r.Ratio <= 2-balFloor
	return r, nil
}

// balancerOnce fills one datanode, starts the other empty, runs the
// balancer to the end and returns the bytes moved, the time to the last
// move done, the time to the run's end and its iterations.
func balancerOnce(ctx context.Context) (moved uint64, moves, wall time.Duration, iters uint32, err error) {
	c, err := localcluster.Start(ctx, localcluster.Config{Namenodes: 1, Datanodes: 2,
		Namenode: func(_ int, nc *namenode.Config) { nc.Namespace.DefaultBlockSize = balBlock },
		Datanode: func(_ int, dc *datanode.Config) { dc.Store.Capacity = balCapacity }})
	if err != nil {
		return 0, 0, 0, 0, err
	}
	defer c.Close()
	if err := c.StopDatanode(1); err != nil {
		return 0, 0, 0, 0, err
	}
	cl, err := c.Client()
	if err != nil {
		return 0, 0, 0, 0, err
	}
	defer cl.Close()
	data := bytes.Repeat([]byte{0xb1}, 8*balBlock)
	for i := range balFill / len(data) {
		// The first writes may meet the stopped datanode before it is
		// dead (1 s): try again.
		for try := 0; ; try++ {
			err := cl.WriteFile(ctx, fmt.Sprintf("/bal/f%d", i), data, client.CreateOptions{Replication: 1, Overwrite: true})
			if err == nil {
				break
			}
			if ctx.Err() != nil || try == 50 {
				return 0, 0, 0, 0, fmt.Errorf("fill: %w", err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if err := c.RestartDatanode(ctx, 1); err != nil {
		return 0, 0, 0, 0, err
	}
	if err := c.WaitDatanodes(ctx); err != nil {
		return 0, 0, 0, 0, err
	}
	start := time.Now()
	st, err := cl.StartBalancer(ctx, &api.StartBalancerRequest{Threshold: 2, Bandwidth: balLimit})
	if err != nil {
		return 0, 0, 0, 0, err
	}
	var last uint64
	lastAt := start
	for {
		p, err := cl.BalancerProgress(ctx)
		if err != nil {
			return 0, 0, 0, 0, err
		}
		if p.BytesMoved != last {
			last, lastAt = p.BytesMoved, time.Now()
		}
		if p.RunId == st.RunId && p.State != api.BalancerState_BALANCER_RUNNING {
			if p.State != api.BalancerState_BALANCER_BALANCED {
				return 0, 0, 0, 0, fmt.Errorf("balancer ended %s: %s", p.State, p.Reason)
			}
			return p.BytesMoved, lastAt.Sub(start), time.Since(start), p.Iterations, nil
		}
		select {
		case <-ctx.Done():
			return 0, 0, 0, 0, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// printBalancer prints r as a table of figure, value and note.
func printBalancer(out io.Writer, r balancerResult) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tvalue\tnote")
	for _, row := range r.rows() {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", row[0], row[1], row[2])
	}
	tw.Flush()
}

// rows is the figure as (figure, value, note) rows.
func (r balancerResult) rows() [][3]string {
	floor := "met"
	if !r.FloorMet {
		floor = "NOT met"
	}
	return [][3]string{
		{"balancer bandwidth limit", fmt.Sprintf("%.2f MB/s", r.LimitMBps), "per datanode (the one sender)"},
		{"balancer MB/s (moves)", fmt.Sprintf("%.2f MB/s", r.MovesMBps), fmt.Sprintf("%.1f MB moved, start to last move done, median of %d", r.MovedMB, r.Runs)},
		{"balancer MB/s (whole run)", fmt.Sprintf("%.2f MB/s", r.RunMBps), fmt.Sprintf("start to balanced, %d iterations", r.Iterations)},
		{"balancer / limit", fmt.Sprintf("%.3f", r.Ratio), fmt.Sprintf("floor: within 10%% of the limit: %s", floor)},
	}
}
