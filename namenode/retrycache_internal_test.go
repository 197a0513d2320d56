package namenode

import (
	"sync"
	"testing"

	"github.com/blockfs/blockfs/api"
)

// calls lists the call ids of rc's entries, oldest first.
func calls(t *testing.T, rc *retryCache) []uint64 {
	t.Helper()
	var out []uint64
	_ = rc.entries(func(e retryEntry) error {
		if e.res.Offset != e.key.call {
			t.Fatalf("entry %d holds the result of call %d", e.key.call, e.res.Offset)
		}
		out = append(out, e.key.call)
		return nil
	})
	return out
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
			wg.Go(func() { got = calls(t, fz) })
			put(rc, tc.before+1, tc.before+tc.after)
			wg.Wait()
			if len(got) != len(tc.wantFrozen) || (len(got) > 0 && (got[0] != tc.wantFrozen[0] || got[len(got)-1] != tc.wantFrozen[len(got)-1])) {
				t.Fatalf("frozen copy holds %d calls (%v..), want %d", len(got), head(got), len(tc.wantFrozen))
			}
			for i := range got {
				if got[i] != tc.wantFrozen[i] {
					t.Fatalf("frozen entry %d is call %d, want %d", i, got[i], tc.wantFrozen[i])
				}
			}
			if again := calls(t, fz); len(again) != len(got) {
				t.Fatalf("frozen copy changed after the puts: %d entries, then %d", len(got), len(again))
			}
			live := calls(t, rc)
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
