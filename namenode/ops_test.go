package namenode_test

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/client"
)

// TestNamespaceOpsOverGRPC runs every namespace operation, and every error
// the issue names, through gRPC against a 3-node cluster. Each step goes to
// the leader or to a follower (which forwards writes). After a failing step
// the namespace hash must be unchanged.
func TestNamespaceOpsOverGRPC(t *testing.T) {
	x := startCluster(t, 3, nil)
	x.registerDatanodes(3)
	var inode uint64
	var blocks []*api.Block

	type step struct {
		name string
		call func(c api.ClientServiceClient) error
		code codes.Code
		msg  string
	}
	steps := []step{
		{"mkdirs -p", func(c api.ClientServiceClient) error {
			_, err := c.Mkdirs(x.root(), &api.MkdirsRequest{Path: "/a/b/c", Parents: true})
			return err
		}, codes.OK, ""},
		{"mkdirs -p existing", func(c api.ClientServiceClient) error {
			_, err := c.Mkdirs(x.root(), &api.MkdirsRequest{Path: "/a/b", Parents: true})
			return err
		}, codes.OK, ""},
		{"mkdirs missing parent", func(c api.ClientServiceClient) error {
			_, err := c.Mkdirs(x.root(), &api.MkdirsRequest{Path: "/x/y"})
			return err
		}, codes.NotFound, "/x"},
		{"mkdirs bad path", func(c api.ClientServiceClient) error {
			_, err := c.Mkdirs(x.root(), &api.MkdirsRequest{Path: "/a/../b"})
			return err
		}, codes.InvalidArgument, "Mkdirs /a/../b: path component \"..\" not allowed"},
		{"mkdirs relative path", func(c api.ClientServiceClient) error {
			_, err := c.Mkdirs(x.root(), &api.MkdirsRequest{Path: "a/b"})
			return err
		}, codes.InvalidArgument, "absolute"},
		{"mkdirs bad mode", func(c api.ClientServiceClient) error {
			_, err := c.Mkdirs(x.root(), &api.MkdirsRequest{Path: "/m", Mode: 0o70000})
			return err
		}, codes.InvalidArgument, "mode"},
		{"permission denied", func(c api.ClientServiceClient) error {
			_, err := c.Mkdirs(x.as("alice"), &api.MkdirsRequest{Path: "/alice"})
			return err
		}, codes.PermissionDenied, "alice"},
		{"create", func(c api.ClientServiceClient) error {
			r, err := c.Create(x.root(), &api.CreateRequest{Path: "/a/f", Replication: 3, BlockSize: 1024})
			if err == nil {
				inode = r.Status.InodeId
			}
			return err
		}, codes.OK, ""},
		{"create exists", func(c api.ClientServiceClient) error {
			_, err := c.Create(x.root(), &api.CreateRequest{Path: "/a/f"})
			return err
		}, codes.AlreadyExists, "/a/f"},
		{"create over dir", func(c api.ClientServiceClient) error {
			_, err := c.Create(x.root(), &api.CreateRequest{Path: "/a/b", Overwrite: true})
			return err
		}, codes.FailedPrecondition, ""},
		{"add block", func(c api.ClientServiceClient) error {
			r, err := c.AddBlock(x.root(), &api.AddBlockRequest{Path: "/a/f", InodeId: inode})
			if err == nil {
				if len(r.Block.Locations) != 3 {
					t.Errorf("pipeline has %d nodes, want 3", len(r.Block.Locations))
				}
				r.Block.Block.Length = 1024
				blocks = append(blocks, r.Block.Block)
			}
			return err
		}, codes.OK, ""},
		{"add second block", func(c api.ClientServiceClient) error {
			r, err := c.AddBlock(x.root(), &api.AddBlockRequest{Path: "/a/f", InodeId: inode, Previous: blocks[0]})
			if err == nil {
				if r.Block.Offset != 1024 {
					t.Errorf("second block at offset %d, want 1024", r.Block.Offset)
				}
				r.Block.Block.Length = 10
				blocks = append(blocks, r.Block.Block)
			}
			return err
		}, codes.OK, ""},
		{"add block retried after a lost reply", func(c api.ClientServiceClient) error {
			r, err := c.AddBlock(x.root(), &api.AddBlockRequest{Path: "/a/f", InodeId: inode, Previous: blocks[0]})
			if err == nil && (r.Block.Block.Id != blocks[1].Id || r.Block.Offset != 1024) {
				t.Errorf("retried AddBlock allocated block %d at %d, want %d again", r.Block.Block.Id, r.Block.Offset, blocks[1].Id)
			}
			return err
		}, codes.OK, ""},
		{"add block without inode", func(c api.ClientServiceClient) error {
			_, err := c.AddBlock(x.root(), &api.AddBlockRequest{Path: "/a/f"})
			return err
		}, codes.InvalidArgument, "inode"},
		{"abandon wrong block", func(c api.ClientServiceClient) error {
			_, err := c.AbandonBlock(x.root(), &api.AbandonBlockRequest{Path: "/a/f", InodeId: inode, Block: blocks[0]})
			return err
		}, codes.FailedPrecondition, ""},
		{"complete with wrong blocks", func(c api.ClientServiceClient) error {
			_, err := c.Complete(x.root(), &api.CompleteRequest{Path: "/a/f", InodeId: inode, Blocks: blocks[:1]})
			return err
		}, codes.FailedPrecondition, "block"},
		{"complete", func(c api.ClientServiceClient) error {
			_, err := c.Complete(x.root(), &api.CompleteRequest{Path: "/a/f", InodeId: inode, Blocks: blocks})
			return err
		}, codes.OK, ""},
		{"get file info", func(c api.ClientServiceClient) error {
			r, err := c.GetFileInfo(x.root(), &api.GetFileInfoRequest{Path: "/a/f"})
			if err == nil && (r.Status.Length != 1034 || r.Status.UnderConstruction || r.Status.Blocks != 2) {
				t.Errorf("file info %+v", r.Status)
			}
			return err
		}, codes.OK, ""},
		{"get block locations", func(c api.ClientServiceClient) error {
			r, err := c.GetBlockLocations(x.root(), &api.GetBlockLocationsRequest{Path: "/a/f"})
			if err == nil {
				err = client.ExpandLocations(r)
			}
			if err == nil && (len(r.Blocks) != 2 || r.FileLength != 1034 || r.Blocks[1].Offset != 1024) {
				t.Errorf("locations %+v", r)
			}
			return err
		}, codes.OK, ""},
		{"get block locations range", func(c api.ClientServiceClient) error {
			r, err := c.GetBlockLocations(x.root(), &api.GetBlockLocationsRequest{Path: "/a/f", Offset: 1030, Length: 2})
			if err == nil {
				err = client.ExpandLocations(r)
			}
			if err == nil && (len(r.Blocks) != 1 || r.Blocks[0].Block.Id != blocks[1].Id) {
				t.Errorf("range locations %+v", r)
			}
			return err
		}, codes.OK, ""},
		{"get block locations past end", func(c api.ClientServiceClient) error {
			_, err := c.GetBlockLocations(x.root(), &api.GetBlockLocationsRequest{Path: "/a/f", Offset: 5000})
			return err
		}, codes.InvalidArgument, "past the end"},
		// One validation, one op: the error names the RPC method alone.
		{"get block locations missing", func(c api.ClientServiceClient) error {
			_, err := c.GetBlockLocations(x.root(), &api.GetBlockLocationsRequest{Path: "/nope"})
			return err
		}, codes.NotFound, "GetBlockLocations /nope: no such file or directory"},
		{"get block locations bad path", func(c api.ClientServiceClient) error {
			_, err := c.GetBlockLocations(x.root(), &api.GetBlockLocationsRequest{Path: "/a//f"})
			return err
		}, codes.InvalidArgument, "GetBlockLocations /a//f: empty path component"},
		{"get file info missing", func(c api.ClientServiceClient) error {
			_, err := c.GetFileInfo(x.root(), &api.GetFileInfoRequest{Path: "/nope"})
			return err
		}, codes.NotFound, "/nope"},
		{"list", func(c api.ClientServiceClient) error {
			r, err := c.ListStatus(x.root(), &api.ListStatusRequest{Path: "/a", Limit: 1})
			if err == nil && (len(r.Entries) != 1 || !r.HasMore || r.Entries[0].Path != "/a/b") {
				t.Errorf("list page 1 %+v", r)
			}
			r2, err2 := c.ListStatus(x.root(), &api.ListStatusRequest{Path: "/a", StartAfter: "b", Limit: 1})
			if err2 == nil && (len(r2.Entries) != 1 || r2.HasMore || r2.Entries[0].Path != "/a/f") {
				t.Errorf("list page 2 %+v", r2)
			}
			if err == nil {
				err = err2
			}
			return err
		}, codes.OK, ""},
		{"delete non-empty dir", func(c api.ClientServiceClient) error {
			_, err := c.Delete(x.root(), &api.DeleteRequest{Path: "/a/b"})
			return err
		}, codes.FailedPrecondition, "recursive"},
		{"rename into own subtree", func(c api.ClientServiceClient) error {
			_, err := c.Rename(x.root(), &api.RenameRequest{Src: "/a", Dst: "/a/b/c/d"})
			return err
		}, codes.InvalidArgument, "subtree"},
		{"rename missing source", func(c api.ClientServiceClient) error {
			_, err := c.Rename(x.root(), &api.RenameRequest{Src: "/nope", Dst: "/x"})
			return err
		}, codes.NotFound, "/nope"},
		{"rename file", func(c api.ClientServiceClient) error {
			_, err := c.Rename(x.root(), &api.RenameRequest{Src: "/a/f", Dst: "/a/g"})
			return err
		}, codes.OK, ""},
		{"rename into dir", func(c api.ClientServiceClient) error {
			_, err := c.Rename(x.root(), &api.RenameRequest{Src: "/a/g", Dst: "/a/b"})
			return err
		}, codes.OK, ""},
		{"renamed file keeps inode", func(c api.ClientServiceClient) error {
			r, err := c.GetFileInfo(x.root(), &api.GetFileInfoRequest{Path: "/a/b/g"})
			if err == nil && r.Status.InodeId != inode {
				t.Errorf("inode %d after rename, want %d", r.Status.InodeId, inode)
			}
			return err
		}, codes.OK, ""},
		{"oversized request", func(c api.ClientServiceClient) error {
			_, err := c.Mkdirs(x.root(), &api.MkdirsRequest{Path: "/" + strings.Repeat("x", 5<<20)})
			return err
		}, codes.ResourceExhausted, ""},
		{"delete recursive", func(c api.ClientServiceClient) error {
			_, err := c.Delete(x.root(), &api.DeleteRequest{Path: "/a", Recursive: true})
			return err
		}, codes.OK, ""},
		{"deleted is gone", func(c api.ClientServiceClient) error {
			_, err := c.GetFileInfo(x.root(), &api.GetFileInfoRequest{Path: "/a/b/g"})
			return err
		}, codes.NotFound, ""},
		{"delete root", func(c api.ClientServiceClient) error {
			_, err := c.Delete(x.root(), &api.DeleteRequest{Path: "/", Recursive: true})
			return err
		}, codes.InvalidArgument, ""},
	}
	for i, s := range steps {
		// Alternate between leader and a follower; followers forward.
		node := x.leader()
		if i%2 == 1 {
			node = x.follower()
		}
		t.Run(s.name, func(t *testing.T) {
			before := x.c.Namenode(x.leader()).NamespaceHash()
			err := s.call(x.client(node))
			wantCode(t, err, s.code, s.msg)
			if s.code != codes.OK {
				x.converge()
				if after := x.c.Namenode(x.leader()).NamespaceHash(); after != before {
					t.Fatalf("failed %s changed the namespace", s.name)
				}
			}
		})
	}
	x.converge()
}
