package localcluster_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/blockfs/blockfs/client"
)

// TestCreateFirstBlock: a Writer whose Create allocated the first block
// (CreateOptions.FirstBlock) writes files of any size as one without it
// does, reads back every byte, and an empty one gives the block back at
// Close: the file is complete with no blocks.
func TestCreateFirstBlock(t *testing.T) {
	_, cl := startCluster(t, false)
	ctx := ctxT(t)
	tests := []struct {
		size, blocks int
	}{
		{0, 0},
		{100, 1},
		{blockSize, 1},
		{3*blockSize + 7, 4},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.size), func(t *testing.T) {
			p := fmt.Sprintf("/firstblock/f%d", tt.size)
			data := randBytes(tt.size)
			w, err := cl.Create(ctx, p, client.CreateOptions{Replication: 3, BlockSize: blockSize, FirstBlock: true})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write(data); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			locs, err := cl.GetBlockLocations(ctx, p, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(locs.Blocks) != tt.blocks {
				t.Fatalf("%d blocks, want %d", len(locs.Blocks), tt.blocks)
			}
			for _, lb := range locs.Blocks {
				if len(lb.Locations) == 0 {
					t.Fatalf("block %d closed with no reported replica", lb.Block.Id)
				}
			}
			got, err := cl.ReadFile(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, data) {
				t.Fatalf("read %d bytes that differ from the %d written", len(got), len(data))
			}
		})
	}
}
