package localcluster_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/localcluster"
)

// TestRackLossLosesNoBlock (issue 22): on a cluster of two racks of three
// datanodes every block's replicas span both (placed at random, one block
// in ten would sit in one rack), so stopping a whole rack at once loses no
// block: every file reads back, and the cluster returns to full
// replication on the rack left.
func TestRackLossLosesNoBlock(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, cl := startWith(t, ctx, localcluster.Config{Namenodes: 1, Datanodes: 6, Racks: 2, Dir: t.TempDir()})
	const files, bs = 8, 1 << 20
	want := map[string][]byte{}
	for i := range files {
		p := fmt.Sprintf("/f%d", i)
		want[p] = bytes.Repeat([]byte{byte(i)}, bs+bs/2)
		if err := cl.WriteFile(ctx, p, want[p], client.CreateOptions{BlockSize: bs, Replication: 3}); err != nil {
			t.Fatal(err)
		}
	}
	// spread waits until every block has three live replicas in at least
	// minRacks racks, none in rack gone; it fails at the deadline with the
	// last block that did not.
	spread := func(gone string, minRacks int) {
		t.Helper()
		for {
			short := ""
			for p := range want {
				locs, err := cl.GetBlockLocations(ctx, p, 0, 0)
				if err != nil {
					t.Fatal(err)
				}
				for _, b := range locs.Blocks {
					racks := map[string]bool{}
					for _, d := range b.Locations {
						racks[d.Rack] = true
					}
					if len(b.Locations) != 3 || len(racks) < minRacks || racks[gone] {
						short = fmt.Sprintf("%s block %d: %d replicas in racks %v", p, b.Block.Id, len(b.Locations), racks)
					}
				}
			}
			if short == "" {
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("never fully replicated across racks: %s", short)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	spread("", 2)
	gone := c.RackOf(0)
	for i := range c.Datanodes() {
		if c.RackOf(i) == gone {
			if err := c.StopDatanode(i); err != nil {
				t.Fatal(err)
			}
		}
	}
	for p, data := range want {
		got, err := cl.ReadFile(ctx, p)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s after losing %s: %d bytes, %v", p, gone, len(got), err)
		}
	}
	spread(gone, 1)
}
