package namenode_test

import (
	"slices"
	"testing"

	"github.com/blockfs/blockfs/api"
)

// Issue 21, finding 2: a datanode that only reported a replica of a file's
// last block ("dn0rogue", first in sorted order) was counted among the
// pipeline's targets and became the recovery primary. The primary must
// come from the pipeline AddBlock recorded, and the rogue gets no recovery
// command; the file keeps its hflushed length.
func TestRogueReporterIsNotRecoveryPrimary(t *testing.T) {
	x := startBMCluster(t)
	for _, id := range []string{"dn1", "dn2", "dn3"} {
		x.addDatanode(id, 1<<40)
	}
	x.settle(2)
	c := x.client(0)
	cr, err := c.Create(x.root(), &api.CreateRequest{Path: "/open", Replication: 3, BlockSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	ino := cr.Status.InodeId
	ab, err := c.AddBlock(x.root(), &api.AddBlockRequest{Path: "/open", InodeId: ino})
	if err != nil {
		t.Fatal(err)
	}
	var pipeline []string
	for _, d := range ab.Block.Locations {
		pipeline = append(pipeline, d.Id)
	}
	b := ab.Block.Block
	b.Length = 23
	if _, err := c.Fsync(x.root(), &api.FsyncRequest{Path: "/open", InodeId: ino, Block: b}); err != nil {
		t.Fatal(err)
	}
	// The rogue arrives after the pipeline was chosen and claims the block.
	x.addDatanode("dn0rogue", 1<<40)
	claim := &api.Block{Id: b.Id, GenStamp: b.GenStamp, Length: 0}
	if _, err := x.dp.IncrementalBlockReport(dnCtx(t, "dn0rogue"), &api.IncrementalBlockReportRequest{
		DatanodeId: "dn0rogue", Received: []*api.ReportedBlock{{Block: claim, InodeId: ino}},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RecoverLease(x.root(), &api.RecoverLeaseRequest{Path: "/open"}); err != nil {
		t.Fatal(err)
	}
	var primary string
	x.waitFor("a recovery command", func() bool {
		x.mu.Lock()
		defer x.mu.Unlock()
		for id, cs := range x.cmds {
			for _, cmd := range cs {
				if cmd.GetRecover() != nil {
					primary = id
					return true
				}
			}
		}
		return false
	})
	if !slices.Contains(pipeline, primary) {
		t.Fatalf("recovery primary %s is not in the pipeline %v", primary, pipeline)
	}
	x.mu.Lock()
	for _, cmd := range x.cmds[primary] {
		if r := cmd.GetRecover(); r != nil {
			for _, d := range r.GetReplicas() {
				if d.GetId() == "dn0rogue" {
					t.Errorf("the rogue is a recovery target: %v", r)
				}
			}
		}
	}
	x.mu.Unlock()
	fi, err := c.GetFileInfo(x.root(), &api.GetFileInfoRequest{Path: "/open"})
	if err != nil {
		t.Fatal(err)
	}
	if fi.Status.GetLength() != 23 {
		t.Fatalf("length %d, want the 23 hflushed bytes", fi.Status.GetLength())
	}
}
