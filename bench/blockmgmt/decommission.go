package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"text/tabwriter"
	"time"

	"github.com/blockfs/blockfs/bench/internal/results"
	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/localcluster"
)

// The decommission floor: one datanode's bytes re-replicate at least this
// fraction of the datapath floor's MB/s.
const decommissionFloor = 0.5

// cpuProfile, if set, names the file the decommission phases' CPU
// profile goes to (every run's, appended into one profile).
var cpuProfile string

// DecommissionRow is the decommission part's figures.
type DecommissionRow struct {
	Bytes     int64 `json:"bytes"` // the cluster's file bytes (replication 3)
	Datanodes int   `json:"datanodes"`
	Racks     int   `json:"racks"`
	// NodeBytes are the decommissioned datanode's replica bytes, per run.
	NodeBytes []int64 `json:"node_bytes"`
	// PutMBPS and GetMBPS are the client write (replication 3) and read
	// of Bytes; Put1MBPS the same write at replication 1, which moves each
	// byte once to one datanode's disk, as a decommission copy does. The
	// datapath floor is the slower of Put1 and Get, per run.
	PutMBPS, Put1MBPS, GetMBPS, DatapathMBPS []float64
	// DecomMBPS is NodeBytes over the time from the Decommission call to
	// the datanode Decommissioned, per run.
	DecomMBPS []float64
	// Ratio is the median of per-run DecomMBPS / DatapathMBPS.
	Ratio float64 `json:"ratio"`
	// GetRatio is the median of per-run DecomMBPS / GetMBPS, for
	// reference: the read leg alone, faster than the write.
	GetRatio float64 `json:"ratio_vs_get"`
}

// runDecommission measures runs clusters of 5 datanodes in 2 racks, each
// holding size bytes: put, get, then decommission the datanode holding
// the most.
func runDecommission(ctx context.Context, runs int, size int64) (DecommissionRow, error) {
	row := DecommissionRow{Bytes: size, Datanodes: 5, Racks: 2}
	data := make([]byte, size)
	if _, err := rand.Read(data); err != nil {
		return row, err
	}
	var prof *os.File
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			return row, err
		}
		defer f.Close()
		prof = f
	}
	var ratios, getRatios []float64
	for r := range runs {
		fig, err := decommissionOnce(ctx, data, prof, r == 0)
		if err != nil {
			return row, fmt.Errorf("run %d: %w", r+1, err)
		}
		row.NodeBytes = append(row.NodeBytes, fig.nodeBytes)
		row.PutMBPS = append(row.PutMBPS, fig.put)
		row.GetMBPS = append(row.GetMBPS, fig.get)
		row.Put1MBPS = append(row.Put1MBPS, fig.put1)
		dp := min(fig.put1, fig.get)
		row.DatapathMBPS = append(row.DatapathMBPS, dp)
		row.DecomMBPS = append(row.DecomMBPS, fig.decom)
		ratios = append(ratios, fig.decom/dp)
		getRatios = append(getRatios, fig.decom/fig.get)
	}
	row.Ratio, row.GetRatio = results.Median(ratios), results.Median(getRatios)
	return row, nil
}

type decomFigures struct {
	nodeBytes             int64
	put, put1, get, decom float64 // MB/s
}

func mbps(n int64, d time.Duration) float64 { return float64(n) / 1e6 / d.Seconds() }

