package localcluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/blockfs/blockfs/datanode"
	"github.com/blockfs/blockfs/localcluster"
)

// TestFullReportInParts: datanodes that send their full block reports in
// parts of two replicas give a namenode restarted with an empty block map
// every replica back.
func TestFullReportInParts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, cl := startWith(t, ctx, localcluster.Config{
		Namenodes: 1, Datanodes: 3, Dir: t.TempDir(),
		Datanode: func(i int, dc *datanode.Config) { dc.ReportPartBlocks = 2 },
	})
	data := randBytes(7*blockSize + 3) // 8 blocks: four parts per datanode
	writeFile(t, cl, "/parts", data)
	waitReplicas(t, cl, "/parts", 3)
	if err := c.StopNamenode(0); err != nil {
		t.Fatal(err)
	}
	if err := c.RestartNamenode(ctx, 0); err != nil {
		t.Fatal(err)
	}
	waitReplicas(t, cl, "/parts", 3)
	readBack(t, cl, "/parts", data)
}
