package main

import (
	"context"
	"fmt"
	"io"
	"path"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blockfs/blockfs/internal/node/cliflag"

	"github.com/schollz/progressbar/v3"

	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/hadoopipc"
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
	// Door is the door the sweep went through (DoorGRPC or DoorHDFS):
	// the plot keys its series by door and mode.
	Door        string
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

// Sweep runs the experiment and returns one Result per door of o.Doors,
// in that order. A usageError means bad input (exit 2). Results with an
// error are a partial run worth reporting.
//
// With --local every mode gets its own in-process cluster, all of them
// running at once, and the modes' series run back to back for each block
// count (rotating which goes first), so the modes are compared minutes
// apart at most, on the same machine state. Series, not single calls, are
// interleaved because the clusters share one Go heap: per-block's garbage
// (a thousand signatures a call) would otherwise be collected on cached's
// time. A GC runs before every series for the same reason (as testing.B
// does before every benchmark). With both doors, each door's series of a
// block count runs next to the other's on the same cluster, in the same
// rotation.
func Sweep(ctx context.Context, o Options, stderr io.Writer) ([]*Result, error) {
	if len(o.Doors) == 0 {
		o.Doors = []string{DoorGRPC}
	}
	var targets []*modeTarget
	defer func() {
		for _, t := range targets {
			t.close(ctx, o)
		}
	}()
	if o.Local {
		for _, m := range o.Modes {
			t, err := localTarget(ctx, o, m, stderr)
			if err != nil {
				return nil, err
			}
			targets = append(targets, t)
		}
	} else {
		t, err := remoteTarget(ctx, o, stderr)
		if err != nil {
			return nil, err
		}
		targets = append(targets, t)
	}
	for _, t := range targets {
		if err := t.prepare(ctx, o, stderr); err != nil {
			return nil, err
		}
	}
	byDoor, err := sweepTargets(ctx, o, targets, stderr)
	var res []*Result
	for i, door := range o.Doors {
		if len(byDoor[i]) == 0 {
			continue
		}
		res = append(res, &Result{Door: door, Blocks: o.Blocks, Calls: o.Calls, Concurrency: o.Concurrency,
			Read: o.Read && door == DoorGRPC, Modes: byDoor[i]})
	}
	if err != nil && len(res) == 0 {
		return nil, err
	}
	return res, err
}

// modeTarget is one cluster in one token mode, ready to be swept.
type modeTarget struct {
	mode, reported string
	cl             *client.Client
	lc             *localcluster.Cluster // nil against a running cluster
	dir            string
	nn             string // the namenode serving the sweep, for the floor
	// hdfs is the connection to the HDFS door of the namenode at
	// hdfsAddr (--protocol hdfs or both), nil otherwise.
	hdfs     *hadoopipc.Client
	hdfsAddr string
}

func (t *modeTarget) close(ctx context.Context, o Options) {
	if t.dir != "" {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.CallTimeout)
		_ = t.cl.Delete(dctx, t.dir, true)
		// --dir itself goes too once the last mode's directory is gone (not
		// recursively: never what someone else put there).
		_ = t.cl.Delete(dctx, path.Dir(t.dir), false)
		cancel()
	}
	t.cl.Close()
	if t.hdfs != nil {
		t.hdfs.Close()
	}
	if t.lc != nil {
		t.lc.Close()
	}
}

