package namenode

import (
	"testing"

	"github.com/blockfs/blockfs/blocks"
)

// TestDNInfoCache: a datanode's entry is shared while its snapshot stays
// the same, rebuilt when a new snapshot replaces it, and kept when the
// table grows for a higher number.
func TestDNInfoCache(t *testing.T) {
	var c dnInfoCache
	d1 := &blocks.Datanode{ID: "dn1", Addr: "a:1"}
	first := c.get(1, d1)
	if first.Id != "dn1" || c.get(1, d1) != first {
		t.Fatal("same snapshot: entry not shared")
	}
	d1b := &blocks.Datanode{ID: "dn1", Addr: "a:1", Used: 5}
	if next := c.get(1, d1b); next == first || next.Used != 5 {
		t.Fatalf("new snapshot: got %v, the old entry or a stale one", next)
	}
	d9 := &blocks.Datanode{ID: "dn9"}
	nine := c.get(9, d9)
	if c.get(9, d9) != nine || c.get(1, d1b).Used != 5 || c.get(1, d1b) != c.get(1, d1b) {
		t.Fatal("growing the table lost an entry")
	}
}
