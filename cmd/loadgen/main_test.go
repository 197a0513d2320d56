package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blockfs/blockfs/localcluster"
)

func TestBadInputExits2(t *testing.T) {
	t.Setenv("BLOCKFS_NAMENODES", "")
	for _, tc := range []struct {
		name string
		args []string
		want string // in the one stderr line
	}{
		{"zero blocks", []string{"--local", "--blocks", "0"}, `"0" is not a positive block count`},
		{"negative blocks", []string{"--local", "--blocks", "1,-5"}, "not a positive block count"},
		{"junk blocks", []string{"--local", "--blocks", "ten"}, "not a positive block count"},
		{"empty blocks", []string{"--local", "--blocks", ","}, "no block counts"},
		{"unknown mode", []string{"--local", "--token-modes", "per-block,bogus"}, `unknown token mode "bogus"`},
		{"mode twice", []string{"--local", "--token-modes", "cached,cached"}, "named twice"},
		{"no namenodes", nil, "no namenodes"},
		{"zero calls", []string{"--local", "--calls", "0"}, "--calls 0"},
		{"zero concurrency", []string{"--local", "--concurrency", "0"}, "--concurrency"},
		{"bad plot ext", []string{"--local", "--plot", "x.pdf"}, ".svg or .png"},
		{"replication above datanodes", []string{"--local", "--replication", "6"}, "exceeds"},
		{"local and namenodes", []string{"--local", "--namenodes", "a:1"}, "exclusive"},
		{"unknown flag", []string{"--nope"}, "nope"},
		{"unknown protocol", []string{"--local", "--protocol", "thrift"}, `--protocol "thrift"`},
		{"hdfs door without its addresses", []string{"--namenodes", "a:1", "--protocol", "hdfs"}, "needs --hdfs-namenodes"},
		{"hdfs addresses without the door", []string{"--namenodes", "a:1", "--hdfs-namenodes", "a:2"}, "needs --protocol hdfs or both"},
		{"read through the hdfs door", []string{"--local", "--protocol", "hdfs", "--read"}, "--read times the gRPC door"},
		{"stray argument", []string{"--local", "extra"}, `unexpected argument "extra"`},
		{"unreachable namenode", []string{"--namenodes", "127.0.0.1:1", "--connect-timeout", "300ms"}, "no reachable namenode among 127.0.0.1:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(context.Background(), tc.args, &out, &errb)
			if code != 2 {
				t.Fatalf("exit %d, want 2; stderr %q", code, errb.String())
			}
			if !strings.Contains(errb.String(), tc.want) {
				t.Errorf("stderr %q does not contain %q", errb.String(), tc.want)
			}
			if out.Len() != 0 {
				t.Errorf("stdout not empty: %q", out.String())
			}
			// One clear line (the flag package adds its usage for flag errors).
			if tc.name != "unknown flag" && strings.Count(strings.TrimSpace(errb.String()), "\n") != 0 {
				t.Errorf("more than one line on stderr: %q", errb.String())
			}
		})
	}
}

