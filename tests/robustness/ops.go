package robustness

import (
	"context"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
)

// opLog is a list of porcupine operations on one clock, safe for
// concurrent use: the body of History and LengthHistory.
type opLog struct {
	start time.Time
	mu    sync.Mutex
	ops   []porcupine.Operation
}

// Now is the log's clock (monotonic nanoseconds since it started).
func (l *opLog) Now() int64 { return int64(time.Since(l.start)) }

func (l *opLog) add(op porcupine.Operation) {
	l.mu.Lock()
	l.ops = append(l.ops, op)
	l.mu.Unlock()
}

// Ops returns a copy of the recorded operations.
func (l *opLog) Ops() []porcupine.Operation {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.ops)
}

// History records namespace operations for porcupine. It is safe for
// concurrent use.
type History struct{ opLog }

// NewHistory starts an empty history; times are relative to now.
func NewHistory() *History { return &History{opLog{start: time.Now()}} }

// Add records one operation. A failed read should not be added; an
// indeterminate write is recorded with an infinite return time.
func (h *History) Add(client int, in Input, call int64, out Output, ret int64) {
	if out.Unknown {
		ret = math.MaxInt64
	}
	h.add(porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
}

// Stats counts a history's operations: all, writes, indeterminate writes.
func Stats(ops []porcupine.Operation) (all, writes, unknown int) {
	for _, op := range ops {
		in := op.Input.(Input)
		if in.Kind.IsWrite() {
			writes++
			if op.Output.(Output).Unknown {
				unknown++
			}
		}
	}
	return len(ops), writes, unknown
}

// Check runs porcupine over ops with a time limit.
func Check(ops []porcupine.Operation, timeout time.Duration) (porcupine.CheckResult, porcupine.LinearizationInfo) {
	return porcupine.CheckOperationsVerbose(Model, ops, timeout)
}

// definite reports whether err, as returned by a namenode, is a namespace
// answer (the operation certainly did not change anything) rather than a
// failure to reach a verdict (unavailable, timeout, not leader, internal),
// after which a write may or may not have happened.
func definite(err error) bool {
	switch errs.KindOf(err) {
	case errs.Invalid, errs.NotFound, errs.Exist, errs.NotEmpty, errs.NotDir, errs.IsDir:
		return true
	}
	return false
}

// Exec runs one operation against one namenode, with exactly one RPC (no
// retries: a client-side retry of a non-idempotent write after an
// ambiguous failure would make its answer meaningless). root is prefixed to
// every path; ctx should carry the caller's identity and a deadline. ro
// are the read options of reads. It returns the output, the response header
// (nil on error) and, for reads, whether the output is valid (failed reads
// are dropped from histories).
func Exec(ctx context.Context, nn api.ClientServiceClient, root string, in Input, ro *api.ReadOptions) (Output, *api.ResponseHeader, bool) {
	p, dst := join(root, in.Path), join(root, in.Dst)
	var trailer metadata.MD
	tr := grpc.Trailer(&trailer)
	var hdr *api.ResponseHeader
	var err error
	var out Output
	switch in.Kind {
	case OpMkdir:
		var r *api.MkdirsResponse
		r, err = nn.Mkdirs(ctx, &api.MkdirsRequest{Path: p, Mode: 0o755}, tr)
		hdr = r.GetHeader()
	case OpCreate:
		var r *api.CreateResponse
		r, err = nn.Create(ctx, &api.CreateRequest{Path: p, Mode: 0o644, Replication: 1, ClientName: "robustness"}, tr)
		hdr = r.GetHeader()
	case OpDelete:
		var r *api.DeleteResponse
		r, err = nn.Delete(ctx, &api.DeleteRequest{Path: p, Recursive: true}, tr)
		hdr = r.GetHeader()
	case OpRename:
		var r *api.RenameResponse
		r, err = nn.Rename(ctx, &api.RenameRequest{Src: p, Dst: dst}, tr)
		hdr = r.GetHeader()
	case OpStat:
		var r *api.GetFileInfoResponse
		r, err = nn.GetFileInfo(ctx, &api.GetFileInfoRequest{Path: p, Read: ro}, tr)
		if err == nil {
			hdr = r.GetHeader()
			out = Output{OK: true, Stat: kindFile}
			if r.GetStatus().GetIsDir() {
				out.Stat = kindDir
			}
			return out, hdr, true
		}
		err = errs.FromStatus(err, trailer)
		if k := errs.KindOf(err); k == errs.NotFound || k == errs.NotDir {
			return Output{OK: true, Stat: "none"}, nil, true
		}
		return Output{}, nil, false
	case OpList:
		var r *api.ListStatusResponse
		r, err = nn.ListStatus(ctx, &api.ListStatusRequest{Path: p, Read: ro}, tr)
		if err == nil {
			if r.HasMore {
				return Output{}, nil, false // the suite's directories are tiny
			}
			names := make([]string, len(r.Entries))
			for i, e := range r.Entries {
				names[i] = e.Path[strings.LastIndexByte(e.Path, '/')+1:]
			}
			slices.Sort(names)
			return Output{OK: true, Names: strings.Join(names, ",")}, r.GetHeader(), true
		}
		err = errs.FromStatus(err, trailer)
		if k := errs.KindOf(err); k == errs.NotFound || k == errs.NotDir {
			return Output{}, nil, true
		}
		return Output{}, nil, false
	}
	if err == nil {
		return Output{OK: true}, hdr, true
	}
	err = errs.FromStatus(err, trailer)
	if definite(err) {
		return Output{}, nil, true
	}
	if errs.KindOf(err) == errs.NotLeader || errs.IsSafeMode(err) {
		// Raft refused the entry before appending it (the namenode
		// forwards, or re-proposes, only in that case), or a leader in
		// safe mode refused it before proposing: the write did not happen
		// and leaves the history, like a failed read.
		return Output{}, nil, false
	}
	return Output{Unknown: true, Why: err.Error()}, nil, true
}

func join(root, p string) string {
	if p == "/" || p == "" {
		return root
	}
	return root + p
}
