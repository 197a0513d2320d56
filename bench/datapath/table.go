package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/blockfs/blockfs/bench/internal/results"
)

// The acceptance floors and goals.
const (
	getFloor, getGoal = 0.5, 0.8 // get / stream floor
	putFloor, putGoal = 0.8, 0.9 // put x replication / disk floor
	readEndMax        = 2.0      // read4k latency, end of block / offset 0
	heapBaseMiB       = 256.0    // peak heap < this + the in-flight cap
)

// rows turns one cluster's runs into table rows: medians over runs, and
// ratios as medians of per-run ratios.
func (r *rig) rows(figs []runFigures, capBytes int64) []Row {
	col := func(f func(runFigures) float64) []float64 {
		out := make([]float64, len(figs))
		for i, x := range figs {
			out[i] = f(x)
		}
		return out
	}
	disk := col(func(f runFigures) float64 { return f.disk })
	stream := col(func(f runFigures) float64 { return f.stream })
	crypto := col(func(f runFigures) float64 { return f.crypto })
	base := Row{Encrypted: r.enc, FloorDiskMBPS: results.Median(disk), FloorStreamMBPS: results.Median(stream), FloorCryptoMBPS: results.Median(crypto)}
	ratio := func(a []float64, f func(i int, x float64) float64) float64 {
		per := make([]float64, len(a))
		for i, x := range a {
			per[i] = f(i, x)
		}
		return results.Median(per)
	}
	counts := []int{1}
	if r.cfg.Clients > 1 {
		counts = append(counts, r.cfg.Clients)
	}
	var rows []Row
	for _, n := range counts {
		put := col(func(f runFigures) float64 { return f.put[n] })
		row := base
		row.Case, row.Clients, row.MBPerS, row.Runs, row.Bytes = "put", n, results.Median(put), put, r.cfg.Size
		row.Ratio = ratio(put, func(i int, x float64) float64 { return x * replication / disk[i] })
		row.Against, row.Floor, row.Goal = fmt.Sprintf("put x %d / disk floor", replication), putFloor, putGoal
		rows = append(rows, row)
	}
	for _, n := range counts {
		get := col(func(f runFigures) float64 { return f.get[n] })
		row := base
		row.Case, row.Clients, row.MBPerS, row.Runs, row.Bytes = "get", n, results.Median(get), get, r.cfg.Size
		row.Ratio = ratio(get, func(i int, x float64) float64 { return x / stream[i] })
		row.Against, row.Floor, row.Goal = "get / stream floor", getFloor, getGoal
		rows = append(rows, row)
	}
	us0 := col(func(f runFigures) float64 { return f.readUS[0] })
	for k, off := range []int64{0, r.cfg.BlockSize - readSize} {
		us := col(func(f runFigures) float64 { return f.readUS[k] })
		row := base
		row.Case, row.Clients, row.ReadOffset, row.Bytes = "read4k", 1, off, readSize
		row.MedianUS, row.Runs = results.Median(us), us
		row.DiskBytesPerRead = results.Median(col(func(f runFigures) float64 { return f.readDisk[k] }))
		row.BytesPerChecksum = figs[0].bpc
		if row.BytesPerChecksum > 0 {
			row.ChunksPerRead = row.DiskBytesPerRead / float64(row.BytesPerChecksum)
		}
		if k == 1 {
			row.Ratio = ratio(us, func(i int, x float64) float64 { return x / us0[i] })
			row.Against, row.Floor, row.AtMost = "latency / latency at offset 0", readEndMax, true
		}
		rows = append(rows, row)
	}
	heap := col(func(f runFigures) float64 { return f.cwHeap.peak })
	limit := heapBaseMiB + float64(capBytes)/(1<<20)
	row := base
	row.Case, row.Clients, row.Bytes = "concurrent-writes", r.cfg.Writers, int64(r.cfg.Writers)*r.cfg.WriteBlock
	row.MBPerS = results.Median(col(func(f runFigures) float64 { return f.cwMBPS }))
	row.PeakHeapMiB, row.Runs = results.Median(heap), heap
	row.PeakLiveHeapMiB = results.Median(col(func(f runFigures) float64 { return f.cwHeap.peakLive }))
	row.BaseHeapMiB = results.Median(col(func(f runFigures) float64 { return f.cwHeap.base }))
	row.Ratio = ratio(heap, func(_ int, x float64) float64 { return x / limit })
	row.Against, row.Floor, row.AtMost = fmt.Sprintf("peak heap / %.0f MiB", limit), 1, true
	rows = append(rows, row)
	return rows
}

