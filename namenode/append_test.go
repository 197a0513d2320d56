package namenode_test

import (
	"context"
	"strconv"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/namenode"
)

// TestAppendNewBlock: Append reopens a closed file for its caller; a
// retried Append (same client and call id) gets the first answer, a new
// one is refused while the file is open; the appender's first AddBlock
// starts a new block after the short last one, offsets stay cumulative,
// and Complete takes the whole block list.
func TestAppendNewBlock(t *testing.T) {
	x := startCluster(t, 3, nil)
	x.registerDatanodes(3)
	l := x.leader()
	nn := x.client(l)
	const bs = 1 << 20
	call := func(user, client, id string) (*api.AppendResponse, error) {
		ctx := metadata.AppendToOutgoingContext(x.as(user), namenode.ClientIDKey, client, namenode.CallIDKey, id)
		return nn.Append(ctx, &api.AppendRequest{Path: "/d/f", NewBlock: true})
	}
	// Each call of a writer carries its client id and a fresh call id
	// (without a call id the namenode takes no client id).
	calls := 100
	as := func(user, client string) func() context.Context {
		return func() context.Context {
			calls++
			return metadata.AppendToOutgoingContext(x.as(user), namenode.ClientIDKey, client, namenode.CallIDKey, strconv.Itoa(calls))
		}
	}
	alice := as("alice", "ca")

	// Write /f as alice: one full block and a short one.
	if _, err := nn.Mkdirs(x.root(), &api.MkdirsRequest{Path: "/d", Mode: 0o777}); err != nil {
		t.Fatal(err)
	}
	cr, err := nn.Create(alice(), &api.CreateRequest{Path: "/d/f", BlockSize: bs, Replication: 1})
	if err != nil {
		t.Fatal(err)
	}
	ino := cr.Status.InodeId
	var blocks []*api.Block
	add := func(ctx *metadataCtx) *api.Block {
		t.Helper()
		var prev *api.Block
		if len(blocks) > 0 {
			prev = blocks[len(blocks)-1]
		}
		r, err := nn.AddBlock(ctx.ctx(), &api.AddBlockRequest{Path: "/d/f", InodeId: ino, Previous: prev})
		if err != nil {
			t.Fatal(err)
		}
		var want uint64
		for _, b := range blocks {
			want += b.Length
		}
		if r.Block.Offset != want {
			t.Fatalf("block %d at offset %d, want %d", len(blocks), r.Block.Offset, want)
		}
		b := r.Block.Block
		b.Length = ctx.n
		crc := uint32(len(blocks))
		b.Crc32C = &crc
		blocks = append(blocks, b)
		return b
	}
	complete := func(ctx *metadataCtx) {
		t.Helper()
		if _, err := nn.Complete(ctx.ctx(), &api.CompleteRequest{Path: "/d/f", InodeId: ino, Blocks: blocks}); err != nil {
			t.Fatal(err)
		}
	}
	add(&metadataCtx{alice, bs})
	add(&metadataCtx{alice, 100})
	complete(&metadataCtx{ctx: alice})

	// bob has no w on alice's 0644 file.
	_, err = call("bob", "cb", "1")
	wantCode(t, err, codes.PermissionDenied, "user=bob")

	first, err := call("alice", "ca2", "7")
	if err != nil {
		t.Fatal(err)
	}
	if st := first.Status; st.Length != bs+100 || !st.UnderConstruction || len(first.Blocks) != 2 || first.Blocks[1].Length != 100 {
		t.Fatalf("append answered %+v", first)
	}
	again, err := call("alice", "ca2", "7")
	if err != nil || again.Status.InodeId != ino {
		t.Fatalf("retried append: %+v, %v", again, err)
	}
	_, err = call("alice", "ca2", "8")
	wantCode(t, err, codes.FailedPrecondition, "already being written")

	// Only the appender (alice on client ca2) writes now.
	_, err = nn.AddBlock(alice(), &api.AddBlockRequest{Path: "/d/f", InodeId: ino, Previous: blocks[1]})
	wantCode(t, err, codes.PermissionDenied, "not the writer")
	ca2 := as("alice", "ca2")
	add(&metadataCtx{ca2, 50})
	// Complete with only the new block is refused: the list is the file's.
	_, err = nn.Complete(ca2(), &api.CompleteRequest{Path: "/d/f", InodeId: ino, Blocks: blocks[2:]})
	wantCode(t, err, codes.FailedPrecondition, "block list mismatch")
	complete(&metadataCtx{ctx: ca2})

	// A second append: another short block in the middle.
	if _, err := call("alice", "ca3", "1"); err != nil {
		t.Fatal(err)
	}
	ca3 := as("alice", "ca3")
	add(&metadataCtx{ca3, 7})
	complete(&metadataCtx{ctx: ca3})

	locs, err := nn.GetBlockLocations(x.as("alice"), &api.GetBlockLocationsRequest{Path: "/d/f"})
	if err != nil {
		t.Fatal(err)
	}
	if locs.FileLength != bs+157 || locs.UnderConstruction || len(locs.Lengths) != 4 {
		t.Fatalf("locations: length %d, uc %v, lengths %v", locs.FileLength, locs.UnderConstruction, locs.Lengths)
	}
	// A range starting in the third block lists it at its cumulative offset.
	mid, err := nn.GetBlockLocations(x.as("alice"), &api.GetBlockLocationsRequest{Path: "/d/f", Offset: bs + 120, Length: 1})
	if err != nil {
		t.Fatal(err)
	}
	if mid.FirstOffset != bs+100 || len(mid.BlockIds) != 1 || mid.BlockIds[0] != blocks[2].Id {
		t.Fatalf("range: first offset %d, blocks %v", mid.FirstOffset, mid.BlockIds)
	}
}

// metadataCtx is a caller's context and the length its next block gets.
type metadataCtx struct {
	ctx func() context.Context
	n   uint64
}

// TestAppendRefusals: the refusals of Append over gRPC.
func TestAppendRefusals(t *testing.T) {
	x := startCluster(t, 1, nil)
	nn := x.client(0)
	if _, err := nn.Mkdirs(x.root(), &api.MkdirsRequest{Path: "/d", Mode: 0o777}); err != nil {
		t.Fatal(err)
	}
	if _, err := nn.Create(x.as("alice"), &api.CreateRequest{Path: "/d/open"}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, path string
		code       codes.Code
		msg        string
	}{
		{"missing", "/d/none", codes.NotFound, "does not exist"},
		{"directory", "/d", codes.FailedPrecondition, "directory"},
		{"being written", "/d/open", codes.FailedPrecondition, "already being written"},
		{"relative", "d/open", codes.InvalidArgument, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := nn.Append(x.as("alice"), &api.AppendRequest{Path: c.path})
			wantCode(t, err, c.code, c.msg)
		})
	}
}
