package ratelimit

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestAllow(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	tests := []struct {
		name  string
		cfg   Config
		calls []time.Duration // offsets from t0, all for one key
		want  []bool          // admitted
	}{
		{"off admits all", Config{}, []time.Duration{0, 0, 0, 0}, []bool{true, true, true, true}},
		{"burst then refuse", Config{Rate: 10, Burst: 2, MaxKeys: 10}, []time.Duration{0, 0, 0}, []bool{true, true, false}},
		{"refill after 1/rate", Config{Rate: 10, Burst: 1, MaxKeys: 10}, []time.Duration{0, 50 * time.Millisecond, 100 * time.Millisecond}, []bool{true, false, true}},
		{"refusals spend nothing", Config{Rate: 10, Burst: 1, MaxKeys: 10},
			[]time.Duration{0, 10 * time.Millisecond, 20 * time.Millisecond, 30 * time.Millisecond, 100 * time.Millisecond}, []bool{true, false, false, false, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := New(tt.cfg)
			for i, off := range tt.calls {
				d := l.Allow("alice", t0.Add(off))
				if got := d == 0; got != tt.want[i] {
					t.Fatalf("call %d at +%v: admitted %v (hint %v), want %v", i, off, got, d, tt.want[i])
				}
				if d < 0 {
					t.Fatalf("call %d: negative hint %v", i, d)
				}
			}
		})
	}
}

func TestRetryHint(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	l := New(Config{Rate: 4, Burst: 1, MaxKeys: 10})
	if d := l.Allow("a", t0); d != 0 {
		t.Fatalf("first call refused: %v", d)
	}
	d := l.Allow("a", t0)
	if d != 250*time.Millisecond {
		t.Fatalf("hint %v, want 250ms (1/rate)", d)
	}
	if d := l.Allow("a", t0.Add(d)); d != 0 {
		t.Fatalf("refused at the hinted time: %v", d)
	}
}

func TestKeysIndependent(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	l := New(Config{Rate: 1, Burst: 1, MaxKeys: 1000})
	l.Allow("a", t0)
	if l.Allow("a", t0) == 0 {
		t.Fatal("a's second call admitted")
	}
	if d := l.Allow("b", t0); d != 0 {
		t.Fatalf("b refused because of a: %v", d)
	}
}

func TestMaxKeysBounded(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	tests := []struct {
		name string
		step time.Duration // between two new keys
	}{
		{"all busy: LRU evicted", 0},
		{"idle keys evicted", 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := New(Config{Rate: 1, Burst: 1, MaxKeys: 128})
			now := t0
			for i := range 10_000 {
				l.Allow(fmt.Sprint("user", i), now)
				now = now.Add(tt.step)
			}
			if n := l.Len(); n > 128 {
				t.Fatalf("%d keys tracked, cap 128", n)
			}
		})
	}
}

func TestConcurrent(t *testing.T) {
	l := New(Config{Rate: 1e-9, Burst: 100, MaxKeys: 1 << 20})
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted := 0
	now := time.Now()
	for range 8 {
		wg.Go(func() {
			for range 100 {
				if l.Allow("same", now) == 0 {
					mu.Lock()
					admitted++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if admitted != 100 {
		t.Fatalf("%d admitted concurrently, want the burst of 100", admitted)
	}
}

// TestAllowN: n tokens are taken all or none, a refusal spends nothing,
// n <= 0 is free, and more than the burst never fits.
func TestAllowN(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	tests := []struct {
		name  string
		cfg   Config
		ns    []int // one call each at t0, one key
		want  []bool
		hints []time.Duration // for refusals: the hint wanted (0: any positive)
	}{
		{"off admits all", Config{}, []int{100, 100}, []bool{true, true}, nil},
		{"burst in two calls", Config{Rate: 10, Burst: 20, MaxKeys: 10}, []int{16, 4, 1}, []bool{true, true, false}, []time.Duration{0, 0, 100 * time.Millisecond}},
		{"all or none", Config{Rate: 10, Burst: 20, MaxKeys: 10}, []int{16, 16, 4}, []bool{true, false, true}, []time.Duration{0, 1200 * time.Millisecond, 0}},
		{"n <= 0 is free", Config{Rate: 10, Burst: 1, MaxKeys: 10}, []int{1, 0, -3, 1}, []bool{true, true, true, false}, nil},
		{"above the burst never fits", Config{Rate: 10, Burst: 4, MaxKeys: 10}, []int{5, 4}, []bool{false, true}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := New(tt.cfg)
			for i, n := range tt.ns {
				d := l.AllowN("alice", n, t0)
				if got := d == 0; got != tt.want[i] {
					t.Fatalf("call %d (n=%d): admitted %v (hint %v), want %v", i, n, got, d, tt.want[i])
				}
				if d < 0 {
					t.Fatalf("call %d: negative hint %v", i, d)
				}
				if tt.hints != nil && tt.hints[i] != 0 && d != tt.hints[i] {
					t.Fatalf("call %d (n=%d): hint %v, want %v", i, n, d, tt.hints[i])
				}
			}
		})
	}
}
