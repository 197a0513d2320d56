package namenode_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/namenode"
)

// TestWriteRateLimited: a user's write calls past its token bucket are
// refused with ResourceExhausted and a google.rpc.RetryInfo hint, and
// counted by rpc; the same user's reads and another user's writes go on.
func TestWriteRateLimited(t *testing.T) {
	x := startCluster(t, 1, func(_ int, c *namenode.Config) {
		// One call per 100 s: the bucket does not refill within the test.
		c.Limits.WriteRatePerUser, c.Limits.WriteBurstPerUser = 1, 3
	})
	nn := x.c.Namenode(x.leader())
	c := x.client(x.leader())
	if _, err := c.Mkdirs(x.root(), &api.MkdirsRequest{Path: "/pub", Mode: 0o777}); err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		user string
		path string
		want codes.Code
	}{
		{"alice", "/pub/a1", codes.OK},
		{"alice", "/pub/a2", codes.OK},
		{"alice", "/pub/a3", codes.OK},
		{"alice", "/pub/a4", codes.ResourceExhausted},
		{"bob", "/pub/b1", codes.OK},
		{"alice", "/pub/a5", codes.ResourceExhausted},
		{"root", "/pub/r1", codes.OK}, // the superuser is not limited
		{"root", "/pub/r2", codes.OK},
		{"root", "/pub/r3", codes.OK},
		{"root", "/pub/r4", codes.OK},
	} {
		_, err := c.Mkdirs(x.as(tc.user), &api.MkdirsRequest{Path: tc.path, Mode: 0o755})
		if status.Code(err) != tc.want {
			t.Fatalf("call %d (%s %s): %v, want %v", i, tc.user, tc.path, err, tc.want)
		}
		if tc.want != codes.ResourceExhausted {
			continue
		}
		wantCode(t, err, codes.ResourceExhausted, "retry after")
		var hint *errdetails.RetryInfo
		for _, d := range status.Convert(err).Details() {
			if ri, ok := d.(*errdetails.RetryInfo); ok {
				hint = ri
			}
		}
		if hint == nil || hint.GetRetryDelay().AsDuration() <= 0 {
			t.Fatalf("refusal %v carries no positive RetryInfo", err)
		}
	}
	// Reads are not limited.
	if _, err := c.GetFileInfo(x.as("alice"), &api.GetFileInfoRequest{Path: "/pub/a1"}); err != nil {
		t.Fatalf("alice's read refused: %v", err)
	}
	if got := metricValue(t, nn, "blockfs_namenode_rate_limited_total", "Mkdirs"); got != 2 {
		t.Errorf("rate-limited Mkdirs counted %v, want 2", got)
	}
}

// TestFairBackoff: on a namenode that reads as loaded, a user writing
// beside a lighter caller is backed off (ResourceExhausted with a retry
// hint, counted), while the light user's writes are served; once the
// light user has stopped calling, the heavy one is served again.
func TestFairBackoff(t *testing.T) {
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) }) // runs last: the scheduler's loop ends with the namenode
	x := startCluster(t, 1, func(_ int, c *namenode.Config) {
		c.Limits.Fair.Load = func() (time.Duration, bool) { return time.Second, true } // always loaded
	})
	nn := x.c.Namenode(x.leader())
	c := x.client(x.leader())
	if _, err := c.Mkdirs(x.root(), &api.MkdirsRequest{Path: "/pub", Mode: 0o777}); err != nil {
		t.Fatal(err)
	}
	mkdir := func(user string, i int) error {
		_, err := c.Mkdirs(x.as(user), &api.MkdirsRequest{Path: fmt.Sprintf("/pub/%s%d", user, i), Mode: 0o755})
		return err
	}
	// alice writes, bob reads, until alice is backed off.
	var refused error
	for i := 0; refused == nil; i++ {
		if i == 20000 {
			t.Fatal("alice never backed off beside bob on a loaded namenode")
		}
		if _, err := c.GetFileInfo(x.as("bob"), &api.GetFileInfoRequest{Path: "/pub"}); err != nil {
			t.Fatalf("bob's read: %v", err)
		}
		if err := mkdir("alice", i); status.Code(err) == codes.ResourceExhausted {
			refused = err
		} else if err != nil {
			t.Fatal(err)
		}
	}
	wantCode(t, refused, codes.ResourceExhausted, "backed off")
	if !hasRetryInfo(refused) {
		t.Fatalf("backoff %v carries no RetryInfo", refused)
	}
	if got := metricValue(t, nn, "blockfs_namenode_fair_backoffs_total", "Mkdirs"); got < 1 {
		t.Fatalf("backoffs counted %v", got)
	}
	for i := range 3 {
		if err := mkdir("bob", i); err != nil {
			t.Fatalf("light bob's write %d: %v", i, err)
		}
	}
	// bob goes quiet; alice alone is served again.
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; ; i++ {
		err := mkdir("alice", 100000+i)
		if err == nil {
			break
		}
		if status.Code(err) != codes.ResourceExhausted || time.Now().After(deadline) {
			t.Fatalf("alice alone: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func hasRetryInfo(err error) bool {
	for _, d := range status.Convert(err).Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok && ri.GetRetryDelay().AsDuration() > 0 {
			return true
		}
	}
	return false
}

// TestPrepareFileChargedPerFile: a PrepareFile of n files takes n tokens
// of its user's write bucket, as n Creates would, all or none; a refused
// one takes none, and the superuser pays nothing.
func TestPrepareFileChargedPerFile(t *testing.T) {
	x := startCluster(t, 1, func(_ int, c *namenode.Config) {
		c.Limits.WriteRatePerUser, c.Limits.WriteBurstPerUser = 1, 20 // no refill within the test
	})
	nn := x.c.Namenode(x.leader())
	c := x.client(x.leader())
	if _, err := c.Mkdirs(x.root(), &api.MkdirsRequest{Path: "/pub", Mode: 0o777}); err != nil {
		t.Fatal(err)
	}
	limited := func(err error) bool {
		return status.Code(err) == codes.ResourceExhausted && strings.Contains(err.Error(), "write rate limit")
	}
	for i, tc := range []struct {
		user    string
		count   uint32 // 0 prepares one file
		limited bool
	}{
		{"alice", 16, false}, // 16 of 20 tokens
		{"alice", 16, true},  // 1 at admission, 15 more refused: 3 left
		{"alice", 3, false},  // 1 and 2: none left
		{"alice", 0, true},
		{"root", 16, false},
		{"root", 16, false},
	} {
		_, err := c.PrepareFile(x.as(tc.user), &api.PrepareFileRequest{Create: &api.CreateRequest{Path: fmt.Sprintf("/pub/f%d", i)}, Count: tc.count})
		if limited(err) != tc.limited {
			t.Fatalf("call %d (%s, %d files): %v, want rate limited %v", i, tc.user, tc.count, err, tc.limited)
		}
	}
	if got := metricValue(t, nn, "blockfs_namenode_rate_limited_total", "PrepareFile"); got != 2 {
		t.Errorf("rate-limited PrepareFile counted %v, want 2", got)
	}
}
