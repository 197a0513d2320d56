package namenode_test

import (
	"fmt"
	"slices"
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
		c.Blocks.HeartbeatInterval = 20 * time.Millisecond
		c.Blocks.DeadAfterMissed = 3
		c.WorkInterval = 20 * time.Millisecond
	})
	const dns = 4
	x.registerDatanodes(dns)
	l := x.leader()
	c := x.client(l)
	cr, err := c.Create(x.root(), &api.CreateRequest{Path: "/f", Replication: 3, BlockSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	ab, err := c.AddBlock(x.root(), &api.AddBlockRequest{Path: "/f", InodeId: cr.Status.InodeId})
	if err != nil {
		t.Fatal(err)
	}
	b := ab.Block.Block
	b.Length = 100
	if _, err := c.Complete(x.root(), &api.CompleteRequest{Path: "/f", InodeId: cr.Status.InodeId, Blocks: []*api.Block{b}}); err != nil {
		t.Fatal(err)
	}
	holders := map[string]bool{}
	for _, d := range ab.Block.Locations {
		holders[d.Id] = true
	}
	x.converge()
	dp := api.NewDatanodeProtocolClient(x.conns[l])
	// Every datanode heartbeats and reports; the holders report the block.
	beat := func(skip string) {
		for d := range dns {
			id := fmt.Sprintf("dn%d", d)
			if id == skip {
				continue
			}
			if _, err := dp.Heartbeat(x.root(), &api.HeartbeatRequest{DatanodeId: id, Capacity: 1 << 40}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for id := range holders {
		_, err := dp.BlockReport(x.root(), &api.BlockReportRequest{DatanodeId: id, Blocks: []*api.ReportedBlock{{Block: b, InodeId: cr.Status.InodeId}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	beat("")
	loc, err := c.GetBlockLocations(x.root(), &api.GetBlockLocationsRequest{Path: "/f"})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(loc.Blocks[0].Locations); n != 3 {
		t.Fatalf("%d live replicas, want 3", n)
	}
	var victim string
	for id := range holders {
		victim = id
		break
	}
	bm := x.c.Namenode(l).Blocks()
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Contains(bm.UnderReplicated(), b.Id) && !hasReplicate(bm, b.Id) {
		if time.Now().After(deadline) {
			t.Fatalf("block %d never queued for replication after %s died; datanodes %+v", b.Id, victim, bm.Datanodes())
		}
		beat(victim)
		time.Sleep(20 * time.Millisecond)
	}
	for _, d := range bm.Datanodes() {
		if d.ID == victim && d.State.String() != "dead" {
			t.Fatalf("%s is %v, want dead", victim, d.State)
		}
	}
	// The leader hands out a replicate command to a surviving holder.
	deadline = time.Now().Add(10 * time.Second)
	for {
		got := false
		for id := range holders {
			if id == victim {
				continue
			}
			hr, err := dp.Heartbeat(x.root(), &api.HeartbeatRequest{DatanodeId: id, Capacity: 1 << 40})
			if err != nil {
				t.Fatal(err)
			}
			for _, cmd := range hr.Commands {
				if r := cmd.GetReplicate(); r != nil && r.Block.Id == b.Id {
					for _, tgt := range r.Targets {
						if holders[tgt.Id] {
							t.Fatalf("replication target %s already holds the block", tgt.Id)
						}
					}
					got = true
				}
			}
		}
		if got {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no replicate command issued")
		}
		beat(victim)
		time.Sleep(20 * time.Millisecond)
	}
}

func hasReplicate(bm interface{ NeededReplication(uint64) (int, int) }, id uint64) bool {
	live, want := bm.NeededReplication(id)
	return want > 0 && live < want
}
