package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/localcluster"
	"github.com/blockfs/blockfs/namenode"
	"github.com/blockfs/blockfs/security"
)

// Measure is one timed series: the exact latency of every call that
// succeeded (ms), the count of calls that failed, and the wall time of the
// whole series (for throughput).
type Measure struct {
	Samples []float64
	Errors  int
	Wall    time.Duration
	Summary Summary
}

// Throughput is successful calls per second of wall time.
func (m *Measure) Throughput() float64 {
	if m.Wall <= 0 {
		return 0
	}
	return float64(len(m.Samples)) / m.Wall.Seconds()
}

// Cell is the measurements of one file (one block count) in one mode.
type Cell struct {
	Blocks int
	GBL    Measure  // GetBlockLocations round trips
	Read   *Measure // open + read of the first block (--read)
}

// ModeResult is the sweep in one token mode.
type ModeResult struct {
	Mode     string // the mode the rows are labelled with
	Reported string // what ClusterStatus.token_mode said ("" if nothing)
	Floor    Measure
	Cells    []Cell
}

// Result is a whole run.
type Result struct {
	Blocks      []int
	Calls       int
	Concurrency int
	Read        bool
	Modes       []ModeResult
}

// Errors is the number of failed timed calls in the whole run.
func (r *Result) Errors() int {
	n := 0
	for _, m := range r.Modes {
		n += m.Floor.Errors
		for _, c := range m.Cells {
			n += c.GBL.Errors
			if c.Read != nil {
				n += c.Read.Errors
			}
		}
	}
	return n
}

// Mode returns the result of mode name, or nil.
func (r *Result) Mode(name string) *ModeResult {
	for i := range r.Modes {
		if r.Modes[i].Mode == name {
			return &r.Modes[i]
		}
	}
	return nil
}

// Sweep runs the experiment. A usageError means bad input (exit 2). A
// non-nil Result with an error is a partial run worth reporting.
func Sweep(ctx context.Context, o Options, stderr io.Writer) (*Result, error) {
	res := &Result{Blocks: o.Blocks, Calls: o.Calls, Concurrency: o.Concurrency, Read: o.Read}
	if o.Local {
		for _, m := range o.Modes {
			mr, err := localMode(ctx, o, m, stderr)
			if err != nil {
				if len(res.Modes) == 0 {
					return nil, err
				}
				return res, err
			}
			res.Modes = append(res.Modes, *mr)
		}
		return res, nil
	}
	cfg := client.DefaultConfig(o.Namenodes...)
	if o.User != "" {
		cfg.User = o.User
	}
	cl, err := client.New(cfg)
	if err != nil {
		return nil, usageError{err.Error()}
	}
	defer cl.Close()
	reported, err := clusterMode(ctx, cl, o)
	if err != nil {
		return nil, err
	}
	mode := reported
	switch {
	case len(o.Modes) == 0 && reported == "":
		mode = "unreported"
		fmt.Fprintln(stderr, "loadgen: warning: the cluster does not report its token mode; rows are labelled \"unreported\"")
	case len(o.Modes) > 1:
		return nil, usagef("a running cluster has one token mode (%s); --token-modes %s needs --local, or one run per mode with the namenodes restarted", orUnreported(reported), strings.Join(o.Modes, ","))
	case len(o.Modes) == 1 && reported == "":
		mode = o.Modes[0]
		fmt.Fprintf(stderr, "loadgen: warning: the cluster does not report its token mode; cannot confirm it runs %s\n", mode)
	case len(o.Modes) == 1 && o.Modes[0] != reported:
		return nil, usagef("the cluster runs token mode %s, not %s (restart its namenodes with --token-mode %s, or use --local)", reported, o.Modes[0], o.Modes[0])
	}
	mr, err := runMode(ctx, cl, o, mode, stderr)
	if mr != nil {
		mr.Reported = reported
		res.Modes = append(res.Modes, *mr)
	}
	if err != nil && len(res.Modes) == 0 {
		return nil, err
	}
	return res, err
}

func orUnreported(s string) string {
	if s == "" {
		return "unreported"
	}
	return s
}

