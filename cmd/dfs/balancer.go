package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
)

// balancerPoll is how often dfs balancer asks the leader for progress.
const balancerPoll = 250 * time.Millisecond

func balancerFlags(fs *flag.FlagSet) {
	fs.Float64("threshold", 10, "percentage points of the mean utilisation a datanode may be off it, (0, 100]")
	fs.String("bandwidth", "100m", "bytes per second each datanode sends moves at (suffixes k, m, g: 10m)")
	fs.Int("max-iterations", 20, "iterations of moves before giving up")
}

// cmdBalancer runs dfs balancer: it starts a run on the leader and polls
// it, drawing a progress bar of bytes moved; when the leader changes (the
// run is the leader's own state) it starts the run again on the new
// leader with the iterations left, which re-plans from its block map. It
// exits 0 when the cluster is balanced.
func cmdBalancer(e *env, fs *flag.FlagSet, _ []string) error {
	th, _ := strconv.ParseFloat(fs.Lookup("threshold").Value.String(), 64)
	maxIt, _ := strconv.Atoi(fs.Lookup("max-iterations").Value.String())
	bw, err := parseQuota(fs.Lookup("bandwidth").Value.String(), true)
	if err != nil {
		return usageErr{"--bandwidth: " + err.Error()}
	}
	if maxIt < 1 {
		return usageErr{"--max-iterations must be at least 1"}
	}
	req := &api.StartBalancerRequest{Threshold: th, Bandwidth: uint64(bw), MaxIterations: uint32(maxIt)}
	st, err := e.cl.StartBalancer(e.ctx, req)
	if err != nil {
		return &pathErr{"balancer", "", err}
	}
	run, last := st.RunId, st
	var movedBefore uint64 // in runs on earlier leaders
	var itersBefore uint32
	var bar *progressbar.ProgressBar
	for last.State == api.BalancerState_BALANCER_RUNNING {
		select {
		case <-e.ctx.Done():
			return e.stopBalancer("timed out (--timeout)")
		case <-time.After(balancerPoll):
		}
		p, err := e.cl.BalancerProgress(e.ctx)
		if err != nil {
			continue // a leader change under way; the context bounds it
		}
		if p.RunId != run && p.State != api.BalancerState_BALANCER_RUNNING {
			// The leader changed and the new one has not our run.
			movedBefore += last.BytesMoved
			itersBefore += last.Iterations
			if itersBefore >= uint32(maxIt) {
				return &pathErr{"balancer", "", fmt.Errorf("not balanced after %d iterations (leader changed)", itersBefore)}
			}
			req.MaxIterations = uint32(maxIt) - itersBefore
			fmt.Fprintf(e.stderr, "balancer: leader is now %s; resuming there\n", p.ServedBy)
			if p, err = e.cl.StartBalancer(e.ctx, req); err != nil && !errs.Is(err, errs.Precondition) {
				return &pathErr{"balancer", "", err}
			} else if err != nil {
				continue // another dfs balancer resumed it first: follow that run
			}
		}
		if p.RunId != run {
			run = p.RunId
		}
		last = p
		if e.progress && p.BytesToMove+p.BytesMoved > 0 {
			total := int64(movedBefore + p.BytesMoved + p.BytesToMove)
			if bar == nil {
				bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(e.stderr), progressbar.OptionSetDescription("balancing"),
					progressbar.OptionShowBytes(true), progressbar.OptionSetWidth(30), progressbar.OptionThrottle(100*time.Millisecond),
					progressbar.OptionClearOnFinish())
			}
			bar.ChangeMax64(max(total, bar.GetMax64()))
			bar.Set64(int64(movedBefore + p.BytesMoved))
		}
	}
	if bar != nil {
		bar.Finish()
	}
	last.BytesMoved += movedBefore
	last.Iterations += itersBefore
	if err := e.printBalancer(last); err != nil {
		return err
	}
	if last.State != api.BalancerState_BALANCER_BALANCED {
		return &pathErr{"balancer", "", fmt.Errorf("%s: %s", stateName(last.State), last.Reason)}
	}
	return nil
}

// stopBalancer stops the leader's run when dfs balancer gives up.
func (e *env) stopBalancer(why string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := e.cl.StopBalancer(ctx); err != nil && !errs.Is(err, errs.Precondition) {
		return &pathErr{"balancer", "", fmt.Errorf("%s, and stopping the run failed: %w", why, err)}
	}
	return &pathErr{"balancer", "", fmt.Errorf("%s: balancer stopped", why)}
}

func stateName(s api.BalancerState) string {
	switch s {
	case api.BalancerState_BALANCER_BALANCED:
		return "balanced"
	case api.BalancerState_BALANCER_FAILED:
		return "failed"
	case api.BalancerState_BALANCER_STOPPED:
		return "stopped"
	case api.BalancerState_BALANCER_RUNNING:
		return "running"
	}
	return "none"
}

type balancerJSON struct {
	State          string  `json:"state"`
	Reason         string  `json:"reason"`
	BytesMoved     uint64  `json:"bytes_moved"`
	Iterations     uint32  `json:"iterations"`
	MovesDone      uint64  `json:"moves_done"`
	MovesDropped   uint64  `json:"moves_dropped"`
	MinUtilization float64 `json:"min_utilization"`
	MaxUtilization float64 `json:"max_utilization"`
	Mean           float64 `json:"mean_utilization"`
	Leader         string  `json:"leader"`
}

func (e *env) printBalancer(p *api.BalancerStatus) error {
	if e.json {
		return e.printJSON(balancerJSON{State: stateName(p.State), Reason: p.Reason, BytesMoved: p.BytesMoved, Iterations: p.Iterations,
			MovesDone: p.MovesDone, MovesDropped: p.MovesDropped, MinUtilization: p.MinUtilization, MaxUtilization: p.MaxUtilization,
			Mean: p.MeanUtilization, Leader: p.ServedBy})
	}
	fmt.Fprintf(e.stdout, "%s: %s\n", stateName(p.State), p.Reason)
	fmt.Fprintf(e.stdout, "bytes moved: %d in %d iterations (%d moves, %d dropped)\n", p.BytesMoved, p.Iterations, p.MovesDone, p.MovesDropped)
	fmt.Fprintf(e.stdout, "utilisation: min %.2f%%, max %.2f%%, mean %.2f%%\n", p.MinUtilization, p.MaxUtilization, p.MeanUtilization)
	return nil
}
