package fairshare

import (
	"fmt"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// load is a settable Config.Load.
type load struct {
	mu sync.Mutex
	d  time.Duration
}

func (l *load) set(d time.Duration) { l.mu.Lock(); l.d = d; l.mu.Unlock() }
func (l *load) read() (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.d, true
}

const busy = time.Millisecond

func newTest(l *load) *Scheduler {
	return New(Config{Busy: 100 * time.Microsecond, HalfLife: 5 * time.Second, Rate: 1000, MaxUsers: 1000, Load: l.read})
}

// step is one window of a scenario: each user's calls (writes, reads) made
// in it, spread evenly over the window, and the load the window ends with.
type step struct {
	calls map[string][2]int
	load  time.Duration
}

// run plays steps on s from t0 and returns, per user, how many of its
// writes were backed off in the last window.
func run(s *Scheduler, l *load, t0 time.Time, steps []step) map[string]int {
	now := t0
	var refused map[string]int
	for _, st := range steps {
		refused = map[string]int{}
		n := 0
		for _, c := range st.calls {
			n = max(n, c[0]+c[1])
		}
		for i := range n {
			at := now.Add(Window * time.Duration(i) / time.Duration(max(n, 1)))
			for name, c := range st.calls {
				if i < c[0] && s.Admit(name, true, at) > 0 {
					refused[name]++
				}
				if i < c[1] {
					s.Admit(name, false, at)
				}
			}
		}
		now = now.Add(Window)
		l.set(st.load)
		s.Tick(now)
	}
	return refused
}

func repeat(n int, st step) []step {
	out := make([]step, n)
	for i := range out {
		out[i] = st
	}
	return out
}

// TestBackoff: a heavy writer is backed off while a lighter user calls on
// a loaded server, and only then: alone, among equals, on an idle server,
// or once the light user is gone, it is served.
func TestBackoff(t *testing.T) {
	heavyAndLight := step{map[string][2]int{"heavy": {100, 0}, "light": {0, 10}}, busy}
	tests := []struct {
		name  string
		steps []step
		final step // the window whose refusals are checked
		want  map[string]bool
	}{
		{"heavy backed off, light reader served", repeat(20, heavyAndLight), heavyAndLight,
			map[string]bool{"heavy": true}},
		{"light writer served", repeat(20, heavyAndLight),
			step{map[string][2]int{"heavy": {100, 0}, "light": {2, 10}}, busy}, map[string]bool{"heavy": true, "light": false}},
		{"lone heavy writer never backed off", repeat(20, step{map[string][2]int{"heavy": {100, 10}}, busy}),
			step{map[string][2]int{"heavy": {100, 10}}, busy}, map[string]bool{"heavy": false}},
		{"equal writers never backed off", repeat(20, step{equal(16, 20), busy}), step{equal(16, 20), busy}, allFalse(16)},
		{"idle server backs nobody off", repeat(20, step{heavyAndLight.calls, 0}),
			step{heavyAndLight.calls, 0}, map[string]bool{"heavy": false}},
		{"light user gone: heavy served again", append(repeat(20, heavyAndLight), repeat(int(Active/Window)+1, step{map[string][2]int{"heavy": {100, 0}}, busy})...),
			step{map[string][2]int{"heavy": {100, 0}}, busy}, map[string]bool{"heavy": false}},
		{"off", nil, heavyAndLight, map[string]bool{"heavy": false}},
	}
	t0 := time.Unix(1_000_000, 0)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &load{}
			s := newTest(l)
			if tt.name == "off" {
				s = New(Config{Load: l.read})
			}
			run(s, l, t0, tt.steps)
			got := run(s, l, t0.Add(time.Duration(len(tt.steps))*Window), []step{tt.final})
			for name, want := range tt.want {
				if (got[name] > 0) != want {
					t.Errorf("%s: %d of its writes backed off in the last window, want backed off %v (throttle %v, from level %d)",
						name, got[name], want, s.Throttle(), s.BackedOffFrom())
				}
			}
		})
	}
}

func equal(n, writes int) map[string][2]int {
	m := map[string][2]int{}
	for i := range n {
		m[fmt.Sprint("sf", i)] = [2]int{writes, 1}
	}
	return m
}

func allFalse(n int) map[string]bool {
	m := map[string]bool{}
	for i := range n {
		m[fmt.Sprint("sf", i)] = false
	}
	return m
}

// TestThrottle: the throttle halves each loaded window (down to its
// floor) and grows back by 1/64 a window once the load is gone; the heavy
// user's admitted writes follow it, and a refusal's hint is when its
// bucket next has a token.
func TestThrottle(t *testing.T) {
	l := &load{}
	s := newTest(l)
	t0 := time.Unix(1_000_000, 0)
	calls := map[string][2]int{"heavy": {200, 0}, "light": {0, 10}}
	run(s, l, t0, []step{{calls, 0}}) // levels known, nothing throttled
	if f := s.Throttle(); f != 1 {
		t.Fatalf("throttle %v before any load, want 1", f)
	}
	now := t0.Add(Window)
	for i := 1; i <= 12; i++ {
		run(s, l, now, []step{{calls, busy}})
		now = now.Add(Window)
		want := max(minThrottle, 1/float64(int(1)<<i))
		if f := s.Throttle(); f != want {
			t.Fatalf("after %d loaded windows the throttle is %v, want %v", i, f, want)
		}
	}
	// At the floor the heavy user gets about Rate*minThrottle writes a
	// second: none of 200 in a window but at most one.
	refused := run(s, l, now, []step{{calls, busy}})
	now = now.Add(Window)
	if refused["heavy"] < 199 {
		t.Fatalf("at the floor %d of 200 heavy writes were refused", refused["heavy"])
	}
	if d := s.Admit("heavy", true, now); d <= 0 || d > time.Duration(float64(time.Second)/(minThrottle*1000))+time.Millisecond {
		t.Fatalf("hint %v, want within the throttled bucket's refill", d)
	}
	before := s.Throttle()
	run(s, l, now, []step{{calls, 0}, {calls, 0}})
	if f := s.Throttle(); f != before+2*increase {
		t.Fatalf("after 2 quiet windows the throttle is %v, want %v", f, before+2*increase)
	}
}

