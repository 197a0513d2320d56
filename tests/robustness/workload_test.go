package robustness

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/metadata"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
)

// staleRead is one stale read's header, for the monotonicity check.
type staleRead struct {
	call, ret int64
	idx       uint64
	inc       int64 // the namenode's incarnation
}

type run struct {
	s       *suite
	root    string
	hist    *History
	mu      sync.Mutex
	reads   [][]staleRead // per namenode
	rywErrs []string
	ryw     atomic.Int64
}

func (r *run) worker(ctx context.Context, id int, rng *rand.Rand) {
	s := r.s
	target := id % 3
	var ro *api.ReadOptions
	if s.stale {
		ro = &api.ReadOptions{Consistency: api.ReadConsistency_READ_CONSISTENCY_STALE}
	}
	n := 0
	backoff := 20 * time.Millisecond
	for ctx.Err() == nil {
		n++
		if s.stale && n%8 == 0 {
			r.readYourWrites(ctx, id, n, rng)
			continue
		}
		inc := s.incarnation[target].Load()
		if inc%2 == 1 || s.conns[target].GetState() == connectivity.TransientFailure {
			// Known down: a client would not send there (and a write that
			// cannot be delivered only adds an indeterminate operation).
			target = (target + 1) % 3
			sleep(ctx, 5*time.Millisecond)
			continue
		}
		in := RandomOp(rng)
		cctx, cancel := context.WithTimeout(root(ctx), opTimeout)
		call := r.hist.Now()
		out, hdr, valid := Exec(cctx, s.nns[target], r.root, in, ro)
		ret := r.hist.Now()
		cancel()
		if ctx.Err() != nil && (!valid || out.Unknown) {
			// Cut short by the end of the run: a read is dropped, a
			// write is recorded as indeterminate.
			if in.Kind.IsWrite() {
				r.hist.Add(id, in, call, Output{Unknown: true}, ret)
			}
			return
		}
		switch {
		case !in.Kind.IsWrite() && s.stale:
			if hdr != nil && inc == s.incarnation[target].Load() && inc%2 == 0 {
				r.mu.Lock()
				r.reads[target] = append(r.reads[target], staleRead{call, ret, hdr.AppliedIndex, inc})
				r.mu.Unlock()
			}
		case valid:
			r.hist.Add(id, in, call, out, ret)
		}
		if !valid || out.Unknown {
			// Back off as a client would: an election takes a while. After
			// a write with no verdict, wait longer: every further write
			// sent into an election is another indeterminate operation,
			// and each one multiplies the linearizability search.
			target = (target + 1) % 3
			if out.Unknown {
				backoff = max(backoff, 150*time.Millisecond)
			}
			sleep(ctx, backoff)
			backoff = min(2*backoff, 600*time.Millisecond)
		} else {
			backoff = 20 * time.Millisecond
		}
	}
}

// readYourWrites creates a private file through one namenode and reads it
// back, stale but with the create's index, through another.
func (r *run) readYourWrites(ctx context.Context, id, n int, rng *rand.Rand) {
	s := r.s
	p := fmt.Sprintf("%s-ryw/w%d-%d", r.root, id, n)
	w, rd := rng.IntN(3), rng.IntN(3)
	cctx, cancel := context.WithTimeout(root(ctx), opTimeout)
	resp, err := s.nns[w].Create(cctx, &api.CreateRequest{Path: p, Mode: 0o644, Replication: 1, ClientName: "ryw"})
	cancel()
	if err != nil {
		sleep(ctx, 20*time.Millisecond)
		return
	}
	idx := resp.GetHeader().GetAppliedIndex()
	cctx, cancel = context.WithTimeout(root(ctx), opTimeout)
	defer cancel()
	var trailer metadata.MD
	st, err := s.nns[rd].GetFileInfo(cctx, &api.GetFileInfoRequest{Path: p, Read: &api.ReadOptions{
		Consistency: api.ReadConsistency_READ_CONSISTENCY_STALE, MinAppliedIndex: idx,
	}}, grpc.Trailer(&trailer))
	r.ryw.Add(1)
	switch {
	case err == nil && st.GetHeader().GetAppliedIndex() < idx:
		r.fail("read-your-writes: nn%d answered %s at applied index %d < the create's %d", rd+1, p, st.GetHeader().GetAppliedIndex(), idx)
	case err == nil:
	case errs.KindOf(errs.FromStatus(err, trailer)) == errs.NotFound:
		r.fail("read-your-writes: nn%d says %s (created through nn%d at index %d) does not exist", rd+1, p, w+1, idx)
	}
}

func (r *run) fail(format string, a ...any) {
	r.mu.Lock()
	r.rywErrs = append(r.rywErrs, fmt.Sprintf(format, a...))
	r.mu.Unlock()
}

// checkMonotonic: a stale read that starts after another read from the same
// namenode process returned must not report a lower applied index.
func (r *run) checkMonotonic(t *testing.T) {
	total := 0
	for node, all := range r.reads {
		total += len(all)
		groups := map[int64][]staleRead{}
		for _, rd := range all {
			groups[rd.inc] = append(groups[rd.inc], rd)
		}
		for _, reads := range groups {
			byRet := slices.Clone(reads)
			slices.SortFunc(byRet, func(a, b staleRead) int { return cmp.Compare(a.ret, b.ret) })
			slices.SortFunc(reads, func(a, b staleRead) int { return cmp.Compare(a.call, b.call) })
			var maxIdx uint64
			j := 0
			for _, rd := range reads {
				for j < len(byRet) && byRet[j].ret < rd.call {
					maxIdx = max(maxIdx, byRet[j].idx)
					j++
				}
				if rd.idx < maxIdx {
					t.Errorf("stale reads on nn%d went back in time: applied index %d after %d had been returned", node+1, rd.idx, maxIdx)
					break
				}
			}
		}
	}
	t.Logf("stale reads checked for monotonicity: %d; read-your-writes probes: %d", total, r.ryw.Load())
}
