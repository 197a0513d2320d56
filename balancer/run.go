package balancer

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/blockfs/blockfs/blocks"
	"github.com/blockfs/blockfs/errs"
)

// Defaults of a run, as HDFS's balancer has them where it has one.
const (
	// DefaultBandwidth is HDFS's dfs.datanode.balance.bandwidthPerSec
	// (100 MB/s since Hadoop 3), per sending datanode.
	DefaultBandwidth = 100 << 20
	// DefaultMaxIterations bounds a run that does not converge.
	DefaultMaxIterations = 20
	// DefaultIterationWindow: one iteration plans at most a window's worth
	// of bandwidth per source and per target.
	DefaultIterationWindow = 20 * time.Second
	// stuckAfter is the planning rounds in a row that start no move before
	// a run fails (HDFS: "No block has been moved for 5 iterations").
	stuckAfter = 5
)

// BlockMap is what a run needs of the namenode's block map
// (*blocks.Manager).
type BlockMap interface {
	Datanodes() []blocks.Datanode
	Movable(id string, limit int) []blocks.Holding
	StartMove(blocks.Move) (*blocks.MoveHandle, error)
}

// Config configures a Runner.
type Config struct {
	Blocks BlockMap
	// Gate says whether moves may run now: nil, or why not (safe mode,
	// not the leader). A run fails when it does not.
	Gate func() error
	// Tick is how often a run checks its moves (default 100ms).
	Tick time.Duration
	// Settle is how long a run waits after an iteration's moves finished
	// before it plans again, so that the datanodes' heartbeats have
	// brought their new usage (default 1s; give two heartbeat intervals).
	Settle time.Duration
	// IterationWindow: see DefaultIterationWindow.
	IterationWindow time.Duration
	// MaxBlocksPerSource bounds the blocks one plan considers on a source
	// (default 4096).
	MaxBlocksPerSource int
	Log                *slog.Logger
}

// Request is what a run is asked to do.
type Request struct {
	Threshold     float64 // (0, 100]
	Bandwidth     uint64  // bytes/s per sending datanode; 0: DefaultBandwidth
	MaxIterations int     // 0: DefaultMaxIterations
	By            string  // who asked, for the refusal of a second run
}

// State is a run's state.
type State int

const (
	None State = iota
	Running
	Balanced
	Failed
	Stopped
)

// Status is a run's progress.
type Status struct {
	State      State
	RunID      string
	StartedBy  string
	StartedAt  time.Time
	Request    Request
	Iterations int
	BytesMoved uint64
	// BytesToMove and Spread are as of the last plan.
	BytesToMove            uint64
	Spread                 Spread
	InFlight               int
	MovesDone, MovesFailed uint64
	Reason                 string
}

// Runner runs at most one balancing at a time. Safe for concurrent use.
type Runner struct {
	cfg Config

	mu     sync.Mutex
	st     Status
	seq    int
	cancel context.CancelFunc
	done   chan struct{}
}

