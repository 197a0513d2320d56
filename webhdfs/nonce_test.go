package webhdfs

import (
	"testing"
	"time"

	"github.com/blockfs/blockfs/errs"
)

// TestNonceCache: a nonce is used once until it expires; a full cache
// drops expired nonces, and refuses (Unavailable) rather than forget a
// live one.
func TestNonceCache(t *testing.T) {
	t0 := time.Unix(1000, 0)
	c := newNonceCache(2)
	steps := []struct {
		nonce string
		exp   time.Time
		now   time.Time
		kind  errs.Kind // 0: accepted
	}{
		{"a", t0.Add(time.Minute), t0, 0},
		{"a", t0.Add(time.Minute), t0.Add(time.Second), errs.Permission},
		{"b", t0.Add(2 * time.Minute), t0, 0},
		{"c", t0.Add(time.Minute), t0.Add(time.Second), errs.Unavailable},
		{"c", t0.Add(3 * time.Minute), t0.Add(time.Minute), 0}, // a expired and was dropped
		{"b", t0.Add(2 * time.Minute), t0.Add(time.Minute), errs.Permission},
	}
	for i, s := range steps {
		err := c.use(s.nonce, s.exp, s.now)
		if (s.kind == 0) != (err == nil) || (err != nil && errs.KindOf(err) != s.kind) {
			t.Fatalf("step %d (%s): %v, want kind %v", i, s.nonce, err, s.kind)
		}
	}
}
