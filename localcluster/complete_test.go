package localcluster_test

import (
	"testing"

	"github.com/blockfs/blockfs/client"
)

// TestCompleteWaitsForReports: as HDFS's completeFile waits for the
// minimum replication, a file is closed only once a datanode has reported
// each of its blocks, so a reader right after the writer finds a replica
// of every block without waiting.
func TestCompleteWaitsForReports(t *testing.T) {
	_, cl := startCluster(t, false)
	ctx := ctxT(t)
	for i := range 5 {
		p := "/complete/f" + string(rune('0'+i))
		if err := cl.WriteFile(ctx, p, randBytes(3*blockSize+7), client.CreateOptions{Replication: 3, BlockSize: blockSize}); err != nil {
			t.Fatal(err)
		}
		locs, err := cl.GetBlockLocations(ctx, p, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, lb := range locs.Blocks {
			if len(lb.Locations) == 0 {
				t.Fatalf("%s: block %d closed with no reported replica", p, lb.Block.Id)
			}
		}
	}
}