// remoteTarget connects to the running cluster and settles its mode.
func remoteTarget(ctx context.Context, o Options, stderr io.Writer) (*modeTarget, error) {
	cfg := client.DefaultConfig(o.Namenodes...)
	if o.User != "" {
		cfg.User = o.User
	}
	cfg.DialOptions = append(cfg.DialOptions, o.TLS...)
	cl, err := client.New(cfg)
	if err != nil {
		return nil, usageError{err.Error()}
	}
	reported, err := clusterMode(ctx, cl, o)
	if err != nil {
		cl.Close()
		return nil, err
	}
	mode := reported
	switch {
	case len(o.Modes) == 0 && reported == "":
		mode = "unreported"
		fmt.Fprintln(stderr, "loadgen: warning: the cluster does not report its token mode; rows are labelled \"unreported\"")
	case len(o.Modes) > 1:
		err = usagef("a running cluster has one token mode (%s); --token-modes %s needs --local, or one run per mode with the namenodes restarted", orUnreported(reported), strings.Join(o.Modes, ","))
	case len(o.Modes) == 1 && reported == "":
		mode = o.Modes[0]
		fmt.Fprintf(stderr, "loadgen: warning: the cluster does not report its token mode; cannot confirm it runs %s\n", mode)
	case len(o.Modes) == 1 && o.Modes[0] != reported:
		err = usagef("the cluster runs token mode %s, not %s (restart its namenodes with --token-mode %s, or use --local)", reported, o.Modes[0], o.Modes[0])
	}
	if err != nil {
		cl.Close()
		return nil, err
	}
	return &modeTarget{mode: mode, reported: reported, cl: cl}, nil
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

// localTarget starts a fresh in-process cluster whose namenodes run mode.
func localTarget(ctx context.Context, o Options, mode string, stderr io.Writer) (*modeTarget, error) {
	m, err := security.ParseMode(mode)
	if err != nil {
		return nil, usageError{err.Error()}
	}
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	fmt.Fprintf(stderr, "loadgen: starting an in-process cluster (%d namenodes, %d datanodes) in token mode %s\n", o.LocalNamenodes, o.LocalDatanodes, mode)
	withHDFS := o.hasDoor(DoorHDFS)
	lc, err := localcluster.Start(sctx, localcluster.Config{
		Namenodes: o.LocalNamenodes,
		Datanodes: o.LocalDatanodes,
		// The datanodes' HDFS data doors too, so that the located blocks
		// carry the xferPorts an HDFS client would use.
		HDFSData: withHDFS,
		Namenode: func(_ int, c *namenode.Config) {
			c.Tokens.Mode = m
			if withHDFS {
				c.HDFSRPC.Addr = "127.0.0.1:0"
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("start local cluster (%s): %w", mode, err)
	}
	cl, err := lc.Client()
	if err != nil {
		lc.Close()
		return nil, err
	}
	t := &modeTarget{mode: mode, cl: cl, lc: lc}
	if t.reported, err = clusterMode(ctx, cl, Options{Namenodes: lc.NamenodeAddrs(), ConnTimeout: o.ConnTimeout}); err != nil {
		t.close(ctx, o)
		return nil, err
	}
	switch t.reported {
	case mode:
	case "":
		fmt.Fprintf(stderr, "loadgen: warning: the local cluster does not report its token mode; rows are labelled %s as configured\n", mode)
	default:
		t.close(ctx, o)
		return nil, fmt.Errorf("local cluster started in token mode %s reports %s", mode, t.reported)
	}
	return t, nil
}

// prepare writes the files and settles on the namenode that serves them,
// so the floor is timed against that namenode.
func (t *modeTarget) prepare(ctx context.Context, o Options, stderr io.Writer) error {
	dir := path.Join(o.Dir, t.mode)
	if err := setup(ctx, t.cl, o, dir, t.mode, stderr); err != nil {
		return err
	}
	t.dir = dir
	lctx, cancel := context.WithTimeout(ctx, o.CallTimeout)
	if err := t.cl.FindLeader(lctx); err != nil {
		fmt.Fprintf(stderr, "loadgen: %s: cannot find the leader (%v); sweeping the namenode the client uses\n", t.mode, err)
	}
	cancel()
	first := filePath(dir, o.Blocks[0])
	for range 3 {
		cctx, cancel := context.WithTimeout(ctx, o.CallTimeout)
		_, _ = t.cl.GetBlockLocations(cctx, first, 0, 0)
		cancel()
	}
	t.nn = t.cl.CurrentNamenode()
	if o.hasDoor(DoorHDFS) {
		grpcAddrs, addrs := o.Namenodes, o.HDFSNamenodes
		if t.lc != nil {
			grpcAddrs, addrs = t.lc.NamenodeAddrs(), t.lc.HDFSRPCAddrs()
		}
		if err := t.dialHDFS(ctx, o, grpcAddrs, addrs, first, o.Blocks[0]); err != nil {
			return err
		}
	}
	return nil
}

// probe is one series source: one target through one door.
type probe struct {
	t    *modeTarget
	door int // index in o.Doors
}

// sweepTargets measures the floor and every block count of every target
// through every door, interleaving the series; the result is indexed by
// door (o.Doors), then target.
func sweepTargets(ctx context.Context, o Options, ts []*modeTarget, stderr io.Writer) ([][]ModeResult, error) {
	var ps []probe
	for d := range o.Doors {
		for _, t := range ts {
			ps = append(ps, probe{t: t, door: d})
		}
	}
	perSeries := o.Warmup + o.Calls
	series := 1 + len(o.Blocks)
	reads := 0
	if o.Read {
		reads = len(o.Blocks) * len(ts)
	}
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.mode
	}
	bar := newBar(stderr, o, int64((len(ps)*series+reads)*perSeries), "sweep "+strings.Join(o.Doors, "+")+" "+strings.Join(names, ","))
	defer bar.Finish()
	out := make([][]ModeResult, len(o.Doors))
	for d := range o.Doors {
		out[d] = make([]ModeResult, len(ts))
		for i, t := range ts {
			out[d][i] = ModeResult{Mode: t.mode, Reported: t.reported}
		}
	}
	round := 0
	each := func(ps []probe, fn func(p probe) func(context.Context) error) []Measure {
		out := make([]Measure, len(ps))
		for r := range ps {
			i := (round + r) % len(ps)
			runtime.GC()
			out[i] = measure(ctx, o, bar, fn(ps[i]))
		}
		round++
		return out
	}
	for i, m := range each(ps, func(p probe) func(context.Context) error {
		t := p.t
		if o.Doors[p.door] == DoorHDFS {
			return func(ctx context.Context) error { return hdfsFloor(ctx, t.hdfs) }
		}
		return func(ctx context.Context) error { return t.cl.HealthCheck(ctx, t.nn) }
	}) {
		out[ps[i].door][i%len(ts)].Floor = m
	}
	for _, n := range o.Blocks {
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		gbl := each(ps, func(p probe) func(context.Context) error {
			t := p.t
			fp := filePath(t.dir, n)
			if o.Doors[p.door] == DoorHDFS {
				return func(ctx context.Context) error { return hdfsLocate(ctx, t.hdfs, fp, n) }
			}
			return func(ctx context.Context) error {
				r, err := t.cl.GetBlockLocations(ctx, fp, 0, 0)
				if err == nil && len(r.Blocks) != n {
					err = fmt.Errorf("%s: %d blocks located, want %d", fp, len(r.Blocks), n)
				}
				return err
			}
		})
		var rd []Measure
		if o.Read {
			bufs := sync.Pool{New: func() any { return make([]byte, o.BlockSize) }}
			var grpcPs []probe
			for _, p := range ps {
				if o.Doors[p.door] == DoorGRPC {
					grpcPs = append(grpcPs, p)
				}
			}
			rd = each(grpcPs, func(p probe) func(context.Context) error {
				fp := filePath(p.t.dir, n)
				return func(ctx context.Context) error {
					buf := bufs.Get().([]byte)
					defer bufs.Put(buf)
					r, err := p.t.cl.Open(ctx, fp)
					if err != nil {
						return err
					}
					_, err = r.ReadAt(buf[:min(uint64(r.Size()), o.BlockSize)], 0)
					return err
				}
			})
		}
		var parts []string
		for i, p := range ps {
			c := Cell{Blocks: n, GBL: gbl[i]}
			if o.Read && o.Doors[p.door] == DoorGRPC {
				c.Read = &rd[i%len(ts)]
			}
			out[p.door][i%len(ts)].Cells = append(out[p.door][i%len(ts)].Cells, c)
			parts = append(parts, fmt.Sprintf("%s %s %.3f ms", o.Doors[p.door], p.t.mode, gbl[i].Summary.Median))
		}
		if o.NoProgress || !cliflag.IsTerminal(stderr) { // no bar to watch: say what finished
			fmt.Fprintf(stderr, "loadgen: %d blocks done, median %s\n", n, strings.Join(parts, ", "))
		}
	}
	return out, ctx.Err()
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
	if o.NoProgress || !cliflag.IsTerminal(stderr) {
		fmt.Fprintf(stderr, "loadgen: %s: writing %d test files (%d blocks) under %s\n", mode, len(o.Blocks), total, dir)
	}
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
		Overwrite: true, Replication: o.Replication, BlockSize: o.BlockSize,
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
		progressbar.OptionSetVisibility(!o.NoProgress && cliflag.IsTerminal(w)),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
}
