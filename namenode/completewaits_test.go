package namenode_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/namenode"
)

// metricValue reads metric name (no labels, or the one with label value) from
// namenode n's registry.
func metricValue(t *testing.T, n *namenode.Namenode, name, label string) float64 {
	t.Helper()
	mfs, err := n.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.Metric {
			if label != "" && (len(m.Label) == 0 || m.Label[0].GetValue() != label) {
				continue
			}
			if m.Gauge != nil {
				return m.Gauge.GetValue()
			}
			return m.Counter.GetValue()
		}
	}
	return 0
}

// TestCompleteWaitsBounded: a Complete that must wait for replica reports
// takes one of its user's waits; past the per-user cap the next is refused
// at once (ResourceExhausted) while another user's still waits, and past
// the total cap every user's is; a Complete whose reports are in waits for
// nothing and takes none. Each refusal is counted.
func TestCompleteWaitsBounded(t *testing.T) {
	x := startCluster(t, 1, func(_ int, c *namenode.Config) {
		c.Namespace.MinReplication, c.Namespace.CompleteWait = 1, time.Minute
		c.Limits.CompleteWaitsPerUser, c.Limits.CompleteWaitsTotal = 1, 2
	})
	x.registerDatanodesOnly(3) // registered, never reporting: every Complete waits
	nn := x.c.Namenode(x.leader())
	c := x.client(x.leader())
	if _, err := c.Mkdirs(x.root(), &api.MkdirsRequest{Path: "/pub", Mode: 0o777}); err != nil {
		t.Fatal(err)
	}
	// open creates p as user with one block and returns the Complete
	// request that closes it.
	open := func(user, p string) *api.CompleteRequest {
		cr, err := c.Create(x.as(user), &api.CreateRequest{Path: p, Replication: 1, BlockSize: 1024})
		if err != nil {
			t.Fatal(err)
		}
		ab, err := c.AddBlock(x.as(user), &api.AddBlockRequest{Path: p, InodeId: cr.Status.InodeId})
		if err != nil {
			t.Fatal(err)
		}
		b := ab.Block.Block
		b.Length = 10
		return &api.CompleteRequest{Path: p, InodeId: cr.Status.InodeId, Blocks: []*api.Block{b}}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 2)
	wait := func(user string, req *api.CompleteRequest, waiting float64) {
		go func() {
			_, err := c.Complete(metadata.AppendToOutgoingContext(ctx, namenode.UserKey, user), req)
			done <- err
		}()
		deadline := time.Now().Add(10 * time.Second)
		for metricValue(t, nn, "blockfs_namenode_complete_waits", "") < waiting {
			if time.Now().After(deadline) {
				t.Fatalf("%s's Complete is not waiting", user)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	wait("alice", open("alice", "/pub/a1"), 1)
	_, err := c.Complete(x.as("alice"), open("alice", "/pub/a2"))
	wantCode(t, err, codes.ResourceExhausted, "--complete-waits-per-user")
	wait("bob", open("bob", "/pub/b1"), 2) // another user still waits
	_, err = c.Complete(x.as("carol"), open("carol", "/pub/c1"))
	wantCode(t, err, codes.ResourceExhausted, "--complete-waits-total")
	if got := metricValue(t, nn, "blockfs_namenode_limit_refusals_total", "complete_waits_per_user"); got != 1 {
		t.Errorf("per-user refusals counted %v, want 1", got)
	}
	if got := metricValue(t, nn, "blockfs_namenode_limit_refusals_total", "complete_waits_total"); got != 1 {
		t.Errorf("total refusals counted %v, want 1", got)
	}
	cancel()
	for range 2 {
		if err := <-done; err == nil {
			t.Error("a canceled waiting Complete succeeded")
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for metricValue(t, nn, "blockfs_namenode_complete_waits", "") != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the canceled Completes still hold their waits")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Once the waits are back, alice may wait again.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	wait("alice", open("alice", "/pub/a3"), 1)
	cancel()
	<-done
}
