package robustness

import (
	"fmt"
	"strconv"
	"time"

	"github.com/anishathalye/porcupine"
)

// The visible-length model: one file written by one writer that appends,
// hflushes and closes, read by others. Its state is the least length
// readers may see. A writer's acknowledged hflush (or close) at length n
// raises it to n: a linearizable read after it returns at least n bytes
// (no hflushed byte is lost). A read raises it to what it saw: a later
// read never sees fewer (the visible length never goes back). A read may
// see more than was hflushed: a block the writer finished and the
// namenode committed is visible too, as in HDFS. That no reader sees a
// byte the writer did not write is checked on the bytes themselves.

// LengthOp is an operation of the visible-length model.
type LengthOp uint8

// The operations.
const (
	LenFlush LengthOp = iota // hflush (or close) that made the file Len bytes
	LenRead                  // a reader saw the file at Len bytes
)

// LengthInput is one operation: a flush to Len, or a read.
type LengthInput struct {
	Op  LengthOp
	Len int64
}

// LengthOutput is its result: for a read, the length seen; for a flush,
// whether it was acknowledged (Unknown: it failed without a verdict and
// may or may not have taken effect).
type LengthOutput struct {
	Unknown bool
	Len     int64
}

// LengthModel is the porcupine model of the visible length, 0 at the start.
var LengthModel = porcupine.Model{
	Init: func() any { return int64(0) },
	Step: func(state, input, output any) (bool, any) {
		l, in, out := state.(int64), input.(LengthInput), output.(LengthOutput)
		switch in.Op {
		case LenFlush:
			// An indeterminate flush may take effect (porcupine may also
			// order it last: never).
			return true, max(l, in.Len)
		case LenRead:
			return out.Len >= l, out.Len
		}
		return false, state
	},
	Hash: func(state any) uint64 { return uint64(state.(int64)) },
	DescribeOperation: func(input, output any) string {
		in, out := input.(LengthInput), output.(LengthOutput)
		if in.Op == LenFlush {
			res := "ok"
			if out.Unknown {
				res = "?"
			}
			return fmt.Sprintf("flush(%d) -> %s", in.Len, res)
		}
		return fmt.Sprintf("read() -> %d", out.Len)
	},
	DescribeState: func(state any) string { return strconv.FormatInt(state.(int64), 10) },
}

// LengthHistory records visible-length operations for porcupine; it is
// safe for concurrent use.
type LengthHistory struct{ opLog }

// NewLengthHistory starts an empty history; its clock starts now.
func NewLengthHistory() *LengthHistory { return &LengthHistory{opLog{start: time.Now()}} }

// Add records one operation by client, called at call and returned at ret.
func (h *LengthHistory) Add(client int, in LengthInput, call int64, out LengthOutput, ret int64) {
	h.add(porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
}
