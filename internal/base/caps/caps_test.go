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
