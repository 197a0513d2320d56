package namenode_test

import (
	"testing"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/security"
)

// TestCreateTokenReads: the first block's token of an owner's Create
// reads that block too when the owner may read the file, and writes only
// when not (mode 0200); an AddBlock's token writes only. Complete with
// want_locations answers what GetBlockLocations would, read token
// included, and nothing when the caller may not read the file.
func TestCreateTokenReads(t *testing.T) {
	x := startCluster(t, 1, nil)
	x.registerDatanodes(3)
	c := x.client(0)
	if _, err := c.Mkdirs(x.root(), &api.MkdirsRequest{Path: "/w", Parents: true, Mode: 0o777}); err != nil {
		t.Fatal(err)
	}
	v := x.verifier(0)
	for _, tc := range []struct {
		name  string
		mode  uint32
		reads bool
	}{
		{"readable", 0o644, true},
		{"write only", 0o200, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := "/w/" + tc.name
			cr, err := c.Create(x.as("alice"), &api.CreateRequest{Path: p, Mode: tc.mode, Replication: 3, BlockSize: 1024, FirstBlock: true})
			if err != nil {
				t.Fatal(err)
			}
			if cr.Block == nil {
				t.Fatal("Create allocated no first block")
			}
			ino, b := cr.Status.InodeId, cr.Block.Block
			want := security.Request{Inode: ino, BlockID: b.Id, GenStamp: b.GenStamp, Access: security.Write}
			if _, err := v.Verify(cr.Token, want); err != nil {
				t.Fatalf("Create's token does not write its block: %v", err)
			}
			want.Access = security.Read
			if _, err := v.Verify(cr.Token, want); (err == nil) != tc.reads {
				t.Fatalf("Create's token reading its block: %v, want reads %v", err, tc.reads)
			}
			b.Length = 1024
			ab, err := c.AddBlock(x.as("alice"), &api.AddBlockRequest{Path: p, InodeId: ino, Previous: b})
			if err != nil {
				t.Fatal(err)
			}
			want = security.Request{Inode: ino, BlockID: ab.Block.Block.Id, GenStamp: ab.Block.Block.GenStamp, Access: security.Read}
			if _, err := v.Verify(ab.Token, want); !errs.Is(err, errs.Permission) {
				t.Fatalf("AddBlock's token reading its block: %v, want Permission", err)
			}
			last := ab.Block.Block
			last.Length = 1024
			resp, err := c.Complete(x.as("alice"), &api.CompleteRequest{Path: p, InodeId: ino, Blocks: []*api.Block{b, last}, WantLocations: true})
			if err != nil {
				t.Fatal(err)
			}
			loc := resp.GetLocated()
			if !tc.reads {
				if loc != nil {
					t.Fatal("Complete gave read locations to a caller that may not read the file")
				}
				return
			}
			if loc == nil || loc.InodeId != ino || loc.FileLength != 2048 || len(loc.BlockIds) != 2 {
				t.Fatalf("Complete's locations: %v", loc)
			}
			if _, err := v.Verify(loc.Token, security.Request{Inode: ino, BlockID: last.Id, Access: security.Read}); err != nil {
				t.Fatalf("Complete's read token: %v", err)
			}
		})
	}
}
