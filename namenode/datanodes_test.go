package namenode_test

import (
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/namenode"
)

func statusCode(err error) codes.Code { return status.Code(err) }

// TestDeadDatanodeBlocksQueuedForReplication: when a datanode stops
// heartbeating it turns dead, and its blocks appear in the replication queue.
func TestDeadDatanodeBlocksQueuedForReplication(t *testing.T) {
	x := startCluster(t, 3, func(i int, c *namenode.Config) {
		c.Blocks.HeartbeatInterval = 50 * time.Millisecond
		c.Blocks.DeadAfterMissed = 4
		c.WorkInterval = 20 * time.Millisecond
	})
	const dns = 4
	x.registerDatanodesOnly(dns)
	l := x.leader()
	c := x.client(l)
	var blockID atomic.Uint64
	dp := api.NewDatanodeProtocolClient(x.conns[l])
	// Every datanode but the victim heartbeats in the background, as real
	// ones do; the victim starts beating too and stops later.
	var victim atomic.Value
	victim.Store("")
	stop := make(chan struct{})
	done := make(chan struct{})
	replicate := make(chan *api.ReplicateBlockCommand, 1)
	go func() {
		defer close(done)
		for {
			for d := range dns {
				id := fmt.Sprintf("dn%d", d)
				if id == victim.Load().(string) {
					continue
				}
				hr, err := dp.Heartbeat(asDatanode(x.t.Context(), id), &api.HeartbeatRequest{DatanodeId: id, Capacity: 1 << 40})
				if err != nil {
					continue
				}
				for _, cmd := range hr.Commands {
					if r := cmd.GetReplicate(); r != nil && r.Block.Id == blockID.Load() {
						select {
						case replicate <- r:
						default:
						}
					}
				}
			}
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	defer func() { close(stop); <-done }()
	cr, err := c.Create(x.root(), &api.CreateRequest{Path: "/f", Replication: 3, BlockSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	ab, err := c.AddBlock(x.root(), &api.AddBlockRequest{Path: "/f", InodeId: cr.Status.InodeId})
	if err != nil {
		t.Fatal(err)
	}
	b := ab.Block.Block
	b.Length = 100
	blockID.Store(b.Id)
	holders := map[string]bool{}
	for _, d := range ab.Block.Locations {
		holders[d.Id] = true
	}
	x.converge()
	for id := range holders {
		_, err := dp.IncrementalBlockReport(asDatanode(x.t.Context(), id), &api.IncrementalBlockReportRequest{DatanodeId: id, Received: []*api.ReportedBlock{{Block: b, InodeId: cr.Status.InodeId}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	// Complete after the pipeline reported its replicas received (they are
	// verified: only a verified replica is a replication source), as a
	// real pipeline does (datanodes report as they store; the client
	// completes after the ack).
	if _, err := c.Complete(x.root(), &api.CompleteRequest{Path: "/f", InodeId: cr.Status.InodeId, Blocks: []*api.Block{b}}); err != nil {
		t.Fatal(err)
	}
	loc, err := c.GetBlockLocations(x.root(), &api.GetBlockLocationsRequest{Path: "/f"})
	if err != nil {
		t.Fatal(err)
	}
	if n := loc.ReplicaCounts[0]; n != 3 || len(loc.Datanodes) != 3 {
		t.Fatalf("%d live replicas, want 3", n)
	}
	var dead string
	for id := range holders {
		dead = id
		break
	}
	victim.Store(dead)
	bm := x.c.Namenode(l).Blocks()
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Contains(bm.UnderReplicated(), b.Id) && !hasReplicate(bm, b.Id) {
		if time.Now().After(deadline) {
			t.Fatalf("block %d never queued for replication after %s died; datanodes %+v", b.Id, dead, bm.Datanodes())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, d := range bm.Datanodes() {
		if d.ID == dead && d.State.String() != "dead" {
			t.Fatalf("%s is %v, want dead", dead, d.State)
		}
	}
	// The leader hands a replicate command to a surviving holder, with
	// targets that do not hold the block yet.
	select {
	case r := <-replicate:
		for _, tgt := range r.Targets {
			if holders[tgt.Id] {
				t.Fatalf("replication target %s already holds the block", tgt.Id)
			}
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no replicate command issued")
	}
}

func hasReplicate(bm interface{ NeededReplication(uint64) (int, int) }, id uint64) bool {
	live, want := bm.NeededReplication(id)
	return want > 0 && live < want
}
