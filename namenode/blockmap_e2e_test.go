package namenode_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/datanode"
	"github.com/blockfs/blockfs/localcluster"
	"github.com/blockfs/blockfs/namenode"
)

// TestClientBadBlockReportVerifiedByRealDatanode: with real datanodes, a
// user's bad-block report against a healthy replica makes the leader ask
// that datanode to re-verify it; the datanode re-reads it, answers
// verified, and the replica stays.
func TestClientBadBlockReportVerifiedByRealDatanode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Config{Namenodes: 1, Datanodes: 3, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	data := make([]byte, 3000)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if err := cl.WriteFile(ctx, "/f", data, client.CreateOptions{Replication: 3, BlockSize: 4096, Perm: 0o644}); err != nil {
		t.Fatal(err)
	}
	bm := c.Namenode(0).Blocks()
	var locs *api.GetBlockLocationsResponse
	for {
		if locs, err = cl.GetBlockLocations(ctx, "/f", 0, 0); err == nil && len(locs.Blocks) == 1 && len(locs.Blocks[0].Locations) == 3 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("three replicas never reported: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	b, victim := locs.Blocks[0].Block, locs.Blocks[0].Locations[0].Id

	conn, err := grpc.NewClient(c.NamenodeAddrs()[0], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	mallory := withUser(t.Context(), "mallory")
	if _, err := api.NewClientServiceClient(conn).ReportBadBlocks(mallory, &api.ReportBadBlocksRequest{DatanodeId: victim, Blocks: []*api.Block{b}}); err != nil {
		t.Fatal(err)
	}
	// The report left the replica suspect; only the datanode's verified
	// answer clears that.
	for st := bm.Stats(); st.Suspect != 0 || st.Verifying != 0 || !bm.IsVerified(b.Id, victim); st = bm.Stats() {
		if ctx.Err() != nil {
			t.Fatalf("the datanode never verified its replica: %+v", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, still := datanodeByID(c, victim).Store().Stat(b.Id); !still {
		t.Fatal("the healthy replica was deleted")
	}
	if live, _ := bm.NeededReplication(b.Id); live != 3 {
		t.Fatalf("%d good replicas, want 3", live)
	}
}

func withUser(ctx context.Context, user string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, namenode.UserKey, user)
}

func datanodeByID(c *localcluster.Cluster, id string) *datanode.Datanode {
	for _, d := range c.Datanodes() {
		if d != nil && d.ID() == id {
			return d
		}
	}
	return nil
}
