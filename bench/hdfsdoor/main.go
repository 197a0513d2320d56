// Command hdfsdoor measures the throughput of the HDFS doors against the
// gRPC door on one in-process cluster (3 namenodes, 3 datanodes,
// replication 3, one block size): --size bytes written and read back by an
// unmodified HDFS client (github.com/colinmarc/hdfs/v2: CreateFile, Write,
// Close; Open, Read) through the namenode's Hadoop IPC door and the
// datanodes' DataTransferProtocol doors, and the same bytes through
// blockfs's own client (client.Create, Write, Close; Open, Read) over gRPC.
//
// Each run writes then reads one file per door, the doors' order
// alternating run by run, a GC before every case; the rows are medians
// over --runs of MB/s (10^6 bytes per second), and the ratios are medians
// of the per-run ratios HDFS/gRPC, so they compare figures taken a minute
// apart at most.
//
//	go run ./bench/hdfsdoor --size 1GiB --runs 3 --json out.json
//	go run ./bench/hdfsdoor --size 64MiB --runs 1   # a smoke run
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	hdfs "github.com/colinmarc/hdfs/v2"

	"github.com/blockfs/blockfs/bench/internal/results"
	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/localcluster"
	"github.com/blockfs/blockfs/namenode"
)

// Config is one invocation's settings.
type Config struct {
	Size, BlockSize, IOSize int64
	Runs                    int
	JSON                    string
	Dir                     string // cluster data ("" for a temporary directory)
}

// Row is one door's figure of one direction, over all runs.
type Row struct {
	Door      string    `json:"door"` // "grpc" or "hdfs"
	Op        string    `json:"op"`   // "write" or "read"
	Bytes     int64     `json:"bytes"`
	BlockSize int64     `json:"block_size"`
	MBps      []float64 `json:"mb_per_s"` // per run
	Median    float64   `json:"median_mb_per_s"`
	// Ratio is the median of the runs' HDFS/gRPC ratios (hdfs rows only).
	Ratio float64 `json:"ratio_to_grpc,omitempty"`
}