// verdict says whether a row's ratio meets the floor and goal.
func verdict(r Row) string {
	switch {
	case r.Floor == 0:
		return ""
	case r.AtMost && r.Ratio <= r.Floor, !r.AtMost && r.Goal > 0 && r.Ratio >= r.Goal:
		return "ok"
	case !r.AtMost && r.Ratio >= r.Floor:
		return "ok (goal missed)"
	}
	return "MISSED"
}

func need(r Row) string {
	switch {
	case r.Floor == 0:
		return ""
	case r.AtMost:
		return fmt.Sprintf("<= %.1fx", r.Floor)
	case r.Goal > 0:
		return fmt.Sprintf(">= %.1fx (goal %.1fx)", r.Floor, r.Goal)
	}
	return fmt.Sprintf(">= %.1fx", r.Floor)
}

func printTable(out io.Writer, rows []Row) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "case\tat rest\tclients\tMB/s\toffset\tmedian us\tdisk B/read\tpeak heap MiB\tratio\tagainst\tneeds\tverdict\t")
	num := func(x float64, format string) string {
		if x == 0 {
			return "-"
		}
		return fmt.Sprintf(format, x)
	}
	for _, r := range rows {
		off := "-"
		if r.Case == "read4k" {
			off = fmt.Sprint(r.ReadOffset)
		}
		ratio := "-"
		if r.Against != "" {
			ratio = fmt.Sprintf("%.2fx", r.Ratio)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.Case, encName(r.Encrypted), r.Clients,
			num(r.MBPerS, "%.1f"), off, num(r.MedianUS, "%.0f"), num(r.DiskBytesPerRead, "%.0f"), num(r.PeakHeapMiB, "%.0f"),
			ratio, r.Against, need(r), verdict(r))
	}
	tw.Flush()
}

// printFloors prints each cluster's floors and the checks the table's
// ratio column cannot hold: disk bytes of the read at the block's end, and
// what the heap bound is made of.
func printFloors(out io.Writer, rows []Row, capBytes int64, capName string) {
	for _, r := range rows {
		if r.Case == "put" && r.Clients == 1 {
			fmt.Fprintf(out, "floors %-9s disk (write+fsync) %.1f MB/s, gRPC stream %.1f MB/s, AES-CTR+CRC32C %.1f MB/s\n",
				encName(r.Encrypted), r.FloorDiskMBPS, r.FloorStreamMBPS, r.FloorCryptoMBPS)
		}
	}
	for _, r := range rows {
		if r.Case != "read4k" || r.ReadOffset == 0 {
			continue
		}
		bpc := r.BytesPerChecksum
		if bpc == 0 {
			fmt.Fprintf(out, "read4k %-9s end of block: %.0f disk bytes per read; the block has no chunk size (old format), so the two-chunk bound is not checked\n", encName(r.Encrypted), r.DiskBytesPerRead)
			continue
		}
		bound := diskBound(bpc)
		v := "ok"
		if r.DiskBytesPerRead > float64(bound) {
			v = "MISSED"
		}
		fmt.Fprintf(out, "read4k %-9s end of block: %.0f disk bytes per read = %.1f chunks of %d B; bound %d B %s\n",
			encName(r.Encrypted), r.DiskBytesPerRead, r.ChunksPerRead, bpc, bound, v)
	}
	fmt.Fprintln(out, "disk bytes per read: lbm.Store.DiskBytesRead (block bytes and chunk CRCs read from data files, page cache or not), summed over the datanodes")
	fmt.Fprintf(out, "heap bound: %.0f MiB + in-flight cap %d MiB (%s); peak heap is this process (every in-process namenode and datanode) above its post-GC baseline, writers in a child process\n",
		heapBaseMiB, capBytes>>20, capName)
	for _, r := range rows {
		if r.Case == "concurrent-writes" {
			fmt.Fprintf(out, "heap %-9s peak +%.0f MiB over a %.0f MiB baseline; peak live heap (as of the last GC) +%.0f MiB\n",
				encName(r.Encrypted), r.PeakHeapMiB, r.BaseHeapMiB, r.PeakLiveHeapMiB)
		}
	}
}

// diskBound is the most a 4 KiB read may take from disk: two chunks when
// a chunk holds the read, else the chunks the read spans plus one (an
// unaligned read straddles one more), each with its 4-byte CRC.
func diskBound(bpc int) int {
	chunks := (readSize+bpc-1)/bpc + 1
	return chunks*bpc + chunks*4
}
