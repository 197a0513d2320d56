package datanode

import (
	"context"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// TestBalancePacer: moves share one limiter per datanode at the bandwidth
// their commands carry (a new bandwidth resets its rate), re-replication
// (0) is not paced, and pacing a copy spends the limiter's tokens, so the
// next bytes wait (checked on the limiter's own clock, not the wall).
func TestBalancePacer(t *testing.T) {
	var p balancePacer
	if p.limiter(0) != nil {
		t.Fatal("re-replication paced")
	}
	a := p.limiter(1 << 20)
	if b := p.limiter(1 << 20); b != a {
		t.Fatal("two moves at one bandwidth got two limiters")
	}
	if a.lim.Limit() != rate.Limit(1<<20) || a.lim.Burst() != 1<<20/10 {
		t.Fatalf("limit %v burst %d", a.lim.Limit(), a.lim.Burst())
	}
	if c := p.limiter(8 << 20); c != a || a.lim.Limit() != rate.Limit(8<<20) || a.lim.Burst() != 8<<20/10 {
		t.Fatalf("new bandwidth: same limiter %v, limit %v burst %d", c == a, a.lim.Limit(), a.lim.Burst())
	}
	ctx := context.Background()
	var none *pacer
	if err := none.wait(ctx, 1<<30); err != nil {
		t.Fatal(err)
	}
	lim := rate.NewLimiter(rate.Limit(1<<30), 1<<20)            // fast, so the test does not wait long
	if err := (&pacer{lim: lim}).wait(ctx, 3<<20); err != nil { // more than one burst: waits in pieces
		t.Fatal(err)
	}
	now := time.Now()
	if d := lim.ReserveN(now, 1<<20).DelayFrom(now); d <= 0 {
		t.Fatalf("a burst right after pacing 3 bursts went without delay (%v)", d)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := (&pacer{lim: rate.NewLimiter(1, 1)}).wait(cctx, 10); err == nil {
		t.Fatal("a cancelled copy kept pacing")
	}
}