// clusterMode finds a reachable namenode and returns the token mode the
// cluster reports. No reachable namenode is bad input.
func clusterMode(ctx context.Context, cl *client.Client, o Options) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, o.ConnTimeout)
	defer cancel()
	st, err := cl.ClusterStatus(cctx)
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", usagef("no reachable namenode among %s within %v: %v", strings.Join(o.Namenodes, ","), o.ConnTimeout, err)
	}
	return st.GetTokenMode(), nil
}

// localMode starts a fresh in-process cluster whose namenodes run mode,
// sweeps it and tears it down.
func localMode(ctx context.Context, o Options, mode string, stderr io.Writer) (*ModeResult, error) {
	m, err := security.ParseMode(mode)
	if err != nil {
		return nil, usageError{err.Error()}
	}
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	lc, err := localcluster.Start(sctx, localcluster.Config{
		Namenodes: o.LocalNamenodes,
		Datanodes: o.LocalDatanodes,
		Namenode:  func(_ int, c *namenode.Config) { c.Security.Mode = m },
	})
	if err != nil {
		return nil, fmt.Errorf("start local cluster (%s): %w", mode, err)
	}
	defer lc.Close()
	cl, err := lc.Client()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	reported, err := clusterMode(ctx, cl, Options{Namenodes: lc.NamenodeAddrs(), ConnTimeout: o.ConnTimeout})
	if err != nil {
		return nil, err
	}
	switch reported {
	case mode:
	case "":
		fmt.Fprintf(stderr, "loadgen: warning: the local cluster does not report its token mode; rows are labelled %s as configured\n", mode)
	default:
		return nil, fmt.Errorf("local cluster started in token mode %s reports %s", mode, reported)
	}
	mr, err := runMode(ctx, cl, o, mode, stderr)
	if mr != nil {
		mr.Reported = reported
	}
	return mr, err
}

// runMode writes the files, measures the floor and sweeps the block counts
// against cl, then removes the files.
func runMode(ctx context.Context, cl *client.Client, o Options, mode string, stderr io.Writer) (*ModeResult, error) {
	dir := path.Join(o.Dir, mode)
	mr := &ModeResult{Mode: mode}
	if err := setup(ctx, cl, o, dir, mode, stderr); err != nil {
		return nil, err
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.CallTimeout)
		defer cancel()
		_ = cl.Delete(dctx, dir, true)
	}()

	perSeries := o.Warmup + o.Calls
	series := 1 + len(o.Blocks)
	if o.Read {
		series += len(o.Blocks)
	}
	bar := newBar(stderr, o, int64(series*perSeries), fmt.Sprintf("sweep %-11s", mode))
	defer bar.Finish()

	// Warm the connection and settle on the leader before the floor, so
	// the floor is timed against the namenode that serves the sweep.
	first := filePath(dir, o.Blocks[0])
	for range 3 {
		cctx, cancel := context.WithTimeout(ctx, o.CallTimeout)
		_, _ = cl.GetBlockLocations(cctx, first, 0, 0)
		cancel()
	}
	target := cl.CurrentNamenode()
	mr.Floor = measure(ctx, o, bar, func(ctx context.Context) error { return cl.HealthCheck(ctx, target) })
	for _, n := range o.Blocks {
		if ctx.Err() != nil {
			return mr, ctx.Err()
		}
		p := filePath(dir, n)
		c := Cell{Blocks: n}
		c.GBL = measure(ctx, o, bar, func(ctx context.Context) error {
			r, err := cl.GetBlockLocations(ctx, p, 0, 0)
			if err == nil && len(r.Blocks) != n {
				err = fmt.Errorf("%s: %d blocks located, want %d", p, len(r.Blocks), n)
			}
			return err
		})
		if o.Read {
			bufs := sync.Pool{New: func() any { return make([]byte, o.BlockSize) }}
			rm := measure(ctx, o, bar, func(ctx context.Context) error {
				buf := bufs.Get().([]byte)
				defer bufs.Put(buf)
				r, err := cl.Open(ctx, p)
				if err != nil {
					return err
				}
				_, err = r.ReadAt(buf[:min(uint64(r.Size()), o.BlockSize)], 0)
				return err
			})
			c.Read = &rm
		}
		mr.Cells = append(mr.Cells, c)
	}
	return mr, ctx.Err()
}

