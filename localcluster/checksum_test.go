package localcluster_test

import (
	"hash/crc32"
	"testing"
)

// TestChecksumSurvivesReplication: the file checksum is the CRC32C of the
// file's bytes; after a datanode holding its blocks dies and the blocks
// are re-replicated, every new replica stores the CRC the writer computed
// and the file checksum is unchanged.
func TestChecksumSurvivesReplication(t *testing.T) {
	c, cl := startCluster(t, false)
	data := randBytes(3*blockSize + 100)
	writeFile(t, cl, "/sum", data)
	want := crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli))
	sum, err := cl.FileChecksum(ctxT(t), "/sum")
	if err != nil || sum.CRC != want {
		t.Fatalf("checksum %+v, %v; want %08x", sum, err, want)
	}
	locs := waitReplicas(t, cl, "/sum", 3)
	victim := locs.Blocks[0].Locations[0].Id
	for i := range len(c.DatanodeAddrs()) {
		if c.DatanodeID(i) == victim {
			if err := c.StopDatanode(i); err != nil {
				t.Fatal(err)
			}
		}
	}
	locs = waitReplicas(t, cl, "/sum", 3, victim)
	// A location can go between the answer and the look (an excess copy
	// deleted meanwhile): every replica still held must carry the writer's
	// CRC, and each block must have two such replicas at least.
	for _, lb := range locs.Blocks {
		held := 0
		for _, l := range lb.Locations {
			for i := range len(c.DatanodeAddrs()) { // Datanodes() skips stopped ones
				d := c.Datanode(i)
				if d == nil || c.DatanodeID(i) != l.Id {
					continue
				}
				info, ok := d.Store().Stat(lb.Block.Id)
				if !ok {
					continue
				}
				held++
				if info.CRC != lb.Block.GetCrc32C() {
					t.Fatalf("block %d on %s: stored CRC %08x, namespace %08x", lb.Block.Id, l.Id, info.CRC, lb.Block.GetCrc32C())
				}
			}
		}
		if held < 2 {
			t.Fatalf("block %d: %d replicas held of %v", lb.Block.Id, held, lb.Locations)
		}
	}
	if again, err := cl.FileChecksum(ctxT(t), "/sum"); err != nil || again.CRC != want {
		t.Fatalf("after re-replication: %+v, %v", again, err)
	}
	readBack(t, cl, "/sum", data)
}
