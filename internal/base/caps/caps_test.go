package caps

import "testing"

func TestCaps(t *testing.T) {
	c := New(2, 3)
	steps := []struct {
		acquire bool
		key     string
		want    string
		inUse   int
	}{
		{true, "alice", "", 1},
		{true, "alice", "", 2},
		{true, "alice", PerKey, 2},
		{true, "bob", "", 3},
		{true, "carol", Total, 3},
		{false, "alice", "", 2},
		{true, "carol", "", 3},
		{true, "alice", Total, 3},
		{false, "bob", "", 2},
		{true, "alice", "", 3},
	}
	for i, s := range steps {
		if s.acquire {
			if got := c.Acquire(s.key); got != s.want {
				t.Fatalf("step %d: Acquire(%s) = %q, want %q", i, s.key, got, s.want)
			}
		} else {
			c.Release(s.key)
		}
		if got := c.InUse(); got != s.inUse {
			t.Fatalf("step %d: InUse = %d, want %d", i, got, s.inUse)
		}
	}
}

func TestCapsWeighted(t *testing.T) {
	c := New(100, 150)
	steps := []struct {
		acquire bool
		key     string
		n       int
		want    string
		inUse   int
	}{
		{true, "alice", 60, "", 60},
		{true, "alice", 50, PerKey, 60}, // 110 > 100: nothing taken
		{true, "alice", 40, "", 100},
		{true, "bob", 60, Total, 100}, // 160 > 150
		{true, "bob", 50, "", 150},
		{false, "alice", 60, "", 90},
		{true, "bob", 50, "", 140},
		{false, "bob", 100, "", 40},
		{false, "alice", 40, "", 0},
	}
	for i, s := range steps {
		if s.acquire {
			if got := c.AcquireN(s.key, s.n); got != s.want {
				t.Fatalf("step %d: AcquireN(%s, %d) = %q, want %q", i, s.key, s.n, got, s.want)
			}
		} else {
			c.ReleaseN(s.key, s.n)
		}
		if got := c.InUse(); got != s.inUse {
			t.Fatalf("step %d: InUse = %d, want %d", i, got, s.inUse)
		}
	}
}
