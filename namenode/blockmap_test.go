package namenode_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/blocks"
	"github.com/blockfs/blockfs/namenode"
	"github.com/blockfs/blockfs/security"
)

// These tests drive one namenode (simple auth) with datanodes played by the
// test: each says who it is in request metadata, as a real datanode's
// certificate would, and a heartbeat loop keeps them alive and records the
// commands the leader hands them.

// bmCluster is a one-namenode cluster with scripted datanodes.
type bmCluster struct {
	*tc
	dp api.DatanodeProtocolClient
	bm *blocks.Manager

	mu    sync.Mutex
	live  map[string]uint64 // datanode id -> capacity, heartbeating
	cmds  map[string][]*api.DatanodeCommand
	beats int // heartbeat rounds completed
}

func startBMCluster(t *testing.T) *bmCluster {
	t.Helper()
	x := &bmCluster{
		tc: startCluster(t, 1, func(i int, c *namenode.Config) {
			c.Blocks.HeartbeatInterval = 50 * time.Millisecond
			c.WorkInterval = 20 * time.Millisecond
		}),
		live: map[string]uint64{}, cmds: map[string][]*api.DatanodeCommand{},
	}
	x.leader()
	x.dp = api.NewDatanodeProtocolClient(x.conns[0])
	x.bm = x.c.Namenode(0).Blocks()
	stop, done := make(chan struct{}), make(chan struct{})
	go x.heartbeats(stop, done)
	t.Cleanup(func() { close(stop); <-done })
	return x
}

// dnCtx is a call context of datanode id.
func dnCtx(t *testing.T, id string) context.Context {
	return metadata.AppendToOutgoingContext(t.Context(), security.UserKey, id, security.RoleKey, security.RoleDatanode.String())
}