// New returns a Runner with no run.
func New(cfg Config) *Runner {
	if cfg.Tick <= 0 {
		cfg.Tick = 100 * time.Millisecond
	}
	if cfg.Settle <= 0 {
		cfg.Settle = time.Second
	}
	if cfg.IterationWindow <= 0 {
		cfg.IterationWindow = DefaultIterationWindow
	}
	if cfg.MaxBlocksPerSource <= 0 {
		cfg.MaxBlocksPerSource = 4096
	}
	if cfg.Gate == nil {
		cfg.Gate = func() error { return nil }
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Runner{cfg: cfg}
}

// Start starts a run. It returns an errs.Invalid error for a threshold
// outside (0, 100] or a negative iteration limit, an errs.Precondition
// error naming who started the run in progress if there is one, and the
// gate's error if moves may not run now.
func (r *Runner) Start(req Request) (Status, error) {
	const op = "StartBalancer"
	if !(req.Threshold > 0 && req.Threshold <= 100) {
		return Status{}, errs.Newf(errs.Invalid, op, "", "threshold %v is out of range: give a percentage in (0, 100]", req.Threshold)
	}
	if req.MaxIterations < 0 {
		return Status{}, errs.Newf(errs.Invalid, op, "", "max iterations %d is negative", req.MaxIterations)
	}
	if req.Bandwidth == 0 {
		req.Bandwidth = DefaultBandwidth
	}
	if req.MaxIterations == 0 {
		req.MaxIterations = DefaultMaxIterations
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.st.State == Running {
		return r.st, errs.Newf(errs.Precondition, op, r.st.RunID,
			"two balancers at once: balancer %s started by %s at %s is running; stop it first",
			r.st.RunID, r.st.StartedBy, r.st.StartedAt.UTC().Format(time.RFC3339))
	}
	if err := r.cfg.Gate(); err != nil {
		return Status{}, errs.WithOp(err, op)
	}
	r.seq++
	ctx, cancel := context.WithCancel(context.Background())
	r.st = Status{State: Running, RunID: strconv.FormatInt(time.Now().UnixMilli(), 36) + "-" + strconv.Itoa(r.seq),
		StartedBy: req.By, StartedAt: time.Now(), Request: req}
	r.cancel, r.done = cancel, make(chan struct{})
	r.cfg.Log.Info("balancer started", "run", r.st.RunID, "by", req.By, "threshold", req.Threshold,
		"bandwidth", req.Bandwidth, "max_iterations", req.MaxIterations)
	go r.run(ctx, req, r.done)
	return r.st, nil
}

// Status returns the current or last run's status (State None if none).
func (r *Runner) Status() Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.st
}

// Stop stops the running run and waits for it to withdraw its moves;
// errs.Precondition if none runs.
func (r *Runner) Stop() (Status, error) {
	r.mu.Lock()
	if r.st.State != Running {
		st := r.st
		r.mu.Unlock()
		return st, errs.New(errs.Precondition, "StopBalancer", "", "no balancer is running")
	}
	cancel, done := r.cancel, r.done
	r.mu.Unlock()
	cancel()
	<-done
	return r.Status(), nil
}

// Close stops a run, if any, and waits for it.
func (r *Runner) Close() {
	r.mu.Lock()
	cancel, done := r.cancel, r.done
	r.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

func (r *Runner) update(f func(*Status)) {
	r.mu.Lock()
	f(&r.st)
	r.mu.Unlock()
}

// finish ends the run in state s with reason why.
func (r *Runner) finish(s State, why string) {
	r.update(func(st *Status) {
		st.State, st.Reason, st.InFlight = s, why, 0
	})
	st := r.Status()
	r.cfg.Log.Info("balancer finished", "run", st.RunID, "state", s, "reason", why, "iterations", st.Iterations,
		"bytes_moved", st.BytesMoved, "min", st.Spread.Min, "max", st.Spread.Max, "mean", st.Spread.Mean)
}

func (r *Runner) run(ctx context.Context, req Request, done chan struct{}) {
	defer close(done)
	window := req.Bandwidth * uint64(r.cfg.IterationWindow/time.Second)
	stuck := 0
	var lastErr error
	for {
		if ctx.Err() != nil {
			r.finish(Stopped, "stopped")
			return
		}
		if err := r.cfg.Gate(); err != nil {
			r.finish(Failed, err.Error())
			return
		}
		p := r.plan(req.Threshold, window)
		r.update(func(st *Status) { st.Spread, st.BytesToMove = p.Spread, p.BytesToMove })
		if p.Balanced() {
			r.finish(Balanced, fmt.Sprintf("every datanode within %v%% of the mean utilisation %.2f%%", req.Threshold, p.Spread.Mean))
			return
		}
		if r.Status().Iterations >= req.MaxIterations {
			r.finish(Failed, fmt.Sprintf("not balanced after %d iterations: %d datanodes over, %d under the threshold",
				req.MaxIterations, len(p.Over), len(p.Under)))
			return
		}
		hs, err := r.iterate(ctx, p.Moves, req.Bandwidth, &lastErr)
		if err != nil {
			if ctx.Err() != nil {
				r.finish(Stopped, "stopped")
			} else {
				r.finish(Failed, err.Error())
			}
			return
		}
		if len(hs) == 0 {
			if stuck++; stuck >= stuckAfter {
				why := "no movable block keeps the rack policy between the over- and under-utilised datanodes"
				if lastErr != nil {
					why = "no move could start: " + lastErr.Error()
				}
				r.finish(Failed, fmt.Sprintf("%d datanodes over, %d under the threshold, and %s", len(p.Over), len(p.Under), why))
				return
			}
		} else {
			stuck = 0
		}
		if !sleep(ctx, r.cfg.Settle) {
			r.finish(Stopped, "stopped")
			return
		}
	}
}

// iterate runs one iteration's moves: it starts what it can, and as moves
// finish (freeing streams on senders and targets) starts more of the plan,
// until nothing is in flight. A planned move still refused then is left to
// the next plan. It returns the moves started and, with them all cancelled,
// the gate's or the context's error if one ended the iteration early.
func (r *Runner) iterate(ctx context.Context, plan []Move, bw uint64, lastErr *error) ([]*blocks.MoveHandle, error) {
	var hs []*blocks.MoveHandle
	todo := plan
	t := time.NewTicker(r.cfg.Tick)
	defer t.Stop()
	started := false
	counted := map[*blocks.MoveHandle]bool{}
	for {
		left := todo[:0]
		for _, mv := range todo {
			h, err := r.cfg.Blocks.StartMove(blocks.Move{BlockID: mv.Block, Source: mv.Source, Target: mv.Target, Bandwidth: bw})
			if err != nil {
				*lastErr = err
				left = append(left, mv)
				continue
			}
			hs = append(hs, h)
		}
		todo = left
		if len(hs) > 0 && !started {
			started = true
			r.update(func(st *Status) { st.Iterations++ })
		}
		open := 0
		for _, h := range hs {
			if !h.Finished() {
				open++
			}
		}
		r.tally(hs, counted)
		r.update(func(st *Status) { st.InFlight = open })
		if open == 0 {
			return hs, nil
		}
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		err := ctx.Err()
		if err == nil {
			err = r.cfg.Gate()
		}
		if err != nil {
			for _, h := range hs {
				h.Cancel()
			}
			r.tally(hs, counted)
			return hs, err
		}
	}
}

// plan reads the block map and plans one iteration.
func (r *Runner) plan(threshold float64, window uint64) Plan {
	var nodes []Node
	for _, d := range r.cfg.Blocks.Datanodes() {
		if d.State == blocks.Live && d.Capacity > 0 {
			nodes = append(nodes, Node{ID: d.ID, Rack: d.Rack, Capacity: d.Capacity, Used: d.Used})
		}
	}
	_, pns := classify(nodes, Limits{Threshold: threshold})
	bs := map[string][]Block{}
	for _, n := range pns {
		if n.class != overUtilized && n.class != aboveAverage {
			continue
		}
		for _, h := range r.cfg.Blocks.Movable(n.ID, r.cfg.MaxBlocksPerSource) {
			bs[n.ID] = append(bs[n.ID], Block{ID: h.BlockID, Length: h.Length, Replication: h.Replication, Holders: h.Holders})
		}
	}
	return PlanMoves(nodes, bs, Limits{Threshold: threshold, MaxBytesPerNode: window})
}

// tally adds the moves of hs that finished since the last call (counted
// marks them) to the status.
func (r *Runner) tally(hs []*blocks.MoveHandle, counted map[*blocks.MoveHandle]bool) {
	var moved, ok, failed uint64
	for _, h := range hs {
		if counted[h] || !h.Finished() {
			continue
		}
		counted[h] = true
		switch st, why := h.State(); st {
		case blocks.MoveDone:
			moved += h.Length
			ok++
		case blocks.MoveDropped:
			failed++
			r.cfg.Log.Debug("balancer move dropped", "block", h.BlockID, "from", h.Source, "to", h.Target, "why", why)
		}
	}
	r.update(func(st *Status) {
		st.BytesMoved += moved
		st.MovesDone += ok
		st.MovesFailed += failed
	})
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func (s State) String() string {
	return [...]string{"none", "running", "balanced", "failed", "stopped"}[s]
}