func filePath(dir string, blocks int) string { return path.Join(dir, fmt.Sprintf("blocks-%d", blocks)) }

// setup writes one file of n blocks per block count through the client's
// real write path.
func setup(ctx context.Context, cl *client.Client, o Options, dir, mode string, stderr io.Writer) error {
	var total int64
	for _, n := range o.Blocks {
		total += int64(n)
	}
	bar := newBar(stderr, o, total, fmt.Sprintf("setup %-11s", mode))
	defer bar.Finish()
	block := make([]byte, o.BlockSize)
	for i := range block {
		block[i] = byte(i*31 + 7)
	}
	for _, n := range o.Blocks {
		p := filePath(dir, n)
		// Generous: a namenode failover during setup is retried by the
		// client, but setup must not hang forever either.
		// A failed write is retried from scratch (the file is overwritten):
		// setup is not what is measured.
		var err error
		for attempt := range setupAttempts {
			if attempt > 0 {
				fmt.Fprintf(stderr, "loadgen: setup %s: attempt %d failed (%v); writing it again\n", p, attempt, err)
			}
			fctx, cancel := context.WithTimeout(ctx, 2*o.CallTimeout+time.Duration(n)*100*time.Millisecond)
			var written int
			written, err = writeTestFile(fctx, cl, p, n, block, o, bar)
			cancel()
			if err == nil || ctx.Err() != nil {
				break
			}
			bar.Add(-written)
		}
		if err != nil {
			return fmt.Errorf("setup %s (%d blocks): %w", p, n, err)
		}
	}
	return nil
}

// setupAttempts bounds how often setup writes one file.
const setupAttempts = 3

func writeTestFile(ctx context.Context, cl *client.Client, p string, n int, block []byte, o Options, bar *progressbar.ProgressBar) (int, error) {
	w, err := cl.Create(ctx, p, client.CreateOptions{
		Overwrite: true, CreateParent: true, Replication: o.Replication, BlockSize: o.BlockSize,
	})
	if err != nil {
		return 0, err
	}
	for i := range n {
		if _, err := w.Write(block); err != nil {
			w.Close()
			return i, err
		}
		bar.Add(1)
	}
	return n, w.Close()
}

// measure runs o.Warmup untimed calls, then o.Calls timed calls spread
// over o.Concurrency callers, each with its own deadline. A failed call is
// counted, not retried, and never stops the series.
func measure(ctx context.Context, o Options, bar *progressbar.ProgressBar, fn func(context.Context) error) Measure {
	call := func() (time.Duration, error) {
		cctx, cancel := context.WithTimeout(ctx, o.CallTimeout)
		defer cancel()
		t0 := time.Now()
		err := fn(cctx)
		return time.Since(t0), err
	}
	for range o.Warmup {
		if ctx.Err() != nil {
			break
		}
		call()
		bar.Add(1)
	}
	lat := make([]float64, o.Calls)
	state := make([]int8, o.Calls) // 0 not run (interrupted), 1 ok, 2 failed
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range min(o.Concurrency, o.Calls) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= o.Calls || ctx.Err() != nil {
					return
				}
				d, err := call()
				lat[i], state[i] = ms(d), 1
				if err != nil {
					state[i] = 2
				}
				bar.Add(1)
			}
		})
	}
	wg.Wait()
	m := Measure{Wall: time.Since(start)}
	for i := range lat {
		switch state[i] {
		case 1:
			m.Samples = append(m.Samples, lat[i])
		case 2:
			m.Errors++
		}
	}
	m.Summary = Summarize(m.Samples)
	return m
}

func newBar(w io.Writer, o Options, total int64, desc string) *progressbar.ProgressBar {
	return progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetVisibility(!o.NoProgress && isTerminal(w)),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
}

// isTerminal reports whether w is a character device (a terminal): bars
// are drawn only there, so logs and pipes stay clean.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