func decommissionOnce(ctx context.Context, data []byte, prof *os.File, profile bool) (decomFigures, error) {
	var fig decomFigures
	dir, err := os.MkdirTemp("", "blockmgmt-")
	if err != nil {
		return fig, err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Config{Namenodes: 1, Datanodes: 5, Racks: 2, Dir: dir})
	if err != nil {
		return fig, err
	}
	defer c.Close()
	cl, err := c.Client()
	if err != nil {
		return fig, err
	}
	defer cl.Close()
	const files = 8
	per := int64(len(data)) / files
	bs := min(int64(16<<20), per)
	bs -= bs % (64 << 10)
	start := time.Now()
	for i := range files {
		part := data[int64(i)*per : int64(i+1)*per]
		if err := cl.WriteFile(ctx, fmt.Sprintf("/f%d", i), part, client.CreateOptions{BlockSize: uint64(bs), Replication: 3}); err != nil {
			return fig, err
		}
	}
	fig.put = mbps(per*files, time.Since(start))
	start = time.Now()
	for i := range files {
		got, err := cl.ReadFile(ctx, fmt.Sprintf("/f%d", i))
		if err != nil {
			return fig, err
		}
		if !bytes.Equal(got, data[int64(i)*per:int64(i+1)*per]) {
			return fig, fmt.Errorf("/f%d read back other bytes", i)
		}
	}
	fig.get = mbps(per*files, time.Since(start))
	// The same bytes once more at replication 1, then gone again before
	// the decommission starts.
	start = time.Now()
	for i := range files {
		part := data[int64(i)*per : int64(i+1)*per]
		if err := cl.WriteFile(ctx, fmt.Sprintf("/r1/f%d", i), part, client.CreateOptions{BlockSize: uint64(bs), Replication: 1}); err != nil {
			return fig, err
		}
	}
	fig.put1 = mbps(per*files, time.Since(start))
	if err := cl.Delete(ctx, "/r1", true); err != nil {
		return fig, err
	}
	// The datanode holding the most bytes leaves.
	held := map[string]int64{}
	for i := range files {
		locs, err := cl.GetBlockLocations(ctx, fmt.Sprintf("/f%d", i), 0, 0)
		if err != nil {
			return fig, err
		}
		for _, b := range locs.Blocks {
			for _, d := range b.Locations {
				held[d.Id] += int64(b.Block.Length)
			}
		}
	}
	var x string
	for id, n := range held {
		if n > fig.nodeBytes || (n == fig.nodeBytes && id < x) {
			x, fig.nodeBytes = id, n
		}
	}
	if profile && prof != nil {
		if err := pprof.StartCPUProfile(prof); err != nil {
			return fig, err
		}
		defer pprof.StopCPUProfile()
	}
	start = time.Now()
	if _, err := cl.Decommission(ctx, []string{x}); err != nil {
		return fig, err
	}
	for {
		cs, err := cl.ClusterStatus(ctx)
		if err != nil {
			return fig, err
		}
		done := false
		for _, d := range cs.Datanodes {
			if d.Id == x && d.AdminState == "DECOMMISSIONED" {
				done = true
			}
		}
		if done {
			break
		}
		if ctx.Err() != nil {
			return fig, fmt.Errorf("%s never decommissioned", x)
		}
		time.Sleep(5 * time.Millisecond)
	}
	fig.decom = mbps(fig.nodeBytes, time.Since(start))
	return fig, nil
}

func printDecommission(out io.Writer, r DecommissionRow) {
	fmt.Fprintf(out, "decommission: %d MiB in 8 files (replication 3) on %d datanodes in %d racks, the datanode holding the most leaves; median of %d runs\n",
		r.Bytes>>20, r.Datanodes, r.Racks, len(r.DecomMBPS))
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "case\tMiB\tMB/s\tratio\tagainst\tneeds\tverdict\t")
	nb := make([]float64, len(r.NodeBytes))
	for i, n := range r.NodeBytes {
		nb[i] = float64(n)
	}
	fmt.Fprintf(tw, "put (replication 3)\t%d\t%.1f\t-\t-\t-\t-\t\n", r.Bytes>>20, results.Median(r.PutMBPS))
	fmt.Fprintf(tw, "put (replication 1)\t%d\t%.1f\t-\t-\t-\t-\t\n", r.Bytes>>20, results.Median(r.Put1MBPS))
	fmt.Fprintf(tw, "get\t%d\t%.1f\t-\t-\t-\t-\t\n", r.Bytes>>20, results.Median(r.GetMBPS))
	fmt.Fprintf(tw, "datapath floor\t%d\t%.1f\t-\t-\t-\t-\t\n", r.Bytes>>20, results.Median(r.DatapathMBPS))
	fmt.Fprintf(tw, "decommission\t%.0f\t%.1f\t%.2fx\tdatapath floor\t>= %.1fx\t%s\t\n", results.Median(nb)/(1<<20),
		results.Median(r.DecomMBPS), r.Ratio, decommissionFloor, verdict(r.Ratio, decommissionFloor, false))
	fmt.Fprintf(tw, "decommission / get\t-\t-\t%.2fx\tget alone\t-\t(for reference)\t\n", r.GetRatio)
	tw.Flush()
	fmt.Fprintln(out, "datapath floor: the slower of a replication-1 put (each byte once to one datanode's disk, as a copy moves it) and a get of the same bytes on the same cluster, per run; decommission: the leaving datanode's replica bytes over Decommission call -> DECOMMISSIONED")
}
