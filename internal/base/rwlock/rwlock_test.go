package rwlock

import (
	"sync"
	"sync/atomic"
	"testing"
)

// TestExclusion: a writer never overlaps a reader or another writer, and
// readers that picked any shard still see every write (run with -race).
func TestExclusion(t *testing.T) {
	var (
		l       Mutex
		value   int
		readers sync.WaitGroup
	)
	for w := range 4 {
		readers.Add(2)
		go func() {
			defer readers.Done()
			for range 1000 {
				l.Lock()
				value++
				l.Unlock()
			}
		}()
		go func() {
			defer readers.Done()
			last := 0
			for range 1000 {
				m := l.RLock()
				v := value
				m.RUnlock()
				if v < last {
					t.Errorf("reader %d saw %d after %d", w, v, last)
					return
				}
				last = v
			}
		}()
	}
	readers.Wait()
	if value != 4000 {
		t.Fatalf("value %d, want 4000", value)
	}
}

func BenchmarkRLockParallel(b *testing.B) {
	var l Mutex
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l.RLock().RUnlock()
		}
	})
}

func BenchmarkRWMutexRLockParallel(b *testing.B) {
	var l sync.RWMutex
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l.RLock()
			l.RUnlock()
		}
	})
}

func TestCounter(t *testing.T) {
	var c Counter
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				c.Add(2)
			}
		}()
	}
	wg.Wait()
	if got := c.Load(); got != 8000 {
		t.Fatalf("Load() = %d, want 8000", got)
	}
}

func BenchmarkCounterParallel(b *testing.B) {
	var c Counter
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c.Add(1)
		}
	})
}

func BenchmarkAtomicParallel(b *testing.B) {
	var c atomic.Uint64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c.Add(1)
		}
	})
}