// TestFairAmongWriters: a heavy writer backed off decays until it is no
// heavier than a steady writer, and is then served again: it is held to
// about its share, not starved.
func TestFairAmongWriters(t *testing.T) {
	l := &load{}
	s := newTest(l)
	t0 := time.Unix(1_000_000, 0)
	run(s, l, t0, repeat(10, step{map[string][2]int{"heavy": {200, 0}, "steady": {10, 0}}, busy}))
	if s.BackedOffFrom() >= Levels {
		t.Fatal("heavy writer not backed off")
	}
	// The heavy user keeps pushing, the steady one writes as before; the
	// heavy one's admitted writes stay near the steady one's.
	admitted := 0
	now := t0.Add(10 * Window)
	const windows = 600 // a minute: many half-lives
	for range windows {
		refused := run(s, l, now, []step{{map[string][2]int{"heavy": {200, 0}, "steady": {10, 0}}, busy}})
		admitted += 200 - refused["heavy"]
		now = now.Add(Window)
	}
	per := float64(admitted) / windows
	t.Logf("heavy writer admitted %.1f writes a window", per)
	if per < 2 || per > 40 {
		t.Fatalf("heavy writer admitted %.1f writes a window beside a steady writer's 10; want about its share", per)
	}
}

// TestMaxUsersBounded: users past MaxUsers evict others; idle users with
// nothing left of their score are forgotten.
func TestMaxUsersBounded(t *testing.T) {
	l := &load{}
	s := New(Config{Busy: time.Millisecond, HalfLife: time.Second, Rate: 1000, MaxUsers: 128, Load: l.read})
	now := time.Unix(1_000_000, 0)
	for i := range 10_000 {
		s.Admit(fmt.Sprint("user", i), i%2 == 0, now)
	}
	if n := s.Len(); n > 128 {
		t.Fatalf("%d users tracked, cap 128", n)
	}
	for range 300 { // 30 s: 30 half-lives
		now = now.Add(Window)
		s.Tick(now)
	}
	if n := s.Len(); n != 0 {
		t.Fatalf("%d users still tracked after 30 idle half-lives", n)
	}
}

// TestConcurrent: Admit and Tick from many goroutines (under -race).
func TestConcurrent(t *testing.T) {
	l := &load{d: busy}
	s := newTest(l)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() { s.Run(stop) })
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				s.Admit(fmt.Sprint("u", g%3), i%3 != 0, time.Now())
			}
		})
	}
	for range 20 {
		s.Tick(time.Now())
	}
	close(stop)
	wg.Wait()
}

// TestQuantile: quantiles of the events between two reads of a
// histogram, from the buckets' bounds.
func TestQuantile(t *testing.T) {
	h := &metrics.Float64Histogram{Buckets: []float64{0, 1e-6, 1e-5, 1e-4, 1e-3}, Counts: []uint64{10, 50, 30, 10}}
	tests := []struct {
		name string
		prev []uint64
		q    float64
		want time.Duration
	}{
		{"all", []uint64{0, 0, 0, 0}, 0.9, 100 * time.Microsecond},
		{"median", []uint64{0, 0, 0, 0}, 0.5, 10 * time.Microsecond},
		{"since prev: the slow tail is new", []uint64{10, 50, 30, 0}, 0.5, time.Millisecond},
		{"nothing new", []uint64{10, 50, 30, 10}, 0.9, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n uint64
			for i, c := range h.Counts {
				n += c - tt.prev[i]
			}
			if got := quantile(h, tt.prev, n, tt.q); got != tt.want {
				t.Fatalf("quantile %v, want %v", got, tt.want)
			}
		})
	}
}

// TestSchedProbe: the runtime probe reads the scheduler's histogram and
// says when a window had too few events to judge.
func TestSchedProbe(t *testing.T) {
	p := newSchedProbe()
	if _, ok := p.read(); ok {
		// Nothing ran between the two reads: too few events. (A busy test
		// binary may have scheduled some; then the figure must still be
		// sane.)
		t.Log("events between two immediate reads")
	}
	var wg sync.WaitGroup
	for range 1000 {
		wg.Go(func() {})
	}
	wg.Wait()
	d, ok := p.read()
	if !ok {
		t.Fatal("1000 goroutines scheduled, yet too few events")
	}
	if d < 0 || d > time.Minute {
		t.Fatalf("p99 scheduling latency %v", d)
	}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
