package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
)

// Ops of a row.
const (
	OpGetBlockLocations = "get_block_locations"
	OpOpenRead          = "open_read_first_block"
)

// Row is one line of the JSON and CSV output: one operation on one file in
// one token mode.
type Row struct {
	TokenMode        string  `json:"token_mode"`
	Op               string  `json:"op"`
	Blocks           int     `json:"blocks"`
	Calls            int     `json:"calls"`
	Concurrency      int     `json:"concurrency"`
	MeanMs           float64 `json:"mean_ms"`
	MedianMs         float64 `json:"median_ms"`
	StddevMs         float64 `json:"stddev_ms"`
	P99Ms            float64 `json:"p99_ms"`
	ThroughputPerSec float64 `json:"throughput_per_sec"`
	FloorMedianMs    float64 `json:"floor_median_ms"`
	Errors           int     `json:"errors"`
	P25Ms            float64 `json:"p25_ms"`
	P75Ms            float64 `json:"p75_ms"`
	Door             string  `json:"door"`
}

// Rows flattens a result: per mode, the GetBlockLocations rows in block
// order, then (with --read) the open+read rows.
func (r *Result) Rows() []Row {
	out := []Row{}
	door := r.Door
	if door == "" {
		door = DoorGRPC
	}
	for _, m := range r.Modes {
		row := func(op string, blocks int, ms *Measure) Row {
			return Row{
				TokenMode: m.Mode, Op: op, Blocks: blocks, Calls: r.Calls, Concurrency: r.Concurrency,
				MeanMs: ms.Summary.Mean, MedianMs: ms.Summary.Median, StddevMs: ms.Summary.StdDev, P99Ms: ms.Summary.P99,
				ThroughputPerSec: ms.Throughput(), FloorMedianMs: m.Floor.Summary.Median, Errors: ms.Errors,
				P25Ms: ms.Summary.P25, P75Ms: ms.Summary.P75, Door: door,
			}
		}
		for i := range m.Cells {
			out = append(out, row(OpGetBlockLocations, m.Cells[i].Blocks, &m.Cells[i].GBL))
		}
		for i := range m.Cells {
			if m.Cells[i].Read != nil {
				out = append(out, row(OpOpenRead, m.Cells[i].Blocks, m.Cells[i].Read))
			}
		}
	}
	return out
}

// WriteJSON writes rows as an indented JSON array.
func WriteJSON(w io.Writer, rows []Row) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rows)
}

var csvHeader = []string{"token_mode", "op", "blocks", "calls", "concurrency", "mean_ms", "median_ms", "stddev_ms", "p99_ms", "throughput_per_sec", "floor_median_ms", "errors", "p25_ms", "p75_ms", "door"}

// WriteCSV writes rows as CSV with a header line.
func WriteCSV(w io.Writer, rows []Row) error {
	cw := csv.NewWriter(w)
	cw.Write(csvHeader)
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }
	for _, r := range rows {
		cw.Write([]string{r.TokenMode, r.Op, strconv.Itoa(r.Blocks), strconv.Itoa(r.Calls), strconv.Itoa(r.Concurrency),
			f(r.MeanMs), f(r.MedianMs), f(r.StddevMs), f(r.P99Ms), f(r.ThroughputPerSec), f(r.FloorMedianMs), strconv.Itoa(r.Errors),
			f(r.P25Ms), f(r.P75Ms), r.Door})
	}
	cw.Flush()
	return cw.Error()
}

// WriteTables prints the HDFS-1081 tables: one per mode (rows mean,
// median, std dev, p99 in ms, then the median as a multiple of the health
// check floor, throughput and errors; one column per block count), then the
// ratio of each mode to per-block.
func WriteTables(w io.Writer, r *Result) {
	door := r.Door
	if door == "" {
		door = DoorGRPC
	}
	floor := "gRPC health check, same namenode"
	if door == DoorHDFS {
		floor = "getServerDefaults through the HDFS door, same connection"
	}
	for _, m := range r.Modes {
		reported := ""
		if m.Reported != m.Mode {
			reported = fmt.Sprintf(" (cluster reports %q)", m.Reported)
		}
		fmt.Fprintf(w, "%s door, token mode %s%s: GetBlockLocations round trip (ms), %d calls per block count, concurrency %d\n",
			door, m.Mode, reported, r.Calls, r.Concurrency)
		fl := m.Floor.Summary
		fmt.Fprintf(w, "floor (%s): median %.3f  mean %.3f  std dev %.3f  p99 %.3f ms  (%d errors)\n",
			floor, fl.Median, fl.Mean, fl.StdDev, fl.P99, m.Floor.Errors)
		cells := make([]*Measure, len(m.Cells))
		for i := range m.Cells {
			cells[i] = &m.Cells[i].GBL
		}
		measureTable(w, m.Cells, cells, fl.Median)
		if r.Read {
			fmt.Fprintf(w, "%s door, token mode %s: open + read first block (ms, includes the datanode's token check)\n", door, m.Mode)
			reads := make([]*Measure, len(m.Cells))
			for i := range m.Cells {
				reads[i] = m.Cells[i].Read
			}
			measureTable(w, m.Cells, reads, fl.Median)
		}
	}
	ratioTable(w, r)
}

