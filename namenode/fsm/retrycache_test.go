package fsm

import (
	"fmt"
	"sync"
	"testing"

	"github.com/blockfs/blockfs/api"
)

// calls lists the call ids of rc's entries, oldest first, and the first
// entry that holds another call's result, if any.
func calls(rc *retryCache) (ids []uint64, bad error) {
	_ = rc.entries(func(e retryEntry) error {
		if e.res.Offset != e.key.call && bad == nil {
			bad = fmt.Errorf("entry %d holds the result of call %d", e.key.call, e.res.Offset)
		}
		ids = append(ids, e.key.call)
		return nil
	})
	return ids, bad
}

// sameCalls fails t unless got is want.
func sameCalls(t *testing.T, what string, got, want []uint64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s holds %d calls (%v..), want %d", what, len(got), head(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s entry %d is call %d, want %d", what, i, got[i], want[i])
		}
	}
}

// span is the ids lo..hi.
func span(lo, hi uint64) []uint64 {
	var out []uint64
	for c := lo; c <= hi; c++ {
		out = append(out, c)
	}
	return out
}

// TestRetryCacheFrozen: a frozen copy keeps the entries it was taken with
// while the live cache goes on filling, wrapping and evicting, and it may be
// read while puts run (the race detector checks that the live cache copies
// a shared chunk before writing it).
func TestRetryCacheFrozen(t *testing.T) {
	put := func(rc *retryCache, lo, hi uint64) {
		for c := lo; c <= hi; c++ {
			rc.put(callKey{"u\x00c", c}, &api.CommandResult{Offset: c})
		}
	}
	tests := []struct {
		name        string
		before      uint64 // calls 1..before are put before freezing
		after       uint64 // calls before+1..before+after are put beside the read
		wantFrozen  []uint64
		wantLiveLow uint64 // the oldest call the live cache holds
	}{
		{"empty", 0, 10, nil, 1},
		{"part of a chunk", 100, retryCacheSize, span(1, 100), 101},
		{"a chunk boundary", retryChunk, 3 * retryChunk, span(1, retryChunk), 1},
		{"full", retryCacheSize, 10, span(1, retryCacheSize), 11},
		{"wrapped", retryCacheSize + 300, 2*retryCacheSize + 7, span(301, retryCacheSize+300), 2*retryCacheSize + 308},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rc := newRetryCache()
			put(rc, 1, tc.before)
			fz := rc.frozen()
			var wg sync.WaitGroup
			var got []uint64
			var bad error
			wg.Go(func() { got, bad = calls(fz) })
			put(rc, tc.before+1, tc.before+tc.after)
			wg.Wait()
			if bad != nil {
				t.Fatal(bad)
			}
			sameCalls(t, "frozen copy read beside the puts", got, tc.wantFrozen)
			again, bad := calls(fz)
			if bad != nil {
				t.Fatal(bad)
			}
			sameCalls(t, "frozen copy after the puts", again, tc.wantFrozen)
			live, bad := calls(rc)
			if bad != nil {
				t.Fatal(bad)
			}
			total := tc.before + tc.after
			if want := min(total, retryCacheSize); uint64(len(live)) != want || live[0] != tc.wantLiveLow || live[len(live)-1] != total {
				t.Fatalf("live cache holds %d calls %v..%d, want %d from %d to %d", len(live), head(live), live[len(live)-1], want, tc.wantLiveLow, total)
			}
			if _, ok := rc.get(callKey{"u\x00c", tc.wantLiveLow - 1}); ok && tc.wantLiveLow > 1 {
				t.Fatalf("evicted call %d still answers", tc.wantLiveLow-1)
			}
		})
	}
}

func head(s []uint64) []uint64 { return s[:min(len(s), 3)] }
