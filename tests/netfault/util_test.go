package netfault

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/blockfs/blockfs/tests/robustness"
)

// envInt is the environment variable name as an int, or def.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// ackCounter counts acknowledged operations and keeps the longest gap
// between two of them: the longest stall any client saw of the cluster.
type ackCounter struct {
	n       atomic.Int64
	last    atomic.Int64 // unix nanoseconds of the latest acknowledgment
	longest atomic.Int64 // nanoseconds
}

func (a *ackCounter) Add(d int64) {
	now := time.Now().UnixNano()
	if prev := a.last.Swap(now); prev != 0 {
		for gap := now - prev; ; {
			cur := a.longest.Load()
			if gap <= cur || a.longest.CompareAndSwap(cur, gap) {
				break
			}
		}
	}
	a.n.Add(d)
}

func (a *ackCounter) Load() int64 { return a.n.Load() }

func (a *ackCounter) longestStall() time.Duration { return time.Duration(a.longest.Load()) }

// content is a file's bytes, derived from its name (1 to 200 KiB).
func content(p string) []byte {
	r := rand.New(rand.NewPCG(uint64(len(p)), hash(p)))
	b := make([]byte, 1024+r.IntN(199*1024))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func hash(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := range len(s) {
		h = (h ^ uint64(s[i])) * 1099511628211
	}
	return h
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// whyUnknown sums up why a history's indeterminate writes are so: the
// three commonest errors (their first 120 bytes) with their counts.
func whyUnknown(ops []porcupine.Operation) string {
	n := map[string]int{}
	for _, op := range ops {
		if o := op.Output.(robustness.Output); o.Unknown {
			w := o.Why
			if len(w) > 120 {
				w = w[:120]
			}
			n[w]++
		}
	}
	keys := make([]string, 0, len(n))
	for k := range n {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return n[b] - n[a] })
	var parts []string
	for _, k := range keys[:min(3, len(keys))] {
		parts = append(parts, fmt.Sprintf("%d x %q", n[k], k))
	}
	return strings.Join(parts, "; ")
}