func header(tw io.Writer, label string, cells []Cell) {
	fmt.Fprint(tw, label)
	for _, c := range cells {
		fmt.Fprintf(tw, "\t%d blocks", c.Blocks)
	}
	fmt.Fprint(tw, "\t\n")
}

func measureTable(w io.Writer, cells []Cell, ms []*Measure, floor float64) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header(tw, "", cells)
	line := func(label string, f func(m *Measure) string) {
		fmt.Fprint(tw, label)
		for _, m := range ms {
			if m == nil {
				fmt.Fprint(tw, "\t-")
				continue
			}
			fmt.Fprint(tw, "\t"+f(m))
		}
		fmt.Fprint(tw, "\t\n")
	}
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	line("mean", func(m *Measure) string { return num(m.Summary.Mean) })
	line("median", func(m *Measure) string { return num(m.Summary.Median) })
	line("std dev", func(m *Measure) string { return num(m.Summary.StdDev) })
	line("p99", func(m *Measure) string { return num(m.Summary.P99) })
	line("median/floor", func(m *Measure) string {
		if floor <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.1fx", m.Summary.Median/floor)
	})
	line("calls/s", func(m *Measure) string { return strconv.FormatFloat(m.Throughput(), 'f', 0, 64) })
	line("errors", func(m *Measure) string { return strconv.Itoa(m.Errors) })
	tw.Flush()
	fmt.Fprintln(w)
}

// ratioTable prints mean and median of each mode divided by per-block's,
// per block count (below 1 is better), like the seed's "% difference".
func ratioTable(w io.Writer, r *Result) {
	base := r.Mode("per-block")
	if base == nil || len(r.Modes) < 2 {
		return
	}
	fmt.Fprintf(w, "%s door: ratio to per-block (this mode's time / per-block's; below 1 is faster)\n", r.Door)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header(tw, "", base.Cells)
	for _, m := range r.Modes {
		if m.Mode == base.Mode {
			continue
		}
		for _, stat := range []string{"mean", "median"} {
			fmt.Fprintf(tw, "%s %s", m.Mode, stat)
			for i, bc := range base.Cells {
				if i >= len(m.Cells) {
					fmt.Fprint(tw, "\t-")
					continue
				}
				a, b := m.Cells[i].GBL.Summary.Mean, bc.GBL.Summary.Mean
				if stat == "median" {
					a, b = m.Cells[i].GBL.Summary.Median, bc.GBL.Summary.Median
				}
				if b <= 0 || len(m.Cells[i].GBL.Samples) == 0 {
					fmt.Fprint(tw, "\t-")
					continue
				}
				fmt.Fprintf(tw, "\t%.2f", a/b)
			}
			fmt.Fprint(tw, "\t\n")
		}
	}
	tw.Flush()
	fmt.Fprintln(w)
}

// doorTable prints, when the HDFS door was swept next to the gRPC door,
// each mode's median through the HDFS door divided by the gRPC door's,
// per block count (above 1: the HDFS door is slower).
func doorTable(w io.Writer, res []*Result) {
	var g, h *Result
	for _, r := range res {
		switch r.Door {
		case DoorGRPC:
			g = r
		case DoorHDFS:
			h = r
		}
	}
	if g == nil || h == nil || len(g.Modes) == 0 {
		return
	}
	fmt.Fprintln(w, "HDFS door / gRPC door (median round trip through Hadoop IPC / through gRPC, same run; above 1 is slower)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header(tw, "", g.Modes[0].Cells)
	for _, gm := range g.Modes {
		hm := h.Mode(gm.Mode)
		if hm == nil {
			continue
		}
		fmt.Fprint(tw, gm.Mode+" median")
		for i, gc := range gm.Cells {
			if i >= len(hm.Cells) || gc.GBL.Summary.Median <= 0 || len(hm.Cells[i].GBL.Samples) == 0 {
				fmt.Fprint(tw, "\t-")
				continue
			}
			fmt.Fprintf(tw, "\t%.2f", hm.Cells[i].GBL.Summary.Median/gc.GBL.Summary.Median)
		}
		fmt.Fprint(tw, "\t\n")
	}
	tw.Flush()
	fmt.Fprintln(w)
}