func (x *bmCluster) heartbeats(stop, done chan struct{}) {
	defer close(done)
	for {
		x.mu.Lock()
		live := make(map[string]uint64, len(x.live))
		for id, c := range x.live {
			live[id] = c
		}
		x.mu.Unlock()
		for id, capacity := range live {
			ctx := metadata.AppendToOutgoingContext(context.Background(), security.UserKey, id, security.RoleKey, "datanode")
			ctx, cancel := context.WithTimeout(ctx, time.Second)
			hr, err := x.dp.Heartbeat(ctx, &api.HeartbeatRequest{DatanodeId: id, Capacity: capacity, Used: capacity / 2})
			cancel()
			if err == nil && len(hr.Commands) > 0 {
				x.mu.Lock()
				x.cmds[id] = append(x.cmds[id], hr.Commands...)
				x.mu.Unlock()
			}
		}
		x.mu.Lock()
		x.beats++
		x.mu.Unlock()
		select {
		case <-stop:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// addDatanode registers datanode id (as itself) and keeps it heartbeating.
func (x *bmCluster) addDatanode(id string, capacity uint64) {
	x.t.Helper()
	_, err := x.dp.Register(dnCtx(x.t.(*testing.T), id), &api.RegisterRequest{Node: &api.DatanodeInfo{
		Id: id, Addr: "127.0.0.1:9" + id[len(id)-1:], Capacity: capacity,
	}})
	if err != nil {
		x.t.Fatalf("register %s: %v", id, err)
	}
	x.mu.Lock()
	x.live[id] = capacity
	x.mu.Unlock()
}

// commandsFor returns the commands datanode id received about block.
func (x *bmCluster) commandsFor(id string, block uint64) (del, verify, replicate []*api.DatanodeCommand) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, c := range x.cmds[id] {
		switch {
		case c.GetDelete() != nil:
			for _, b := range c.GetDelete().Blocks {
				if b.Id == block {
					del = append(del, c)
				}
			}
		case c.GetVerify() != nil && c.GetVerify().Block.GetId() == block:
			verify = append(verify, c)
		case c.GetReplicate() != nil && c.GetReplicate().Block.GetId() == block:
			replicate = append(replicate, c)
		}
	}
	return
}

// waitFor polls cond until it holds, failing after a generous deadline.
func (x *bmCluster) waitFor(what string, cond func() bool) {
	x.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			x.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// settle waits until the datanodes have heartbeat n more rounds, so that
// work the leader would do has had its chance to be handed out.
func (x *bmCluster) settle(n int) {
	x.mu.Lock()
	target := x.beats + n
	x.mu.Unlock()
	x.waitFor("heartbeat rounds", func() bool {
		x.mu.Lock()
		defer x.mu.Unlock()
		return x.beats >= target
	})
}

// writeBlock creates p (replication r) with one block written through a
// pipeline: each pipeline datanode reports receiving it, then the client
// completes the file. It returns the block, its inode and the pipeline.
func (x *bmCluster) writeBlock(p string, r uint32) (*api.Block, uint64, []string) {
	x.t.Helper()
	t := x.t.(*testing.T)
	c := x.client(0)
	cr, err := c.Create(x.root(), &api.CreateRequest{Path: p, Replication: r, BlockSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	ab, err := c.AddBlock(x.root(), &api.AddBlockRequest{Path: p, InodeId: cr.Status.InodeId})
	if err != nil {
		t.Fatal(err)
	}
	b := ab.Block.Block
	b.Length = 100
	var pipeline []string
	for _, d := range ab.Block.Locations {
		pipeline = append(pipeline, d.Id)
		_, err := x.dp.IncrementalBlockReport(dnCtx(t, d.Id), &api.IncrementalBlockReportRequest{
			DatanodeId: d.Id, Received: []*api.ReportedBlock{{Block: b, InodeId: cr.Status.InodeId}},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Complete(x.root(), &api.CompleteRequest{Path: p, InodeId: cr.Status.InodeId, Blocks: []*api.Block{b}}); err != nil {
		t.Fatal(err)
	}
	return b, cr.Status.InodeId, pipeline
}

func TestDatanodeRegistrationConflicts(t *testing.T) {
	x := startBMCluster(t)
	x.addDatanode("dn0", 1<<40)
	tests := []struct {
		name string
		ctx  context.Context
		id   string
		addr string
		want codes.Code
	}{
		{"same address again", dnCtx(t, "dn0"), "dn0", "127.0.0.1:90", codes.OK},
		{"live id from another address", dnCtx(t, "dn0"), "dn0", "127.0.0.1:666", codes.AlreadyExists},
		{"another datanode's id", dnCtx(t, "evil"), "dn0", "127.0.0.1:666", codes.PermissionDenied},
		{"a user", x.as("mallory"), "dn0", "127.0.0.1:666", codes.PermissionDenied},
		{"no address", dnCtx(t, "dn0"), "dn0", "", codes.InvalidArgument},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			capacity := uint64(1 << 60) // what a refused registration must not install
			if tc.want == codes.OK {
				capacity = 1 << 40
			}
			_, err := x.dp.Register(tc.ctx, &api.RegisterRequest{Node: &api.DatanodeInfo{Id: tc.id, Addr: tc.addr, Capacity: capacity}})
			if got := statusCode(err); got != tc.want {
				t.Fatalf("Register = %v, want %v", err, tc.want)
			}
			if d, _ := x.bm.Datanode("dn0"); d.Addr != "127.0.0.1:90" || d.Capacity != 1<<40 {
				t.Fatalf("dn0 = %+v after a refused registration", d)
			}
		})
	}
	if x.bm.Refused(blocks.RefusedRegister) == 0 {
		t.Fatal("refused registration not counted")
	}
}

// TestFakeDatanodesCannotGetRealReplicasDeleted is the attack:
// datanodes claiming a real block with vast free space. The real replicas
// were written through the pipeline (verified), the claims were not, so the
// claims are what over-replication deletes.
func TestFakeDatanodesCannotGetRealReplicasDeleted(t *testing.T) {
	x := startBMCluster(t)
	for i := range 3 {
		x.addDatanode(fmt.Sprintf("dn%d", i), 1<<40)
	}
	b, inode, pipeline := x.writeBlock("/f", 3)
	fakes := []string{"fake1", "fake2", "fake3"}
	for _, f := range fakes {
		x.addDatanode(f, 1<<62)
		if _, err := x.dp.BlockReport(dnCtx(t, f), &api.BlockReportRequest{
			DatanodeId: f, Blocks: []*api.ReportedBlock{{Block: b, InodeId: inode}},
		}); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range fakes {
		x.waitFor(f+" told to delete its claim", func() bool { d, _, _ := x.commandsFor(f, b.Id); return len(d) > 0 })
	}
	x.settle(5)
	for _, id := range pipeline {
		if d, _, _ := x.commandsFor(id, b.Id); len(d) != 0 {
			t.Fatalf("real replica on %s ordered deleted", id)
		}
		if !x.bm.IsVerified(b.Id, id) {
			t.Fatalf("real replica on %s not verified", id)
		}
	}
}

func TestClientBadBlockReport(t *testing.T) {
	tests := []struct {
		name    string
		corrupt bool // what the datanode finds when it re-verifies
	}{
		{"healthy replica stays", false},
		{"corrupt replica is replaced and deleted", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := startBMCluster(t)
			for i := range 4 {
				x.addDatanode(fmt.Sprintf("dn%d", i), 1<<40)
			}
			b, inode, pipeline := x.writeBlock("/f", 3)
			victim := pipeline[0]
			if _, err := x.client(0).ReportBadBlocks(x.as("mallory"), &api.ReportBadBlocksRequest{
				DatanodeId: victim, Blocks: []*api.Block{b},
			}); err != nil {
				t.Fatal(err)
			}
			x.waitFor("a verify command", func() bool { _, v, _ := x.commandsFor(victim, b.Id); return len(v) > 0 })
			if live, _ := x.bm.NeededReplication(b.Id); live != 3 {
				t.Fatalf("%d good replicas while suspect, want 3 (a client's word removes nothing)", live)
			}
			if !tc.corrupt {
				if _, err := x.dp.IncrementalBlockReport(dnCtx(t, victim), &api.IncrementalBlockReportRequest{
					DatanodeId: victim, Verified: []*api.Block{b},
				}); err != nil {
					t.Fatal(err)
				}
				x.settle(5)
				if d, _, _ := x.commandsFor(victim, b.Id); len(d) != 0 {
					t.Fatal("verified replica ordered deleted")
				}
				if st := x.bm.Stats(); st.Suspect != 0 || st.Replicas != 3 || !x.bm.IsVerified(b.Id, victim) {
					t.Fatalf("stats = %+v, verified %v", st, x.bm.IsVerified(b.Id, victim))
				}
				return
			}
			// The datanode found it corrupt and says so itself: trusted.
			if _, err := x.client(0).ReportBadBlocks(dnCtx(t, victim), &api.ReportBadBlocksRequest{
				DatanodeId: victim, Blocks: []*api.Block{b},
			}); err != nil {
				t.Fatal(err)
			}
			var target string
			x.waitFor("a replication", func() bool {
				for _, id := range pipeline[1:] {
					if _, _, r := x.commandsFor(id, b.Id); len(r) > 0 {
						target = r[0].GetReplicate().Targets[0].Id
						return true
					}
				}
				return false
			})
			if _, err := x.dp.IncrementalBlockReport(dnCtx(t, target), &api.IncrementalBlockReportRequest{
				DatanodeId: target, Received: []*api.ReportedBlock{{Block: b, InodeId: inode}},
			}); err != nil {
				t.Fatal(err)
			}
			x.waitFor("the corrupt replica deleted", func() bool { d, _, _ := x.commandsFor(victim, b.Id); return len(d) > 0 })
			for _, id := range append(pipeline[1:], target) {
				if d, _, _ := x.commandsFor(id, b.Id); len(d) != 0 {
					t.Fatalf("good replica on %s ordered deleted", id)
				}
			}
		})
	}
}

func TestLastLiveReplicaNeverInvalidated(t *testing.T) {
	x := startBMCluster(t)
	x.addDatanode("dn0", 1<<40)
	b, _, _ := x.writeBlock("/f", 1)
	for _, ctx := range []context.Context{x.as("mallory"), dnCtx(t, "dn0")} {
		if _, err := x.client(0).ReportBadBlocks(ctx, &api.ReportBadBlocksRequest{DatanodeId: "dn0", Blocks: []*api.Block{b}}); err != nil {
			t.Fatal(err)
		}
		x.settle(5)
		if d, _, _ := x.commandsFor("dn0", b.Id); len(d) != 0 {
			t.Fatal("the last replica was ordered deleted")
		}
	}
}

func TestBadBlockAndReportInputRefused(t *testing.T) {
	x := startBMCluster(t)
	x.addDatanode("dn0", 1<<40)
	x.addDatanode("dn1", 1<<40)
	b, _, _ := x.writeBlock("/f", 2)
	c := x.client(0)
	tests := []struct {
		name string
		call func() error
		want codes.Code
	}{
		{"no datanode", func() error {
			_, err := c.ReportBadBlocks(x.root(), &api.ReportBadBlocksRequest{Blocks: []*api.Block{b}})
			return err
		}, codes.InvalidArgument},
		{"block without id", func() error {
			_, err := c.ReportBadBlocks(x.root(), &api.ReportBadBlocksRequest{DatanodeId: "dn0", Blocks: []*api.Block{b, {}}})
			return err
		}, codes.InvalidArgument},
		{"a datanode for another", func() error {
			_, err := c.ReportBadBlocks(dnCtx(t, "dn1"), &api.ReportBadBlocksRequest{DatanodeId: "dn0", Blocks: []*api.Block{b}})
			return err
		}, codes.PermissionDenied},
		{"no such replica", func() error {
			_, err := c.ReportBadBlocks(x.root(), &api.ReportBadBlocksRequest{DatanodeId: "dn0", Blocks: []*api.Block{{Id: b.Id + 100, GenStamp: 1}}})
			return err
		}, codes.NotFound},
		{"another generation", func() error {
			_, err := c.ReportBadBlocks(x.root(), &api.ReportBadBlocksRequest{DatanodeId: "dn0", Blocks: []*api.Block{{Id: b.Id, GenStamp: b.GenStamp + 1}}})
			return err
		}, codes.NotFound},
		{"block report entry without a block", func() error {
			_, err := x.dp.BlockReport(dnCtx(t, "dn0"), &api.BlockReportRequest{DatanodeId: "dn0", Blocks: []*api.ReportedBlock{{}}})
			return err
		}, codes.InvalidArgument},
		{"incremental report about another datanode", func() error {
			_, err := x.dp.IncrementalBlockReport(dnCtx(t, "dn1"), &api.IncrementalBlockReportRequest{DatanodeId: "dn0", Deleted: []*api.Block{b}})
			return err
		}, codes.PermissionDenied},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := statusCode(tc.call()); got != tc.want {
				t.Fatalf("code = %v, want %v", got, tc.want)
			}
			if st := x.bm.Stats(); st.Suspect != 0 || st.Corrupt != 0 || st.Replicas != 2 {
				t.Fatalf("a refused call changed the block map: %+v", st)
			}
		})
	}
	if x.bm.Refused(blocks.RefusedBadBlock) < 3 || x.bm.Refused(blocks.RefusedReport) < 1 {
		t.Fatalf("refusals not counted: bad block %d, report %d", x.bm.Refused(blocks.RefusedBadBlock), x.bm.Refused(blocks.RefusedReport))
	}
}