func TestParseFlagsDefaults(t *testing.T) {
	t.Setenv("BLOCKFS_NAMENODES", "a:1, b:2")
	o, err := parseFlags(nil, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(o.Namenodes, "|") != "a:1|b:2" || o.Calls != 100 || o.Warmup != 10 || o.BlockSize != 1024 ||
		o.Replication != 3 || o.Concurrency != 1 || len(o.Blocks) != 4 || len(o.Modes) != 0 {
		t.Errorf("defaults: %+v", o)
	}
	o, err = parseFlags([]string{"--namenodes", "c:3", "--blocks", "10,1,10", "--token-modes", "cached"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(o.Namenodes, "|") != "c:3" || len(o.Blocks) != 2 || o.Blocks[0] != 10 || o.Modes[0] != "cached" {
		t.Errorf("flags over env: %+v", o)
	}
	o, err = parseFlags([]string{"--local"}, &bytes.Buffer{})
	if err != nil || strings.Join(o.Modes, ",") != "per-block,per-request,cached" {
		t.Errorf("--local default modes: %v %v", o.Modes, err)
	}
}

func fakeResult() *Result {
	mk := func(samples ...float64) Measure {
		return Measure{Samples: samples, Wall: time.Second, Summary: Summarize(samples)}
	}
	r := &Result{Blocks: []int{1, 10}, Calls: 3, Concurrency: 1}
	for i, mode := range []string{"per-block", "cached"} {
		f := float64(i + 1)
		r.Modes = append(r.Modes, ModeResult{
			Mode: mode, Reported: mode, Floor: mk(0.1, 0.1, 0.2),
			Cells: []Cell{{Blocks: 1, GBL: mk(1/f, 2/f, 3/f)}, {Blocks: 10, GBL: mk(4/f, 5/f, 6/f)}},
		})
	}
	r.Modes[1].Cells[1].GBL.Errors = 1
	return r
}

func TestJSONShape(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJSON(&buf, fakeResult().Rows()); err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 4", len(rows))
	}
	for _, f := range []string{"token_mode", "blocks", "calls", "mean_ms", "median_ms", "stddev_ms", "p99_ms", "throughput_per_sec", "floor_median_ms", "p25_ms", "p75_ms", "door"} {
		for i, r := range rows {
			if _, ok := r[f]; !ok {
				t.Errorf("row %d lacks %s", i, f)
			}
		}
	}
	r := rows[3]
	if r["token_mode"] != "cached" || r["blocks"] != 10.0 || r["median_ms"] != 2.5 || r["floor_median_ms"] != 0.1 || r["errors"] != 1.0 || r["throughput_per_sec"] != 3.0 ||
		r["p25_ms"] != 2.25 || r["p75_ms"] != 2.75 || r["door"] != "grpc" {
		t.Errorf("last row: %v", r)
	}
}

func TestCSVShape(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteCSV(&buf, fakeResult().Rows()); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 5 || strings.Join(recs[0], ",") != strings.Join(csvHeader, ",") {
		t.Fatalf("csv: %v", recs)
	}
	if recs[1][0] != "per-block" || recs[1][2] != "1" || recs[1][6] != "2.0000" {
		t.Errorf("first data row: %v", recs[1])
	}
}

func TestTables(t *testing.T) {
	var buf bytes.Buffer
	WriteTables(&buf, fakeResult())
	s := buf.String()
	for _, want := range []string{"token mode per-block", "token mode cached", "1 blocks", "10 blocks", "mean", "median", "std dev", "p99", "median/floor", "20.0x", "ratio to per-block", "cached median", "0.50"} {
		if !strings.Contains(s, want) {
			t.Errorf("tables lack %q:\n%s", want, s)
		}
	}
}

// TestPlotLayout: the plot's legend stands beside the axes (every legend
// text right of every tick label and of the plotted data), each series has
// its p25-p75 band, and a second door's series join the first's on one
// plot with one call, named by door and mode.
func TestPlotLayout(t *testing.T) {
	f := filepath.Join(t.TempDir(), "two.svg")
	c := newChart(3, 1)
	c.addDoor(DoorGRPC, fakeResult())
	c.addDoor("hdfs", fakeResult())
	if err := c.save(f); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	svg := string(b)
	texts := regexp.MustCompile(`<text x="([0-9.]+)"[^>]*>\s*([^<]*)</text>`).FindAllStringSubmatch(svg, -1)
	legendLeft, dataRight := math.Inf(1), 0.0
	var legend []string
	for _, m := range texts {
		x, _ := strconv.ParseFloat(m[1], 64)
		if strings.HasPrefix(m[2], "grpc ") || strings.HasPrefix(m[2], "hdfs ") {
			legend = append(legend, m[2])
			legendLeft = math.Min(legendLeft, x)
		} else if m[2] == "10" || m[2] == "1" { // the x axis's ticks: the last one is the data's right end
			dataRight = math.Max(dataRight, x)
		}
	}
	want := []string{"grpc per-block median", "grpc per-block floor (health check)", "grpc cached median", "grpc cached floor (health check)",
		"hdfs per-block median", "hdfs per-block floor (getServerDefaults)", "hdfs cached median", "hdfs cached floor (getServerDefaults)"}
	if !slices.Equal(legend, want) {
		t.Errorf("legend %q, want %q", legend, want)
	}
	if dataRight == 0 || legendLeft <= dataRight+20 {
		t.Errorf("legend starts at x=%v, within the axes (their last tick at x=%v)", legendLeft, dataRight)
	}
	if n := strings.Count(svg, "fill-opacity"); n != 4 {
		t.Errorf("%d shaded bands, want 4 (2 doors x 2 modes)", n)
	}
}

func TestPlotFiles(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"p.svg", "p.png"} {
		f := filepath.Join(dir, name)
		if err := Plot([]*Result{fakeResult()}, f); err != nil {
			t.Fatal(err)
		}
		if st, err := os.Stat(f); err != nil || st.Size() < 1000 {
			t.Errorf("%s: %v %v", name, st, err)
		}
	}
}

// sweepRows checks a sweep exited 0 and returns the rows of its --json
// file.
func sweepRows(t *testing.T, code int, out, errb *bytes.Buffer, jsonFile string) []Row {
	t.Helper()
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	b, err := os.ReadFile(jsonFile)
	if err != nil {
		t.Fatal(err)
	}
	var rows []Row
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestSweepLocal runs the --local code path (a fresh in-process cluster per
// mode) for blocks 1,10 and 5 calls, with --read and 2 callers.
func TestSweepLocal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts clusters")
	}
	dir := t.TempDir()
	jsonFile, csvFile, plotFile := filepath.Join(dir, "o.json"), filepath.Join(dir, "o.csv"), filepath.Join(dir, "o.svg")
	cpuFile, memFile := filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "mem.pprof")
	var out, errb bytes.Buffer
	start := time.Now()
	code := run(context.Background(), []string{"--local", "--local-namenodes", "1", "--local-datanodes", "3", "--blocks", "1,10", "--calls", "5", "--warmup", "2",
		"--token-modes", "per-block,cached", "--read", "--concurrency", "2", "--json", jsonFile, "--csv", csvFile, "--plot", plotFile,
		"--cpuprofile", cpuFile, "--memprofile", memFile}, &out, &errb)
	rows := sweepRows(t, code, &out, &errb, jsonFile)
	t.Logf("took %v\n%s%s", time.Since(start), out.String(), errb.String())
	if len(rows) != 8 { // 2 modes x 2 block counts x (GBL + read)
		t.Fatalf("%d rows: %+v", len(rows), rows)
	}
	for _, r := range rows {
		if r.Errors != 0 || r.MedianMs <= 0 || r.FloorMedianMs <= 0 || r.ThroughputPerSec <= 0 || r.Calls != 5 {
			t.Errorf("row %+v", r)
		}
	}
	for _, f := range []string{csvFile, plotFile} {
		if _, err := os.Stat(f); err != nil {
			t.Error(err)
		}
	}
	for _, f := range []string{cpuFile, memFile} { // pprof's format: a gzipped protobuf
		if b, err := os.ReadFile(f); err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
			t.Errorf("%s: %d bytes, %v; want a pprof profile", f, len(b), err)
		}
	}
}

