// Package proposer coalesces the commands a leader proposes concurrently
// into one Raft log entry (fsm.CmdBatch), with a bound on the entries in
// flight.
package proposer

import (
	"context"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/namenode/fsm"
)

// ApplyFunc puts one encoded log entry through Raft and returns the FSM's
// response and the entry's index.
type ApplyFunc func(op string, data []byte) (any, uint64, error)

// Proposer coalesces commands proposed concurrently on the leader into one
// Raft log entry (fsm.CmdBatch). At most maxInflight entries are in Raft at
// once; while they are, new proposals queue up and go out together as the
// next entry. Raft then pays its per-entry costs (encoding, a bolt put, a
// future, channel hand-offs on the leader loop and on every follower) once
// per batch rather than once per command.
type Proposer struct {
	apply    ApplyFunc
	sizes    prometheus.Observer // commands per entry
	in       chan *proposal
	inflight chan struct{}
	maxBatch int
	stop     chan struct{}
	wg       sync.WaitGroup
}

type proposal struct {
	op   string // the operation proposing, named by its errors
	data []byte
	done chan proposalResult
}

type proposalResult struct {
	res *api.CommandResult
	idx uint64
	err error
}

// New starts a proposer putting entries through apply, at most maxInflight
// at once and at most maxBatch commands each; sizes observes each entry's
// commands. Close stops it.
func New(apply ApplyFunc, sizes prometheus.Observer, maxInflight, maxBatch int) *Proposer {
	p := &Proposer{
		apply: apply, sizes: sizes, in: make(chan *proposal, maxBatch), inflight: make(chan struct{}, maxInflight),
		maxBatch: maxBatch, stop: make(chan struct{}),
	}
	p.wg.Add(1)
	go p.run()
	return p
}

// Submit proposes data and waits for its result. ctx only bounds the wait
// to enter the queue: once in Raft, the command's fate is Raft's. op names
// the operation in the errors of the proposal itself.
func (p *Proposer) Submit(ctx context.Context, op string, data []byte) (*api.CommandResult, uint64, error) {
	pr := &proposal{op: op, data: data, done: make(chan proposalResult, 1)}
	select {
	case p.in <- pr:
	case <-ctx.Done():
		return nil, 0, errs.Wrap(errs.Timeout, op, "", ctx.Err())
	case <-p.stop:
		return nil, 0, errs.New(errs.Unavailable, op, "", "namenode is stopping")
	}
	r := <-pr.done
	return r.res, r.idx, r.err
}

func (p *Proposer) run() {
	defer p.wg.Done()
	for {
		var first *proposal
		select {
		case first = <-p.in:
		case <-p.stop:
			return
		}
		batch := []*proposal{first}
		// Wait for a free slot, gathering what arrives meanwhile.
	acquire:
		for {
			if len(batch) == p.maxBatch {
				select {
				case p.inflight <- struct{}{}:
					break acquire
				case <-p.stop:
					p.fail(batch)
					return
				}
			}
			select {
			case p.inflight <- struct{}{}:
				break acquire
			case pr := <-p.in:
				batch = append(batch, pr)
			case <-p.stop:
				p.fail(batch)
				return
			}
		}
	drain:
		for len(batch) < p.maxBatch {
			select {
			case pr := <-p.in:
				batch = append(batch, pr)
			default:
				break drain
			}
		}
		p.wg.Add(1)
		go p.applyBatch(batch)
	}
}

func (p *Proposer) fail(batch []*proposal) {
	for _, pr := range batch {
		pr.done <- proposalResult{err: errs.New(errs.Unavailable, pr.op, "", "namenode is stopping")}
	}
}

// applyBatch proposes one batch and hands every proposal its own result.
func (p *Proposer) applyBatch(batch []*proposal) {
	defer p.wg.Done()
	defer func() { <-p.inflight }()
	p.sizes.Observe(float64(len(batch)))
	if len(batch) == 1 {
		res, idx, err := p.apply(batch[0].op, batch[0].data)
		batch[0].done <- proposalResult{res: asResult(res), idx: idx, err: err}
		return
	}
	cmds := make([][]byte, len(batch))
	for i, pr := range batch {
		cmds[i] = pr.data
	}
	// The entry's own errors are every proposal's, each under its op.
	data, err := fsm.Encode(fsm.CmdBatch, &api.BatchCommand{Commands: cmds})
	var out any
	var idx uint64
	if err == nil {
		out, idx, err = p.apply("", data)
	}
	results, ok := out.(fsm.BatchResult)
	if err == nil && (!ok || len(results) != len(batch)) {
		err = errs.New(errs.Internal, "", "", "FSM returned a malformed batch result")
	}
	for i, pr := range batch {
		if err != nil {
			pr.done <- proposalResult{err: errs.WithOp(err, pr.op)}
			continue
		}
		pr.done <- proposalResult{res: results[i], idx: idx, err: fsm.ResultErr(results[i])}
	}
}

func asResult(v any) *api.CommandResult {
	r, _ := v.(*api.CommandResult)
	return r
}

// Close fails the proposals still queued and waits for the entries in
// flight.
func (p *Proposer) Close() {
	close(p.stop)
	p.wg.Wait()
}
