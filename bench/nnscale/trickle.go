package main

import (
	"slices"
	"sync/atomic"
	"time"
)

// window is the span a trickle sorts its calls by: the nanosecond times it
// opened and closed, zero until then.
type window struct{ start, end atomic.Int64 }

// overlaps says whether a call from t0 to t1 overlapped the window.
func (w *window) overlaps(t0, t1 time.Time) bool {
	s, e := w.start.Load(), w.end.Load()
	return s != 0 && t1.UnixNano() >= s && (e == 0 || t0.UnixNano() <= e)
}

// trickle is one writer calling create in a steady trickle, one call every
// 200 us (and at once when kicked), as the FSM sees client writes arrive,
// until stop is set or a call fails. Each call's latency, in ms, goes to
// during if it overlapped the window and to outside if not; after, if not
// nil, runs untimed after each call (a Complete that closes the file, say).
type trickle struct {
	during, outside []float64
	err             error
}

func (tr *trickle) run(create, after func() error, w *window, stop *atomic.Bool, kick <-chan struct{}) {
	for !stop.Load() {
		t0 := time.Now()
		err := create()
		t1 := time.Now()
		if err == nil && after != nil {
			err = after()
		}
		if err != nil {
			tr.err = err
			return
		}
		d := float64(t1.Sub(t0).Nanoseconds()) / 1e6
		if w.overlaps(t0, t1) {
			tr.during = append(tr.during, d)
		} else {
			tr.outside = append(tr.outside, d)
		}
		select {
		case <-kick:
		case <-time.After(200 * time.Microsecond):
		}
	}
}

// createStats is what one trickle around one snapshot measured, in ms.
type createStats struct {
	done          int // calls that overlapped the snapshot
	max, p99, p50 float64
	maxOutside    float64 // the control: the longest call that did not overlap it
}

func (tr *trickle) stats() createStats {
	var s createStats
	s.done = len(tr.during)
	if len(tr.during) > 0 {
		sd := slices.Sorted(slices.Values(tr.during))
		s.max, s.p99, s.p50 = sd[len(sd)-1], sd[(len(sd)*99)/100], sd[len(sd)/2]
	}
	if len(tr.outside) > 0 {
		s.maxOutside = slices.Max(tr.outside)
	}
	return s
}