// TestNamenodeDiesMidSweep stops the leader while calls are being timed:
// the client fails over, the sweep finishes, nothing hangs or panics, and
// any failed calls are counted.
func TestNamenodeDiesMidSweep(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lc, err := localcluster.Start(ctx, localcluster.Config{Namenodes: 3, Datanodes: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	o, err := parseFlags([]string{"--namenodes", strings.Join(lc.NamenodeAddrs(), ","), "--user", "root", "--blocks", "1,10",
		"--calls", "150", "--warmup", "1", "--concurrency", "2", "--call-timeout", "3s"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	var stoppedAt time.Time
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		time.Sleep(700 * time.Millisecond)
		if i := lc.Leader(); i >= 0 {
			lc.StopNamenode(i)
			stoppedAt = time.Now()
		}
	}()
	res, err := Sweep(ctx, o, &bytes.Buffer{})
	<-stopped
	t.Logf("leader stopped: %v, sweep ended %v after", !stoppedAt.IsZero(), time.Since(stoppedAt))
	if err != nil {
		t.Fatalf("sweep: %v", err)
	}
	var buf bytes.Buffer
	WriteTables(&buf, res[0])
	t.Logf("errors %d\n%s", res[0].Errors(), buf.String())
	for _, c := range res[0].Modes[0].Cells {
		if len(c.GBL.Samples)+c.GBL.Errors != 150 {
			t.Errorf("%d blocks: %d ok + %d errors != 150", c.Blocks, len(c.GBL.Samples), c.GBL.Errors)
		}
	}
}

// TestSweepBothDoors sweeps a --local cluster through both doors: every
// row is labelled by its door, the HDFS door's rows have their own floor,
// and the tables compare the doors.
func TestSweepBothDoors(t *testing.T) {
	if testing.Short() {
		t.Skip("starts clusters")
	}
	jsonFile := filepath.Join(t.TempDir(), "o.json")
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"--local", "--local-namenodes", "1", "--local-datanodes", "3", "--blocks", "1,10", "--calls", "5", "--warmup", "1",
		"--token-modes", "per-block,cached", "--protocol", "both", "--json", jsonFile}, &out, &errb)
	rows := sweepRows(t, code, &out, &errb, jsonFile)
	doors := map[string]int{}
	for _, r := range rows {
		doors[r.Door]++
		if r.Errors != 0 || r.MedianMs <= 0 || r.FloorMedianMs <= 0 {
			t.Errorf("row %+v", r)
		}
	}
	if doors[DoorGRPC] != 4 || doors[DoorHDFS] != 4 || len(rows) != 8 {
		t.Errorf("rows by door %v, want 4 each", doors)
	}
	for _, want := range []string{"grpc door, token mode cached", "hdfs door, token mode per-block", "getServerDefaults through the HDFS door", "HDFS door / gRPC door"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, out.String())
		}
	}
}
