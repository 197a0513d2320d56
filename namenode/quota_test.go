package namenode_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/internal/testutil/syncbuf"
	"github.com/blockfs/blockfs/namenode"
)

// TestQuotaSurvivesLeaderChangeAndSnapshot: a quota set through one
// leader is enforced by the next after a leader change, and by a namenode
// restarted from its snapshot; only a superuser may set it.
func TestQuotaSurvivesLeaderChangeAndSnapshot(t *testing.T) {
	x := startCluster(t, 3, func(i int, c *namenode.Config) { c.Raft.SnapshotEvery = 64 })
	l := x.leader()
	x.mkdir(l, "/q/a")
	cl := x.client(l)

	// Superuser only, on leader and follower alike (a follower forwards).
	for _, i := range []int{l, x.follower()} {
		_, err := x.client(i).SetQuota(x.as("alice"), &api.SetQuotaRequest{Path: "/q", NamespaceQuota: 3, SpaceQuota: -1})
		wantCode(t, err, codes.PermissionDenied, "Superuser privilege is required")
	}
	if _, err := cl.SetQuota(x.root(), &api.SetQuotaRequest{Path: "/q", NamespaceQuota: 3, SpaceQuota: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Mkdirs(x.root(), &api.MkdirsRequest{Path: "/q/b"}); err != nil {
		t.Fatal(err) // /q, /q/a, /q/b: at the limit
	}
	_, err := cl.Mkdirs(x.root(), &api.MkdirsRequest{Path: "/q/c"})
	wantCode(t, err, codes.ResourceExhausted, "NSQuotaExceededException")

	// Snapshot every node so that a restart restores the quota from the
	// image, not the log.
	x.converge()
	for i := range x.conns {
		if _, err := api.NewAdminClient(x.conns[i]).Snapshot(x.root(), &api.SnapshotRequest{}); err != nil {
			t.Fatalf("snapshot on %d: %v", i, err)
		}
	}
	// A leader change: the new leader enforces it.
	if err := x.c.StopNamenode(l); err != nil {
		t.Fatal(err)
	}
	nl := x.leader()
	_, err = x.mkdirErr(nl, "/q/c")
	wantCode(t, err, codes.ResourceExhausted, "NSQuotaExceededException")
	want := &api.ContentSummary{Length: 0, FileCount: 0, DirectoryCount: 3, Quota: 3, SpaceConsumed: 0, SpaceQuota: 1 << 20}
	r, err := x.client(nl).GetContentSummary(x.as("alice"), &api.GetContentSummaryRequest{Path: "/q"})
	if err != nil {
		t.Fatal(err)
	}
	if !sameSummary(r.Summary, want) {
		t.Fatalf("content summary %v, want %v", r.Summary, want)
	}

	// The old leader restarts from its snapshot; then the new leader stops,
	// so the restarted node or the third one leads: it enforces the quota.
	if err := x.c.RestartNamenode(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	x.converge()
	if err := x.c.StopNamenode(nl); err != nil {
		t.Fatal(err)
	}
	nl2 := x.leader()
	_, err = x.mkdirErr(nl2, "/q/c")
	wantCode(t, err, codes.ResourceExhausted, "NSQuotaExceededException")
	u, err := x.client(l).GetQuotaUsage(x.root(), &api.GetQuotaUsageRequest{Path: "/q",
		Read: &api.ReadOptions{Consistency: api.ReadConsistency_READ_CONSISTENCY_STALE}})
	if err != nil {
		t.Fatal(err)
	}
	if u.Usage.FileAndDirectoryCount != 3 || u.Usage.Quota != 3 || u.Usage.SpaceQuota != 1<<20 {
		t.Fatalf("restarted node's quota usage %v", u.Usage)
	}
	// Clearing it lets the directory grow again.
	if _, err := x.client(nl2).SetQuota(x.root(), &api.SetQuotaRequest{Path: "/q", NamespaceQuota: -1, SpaceQuota: -1}); err != nil {
		t.Fatal(err)
	}
	if _, err := x.mkdirErr(x.leader(), "/q/c"); err != nil {
		t.Fatal(err)
	}
}

// mkdirErr makes directory p through node, retrying while the cluster
// elects a leader, and returns the call's error.
func (x *tc) mkdirErr(node int, p string) (*api.MkdirsResponse, error) {
	deadline := time.Now().Add(20 * time.Second)
	for {
		r, err := x.client(node).Mkdirs(x.root(), &api.MkdirsRequest{Path: p})
		if statusCode(err) != codes.Unavailable || time.Now().After(deadline) {
			return r, err
		}
		time.Sleep(50 * time.Millisecond)
		node = x.leader()
	}
}

func sameSummary(a, b *api.ContentSummary) bool {
	return a.Length == b.Length && a.FileCount == b.FileCount && a.DirectoryCount == b.DirectoryCount &&
		a.Quota == b.Quota && a.SpaceConsumed == b.SpaceConsumed && a.SpaceQuota == b.SpaceQuota
}

// TestQuotaAudited: SetQuota, GetContentSummary and GetQuotaUsage are in
// the audit log as HDFS names them, refusals as allowed=false.
func TestQuotaAudited(t *testing.T) {
	outs := make([]*syncbuf.Buffer, 1)
	x := startCluster(t, 1, func(i int, c *namenode.Config) {
		outs[i] = &syncbuf.Buffer{}
		c.Audit.Output, c.Audit.FlushInterval = outs[i], 10*time.Millisecond
	})
	cl := x.client(x.leader())
	x.mkdir(0, "/q")
	_, err := cl.SetQuota(x.as("alice"), &api.SetQuotaRequest{Path: "/q", NamespaceQuota: 3, SpaceQuota: -1})
	wantCode(t, err, codes.PermissionDenied, "")
	if _, err := cl.SetQuota(x.root(), &api.SetQuotaRequest{Path: "/q", NamespaceQuota: 3, SpaceQuota: -1}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.GetContentSummary(x.root(), &api.GetContentSummaryRequest{Path: "/q"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.GetQuotaUsage(x.root(), &api.GetQuotaUsageRequest{Path: "/q"}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"allowed=false\tugi=alice (auth:SIMPLE)\tip=/127.0.0.1\tcmd=setQuota\tsrc=/q",
		"allowed=true\tugi=root (auth:SIMPLE)\tip=/127.0.0.1\tcmd=setQuota\tsrc=/q",
		"allowed=true\tugi=root (auth:SIMPLE)\tip=/127.0.0.1\tcmd=contentSummary\tsrc=/q",
		"allowed=true\tugi=root (auth:SIMPLE)\tip=/127.0.0.1\tcmd=quotaUsage\tsrc=/q",
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, w := range want {
		for !strings.Contains(strings.Join(outs[0].Lines(), "\n"), w) {
			if time.Now().After(deadline) {
				t.Fatalf("audit log lacks %q:\n%s", w, strings.Join(outs[0].Lines(), "\n"))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}
