package localcluster_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCorruptContainerSetAside: a datanode whose container metadata has a
// flipped byte still starts (HDFS's failed-volume behaviour, one container
// wide), renames that container aside without deleting it, serves its other
// blocks, and the namenode re-replicates the block it lost.
func TestCorruptContainerSetAside(t *testing.T) {
	c, cl := startCluster(t, false)
	data := randBytes(blockSize)
	writeFile(t, cl, "/victim", data)
	locs := waitReplicas(t, cl, "/victim", 3)
	lb := locs.Blocks[0]
	victim := -1
	for i := range c.Datanodes() {
		if c.DatanodeID(i) == lb.Locations[0].Id {
			victim = i
		}
	}
	info, ok := c.Datanode(victim).Store().Stat(lb.Block.Id)
	if !ok {
		t.Fatal("the victim does not hold the block")
	}
	if err := c.StopDatanode(victim); err != nil {
		t.Fatal(err)
	}
	meta := info.Container + ".metadata"
	raw, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	// A byte inside the first record's body (after the 16-byte file header
	// and the 8-byte frame head): a CRC mismatch, not a torn tail.
	raw[16+8+12] ^= 0xff
	if err := os.WriteFile(meta, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.RestartDatanode(ctxT(t), victim); err != nil {
		t.Fatalf("a datanode with one corrupt container must still start: %v", err)
	}
	aside := c.Datanode(victim).Store().SetAside()
	if len(aside) == 0 {
		t.Fatal("nothing set aside")
	}
	for _, p := range aside {
		if !strings.HasPrefix(p, info.Container+".") {
			t.Fatalf("set aside %v, want only the corrupt container's files", aside)
		}
	}
	if m, _ := filepath.Glob(meta + ".corrupt-*"); len(m) != 1 {
		t.Fatalf("renamed metadata files %v, want one", m)
	}
	if _, err := os.Stat(meta); !os.IsNotExist(err) {
		t.Fatalf("the corrupt metadata file is still in place: %v", err)
	}
	// The namenode learns from the full report that the replica is gone
	// and brings the block back to 3 replicas (the victim itself may be
	// chosen to receive a fresh copy, in a new container).
	waitBlockReplicas(t, cl, "/victim", 3, lb.Block.Id)
	if again, ok := c.Datanode(victim).Store().Stat(lb.Block.Id); ok && again.Container == info.Container {
		t.Fatal("the victim serves the block from the set-aside container")
	}
	readBack(t, cl, "/victim", data)
}