func main() {
	log.SetFlags(0)
	size := flag.String("size", "1GiB", "bytes each door writes and reads per run (KiB, MiB, GiB suffixes)")
	blockSize := flag.String("block-size", "64MiB", "block size of every file, both doors")
	ioSize := flag.String("io-size", "4MiB", "the buffer each Write and Read call passes")
	runs := flag.Int("runs", 3, "runs; rows are medians over runs")
	jsonOut := flag.String("json", "", "also write the rows as JSON to this file")
	dir := flag.String("dir", "", "directory for the cluster's data (default: a temporary directory, removed afterwards)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole run (cluster and clients: one process) to this file")
	flag.Parse()
	if flag.NArg() > 0 {
		log.Fatalf("hdfsdoor: unexpected argument %q", flag.Arg(0))
	}
	cfg := Config{Runs: *runs, JSON: *jsonOut, Dir: *dir}
	var err error
	for _, s := range []struct {
		flag string
		in   string
		out  *int64
	}{{"--size", *size, &cfg.Size}, {"--block-size", *blockSize, &cfg.BlockSize}, {"--io-size", *ioSize, &cfg.IOSize}} {
		if *s.out, err = results.ParseSize(s.in); err != nil {
			log.Fatalf("hdfsdoor: %s: %v", s.flag, err)
		}
	}
	if cfg.Runs < 1 {
		log.Fatalf("hdfsdoor: --runs %d: must be at least 1", cfg.Runs)
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	ctx := context.Background()
	rows, err := Run(ctx, cfg, os.Stderr)
	if err != nil {
		pprof.StopCPUProfile()
		log.Fatalf("hdfsdoor: %v", err)
	}
	WriteTable(os.Stdout, cfg, rows)
	if cfg.JSON != "" {
		if err := results.WriteJSON(cfg.JSON, rows); err != nil {
			pprof.StopCPUProfile()
			log.Fatal(err)
		}
	}
}

// door is one way in: write and read one file of the run's bytes.
type door struct {
	name  string
	write func(ctx context.Context, p string, data []byte, size int64) error
	read  func(ctx context.Context, p string, buf []byte) (int64, error)
}

// Run starts the cluster and measures every run; rows are grpc write,
// grpc read, hdfs write, hdfs read.
func Run(ctx context.Context, cfg Config, logw io.Writer) ([]Row, error) {
	dir := cfg.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "hdfsdoor-bench-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	lc, err := localcluster.Start(sctx, localcluster.Config{
		Dir: dir, Namenodes: 3, Datanodes: 3, HDFSData: true,
		Namenode: func(_ int, nc *namenode.Config) { nc.HDFSRPC.Addr = "127.0.0.1:0" },
	})
	cancel()
	if err != nil {
		return nil, fmt.Errorf("start cluster: %w", err)
	}
	defer lc.Close()
	bc, err := lc.Client()
	if err != nil {
		return nil, err
	}
	defer bc.Close()
	hc, err := hdfs.NewClient(hdfs.ClientOptions{Addresses: lc.HDFSRPCAddrs(), User: "root"})
	if err != nil {
		return nil, err
	}
	defer hc.Close()

	doors := []door{
		{name: "grpc",
			write: func(ctx context.Context, p string, data []byte, size int64) error {
				w, err := bc.Create(ctx, p, client.CreateOptions{Overwrite: true, Replication: 3, BlockSize: uint64(cfg.BlockSize)})
				return writeFile(w, err, data, size)
			},
			read: func(ctx context.Context, p string, buf []byte) (int64, error) {
				r, err := bc.Open(ctx, p)
				if err != nil {
					return 0, err
				}
				defer r.Close()
				return readAll(r, buf)
			}},
		{name: "hdfs",
			write: func(_ context.Context, p string, data []byte, size int64) error {
				w, err := hc.CreateFile(p, 3, cfg.BlockSize, 0o644)
				return writeFile(w, err, data, size)
			},
			read: func(_ context.Context, p string, buf []byte) (int64, error) {
				r, err := hc.Open(p)
				if err != nil {
					return 0, err
				}
				defer r.Close()
				return readAll(r, buf)
			}},
	}
	data := make([]byte, cfg.IOSize)
	for i := range data {
		data[i] = byte(rand.N(256))
	}
	buf := make([]byte, cfg.IOSize)
	if err := bc.Mkdirs(ctx, "/bench", 0o755, true); err != nil {
		return nil, err
	}
	mbps := map[string][]float64{} // door/op -> per run
	timed := func(fn func() error) (float64, error) {
		runtime.GC()
		t0 := time.Now()
		if err := fn(); err != nil {
			return 0, err
		}
		return float64(cfg.Size) / 1e6 / time.Since(t0).Seconds(), nil
	}
	for run := range cfg.Runs {
		order := doors
		if run%2 == 1 {
			order = []door{doors[1], doors[0]}
		}
		for _, d := range order {
			p := fmt.Sprintf("/bench/%s-%d", d.name, run)
			w, err := timed(func() error { return d.write(ctx, p, data, cfg.Size) })
			if err != nil {
				return nil, fmt.Errorf("run %d: %s write: %w", run+1, d.name, err)
			}
			r, err := timed(func() error {
				n, err := d.read(ctx, p, buf)
				if err == nil && n != cfg.Size {
					err = fmt.Errorf("read %d bytes, want %d", n, cfg.Size)
				}
				return err
			})
			if err != nil {
				return nil, fmt.Errorf("run %d: %s read: %w", run+1, d.name, err)
			}
			// The last buffer read is the data's last buffer: a check that
			// the bytes came back, not only their count.
			if tail := cfg.Size % cfg.IOSize; tail == 0 && !bytes.Equal(buf, data) {
				return nil, fmt.Errorf("run %d: %s read other bytes than were written", run+1, d.name)
			}
			mbps[d.name+"/write"] = append(mbps[d.name+"/write"], w)
			mbps[d.name+"/read"] = append(mbps[d.name+"/read"], r)
			fmt.Fprintf(logw, "hdfsdoor: run %d/%d: %s write %.1f MB/s, read %.1f MB/s\n", run+1, cfg.Runs, d.name, w, r)
			if err := bc.Delete(ctx, p, false); err != nil {
				return nil, err
			}
		}
	}
	var rows []Row
	for _, d := range doors {
		for _, op := range []string{"write", "read"} {
			xs := mbps[d.name+"/"+op]
			row := Row{Door: d.name, Op: op, Bytes: cfg.Size, BlockSize: cfg.BlockSize, MBps: xs, Median: results.Median(xs)}
			if d.name == "hdfs" {
				var ratios []float64
				for i, g := range mbps["grpc/"+op] {
					ratios = append(ratios, xs[i]/g)
				}
				row.Ratio = results.Median(ratios)
			}
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// writeAll writes size bytes, data over and over.
// writeFile writes size bytes to w, the file a create returned (unless
// err), and closes it.
func writeFile(w io.WriteCloser, err error, data []byte, size int64) error {
	if err != nil {
		return err
	}
	if err := writeAll(w, data, size); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

func writeAll(w io.Writer, data []byte, size int64) error {
	for left := size; left > 0; {
		n := min(left, int64(len(data)))
		if _, err := w.Write(data[:n]); err != nil {
			return err
		}
		left -= n
	}
	return nil
}

// readAll reads r to its end through buf and returns the bytes read.
func readAll(r io.Reader, buf []byte) (int64, error) {
	var total int64
	for {
		n, err := io.ReadFull(r, buf)
		total += int64(n)
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// WriteTable prints the medians and the ratios.
func WriteTable(w io.Writer, cfg Config, rows []Row) {
	fmt.Fprintf(w, "%d MiB per door and run, block size %d MiB, replication 3, 3 namenodes + 3 datanodes in process; medians of %d runs\n",
		cfg.Size>>20, cfg.BlockSize>>20, cfg.Runs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "door\top\tMB/s (median)\truns\tHDFS/gRPC\t\n")
	for _, r := range rows {
		var runs []string
		for _, x := range r.MBps {
			runs = append(runs, strconv.FormatFloat(x, 'f', 1, 64))
		}
		ratio := "-"
		if r.Door == "hdfs" {
			ratio = fmt.Sprintf("%.2fx", r.Ratio)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.1f\t%s\t%s\t\n", r.Door, r.Op, r.Median, strings.Join(runs, " "), ratio)
	}
	tw.Flush()
}
