package localcluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/localcluster"
	"github.com/blockfs/blockfs/namenode"
)

// TestClientHonoursRetryHint: a client over its user's write rate is
// refused with a retry hint, waits as long as the hint says and retries,
// so a burst of calls past the bucket all succeed; a caller whose deadline
// comes before the hint gets the refusal at once.
func TestClientHonoursRetryHint(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Config{Namenodes: 1, Dir: t.TempDir(),
		Namenode: func(_ int, nc *namenode.Config) { nc.Limits.WriteRatePerUser, nc.Limits.WriteBurstPerUser = 50, 1 }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	root, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	// The superuser is not limited; alice is.
	if err := root.Mkdirs(ctx, "/rl", 0o777, true); err != nil {
		t.Fatal(err)
	}
	cl, err := c.ClientAs("alice")
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range 10 {
		if err := cl.Mkdirs(ctx, fmt.Sprintf("/rl/d%d", i), 0o755, true); err != nil {
			t.Fatalf("mkdir %d: %v", i, err)
		}
	}
	reg := c.Namenode(0).Registry()
	if got := metricValue(t, reg, "blockfs_namenode_rate_limited_total", "rpc", "Mkdirs"); got == 0 {
		t.Fatal("no Mkdirs was rate limited: the test did not exercise the hint")
	}
	// A deadline shorter than any hint: the refusal comes back as it is.
	slow, err := localcluster.Start(ctx, localcluster.Config{Namenodes: 1, Dir: t.TempDir(),
		Namenode: func(_ int, nc *namenode.Config) { nc.Limits.WriteRatePerUser, nc.Limits.WriteBurstPerUser = 1, 1 }})
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	sroot, err := slow.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer sroot.Close()
	if err := sroot.Mkdirs(ctx, "/w", 0o777, true); err != nil {
		t.Fatal(err)
	}
	sc, err := slow.ClientAs("alice")
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	if err := sc.Mkdirs(ctx, "/w/a", 0o755, true); err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancelShort()
	err = sc.Mkdirs(short, "/w/b", 0o755, true)
	if !errs.Is(err, errs.Exhausted) || errs.RetryAfter(err) <= 0 {
		t.Fatalf("got %v, want the Exhausted refusal with its hint", err)
	}
}
