package namenode_test

import (
	"fmt"
	"math"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/namenode"
)

// TestCreateBlockSizeLimits: Create refuses a block size outside
// [--min-block-size, --max-block-size] or not a multiple of
// --bytes-per-checksum with InvalidArgument naming the path and the value,
// and creates nothing.
func TestCreateBlockSizeLimits(t *testing.T) {
	x := startCluster(t, 1, func(_ int, c *namenode.Config) {
		c.Namespace.BytesPerChecksum = 512
		c.Namespace.MinBlockSize = 1024
		c.Namespace.MaxBlockSize = 1 << 20
		c.Namespace.DefaultBlockSize = 64 << 10
	})
	x.leader()
	cases := []struct {
		name string
		bs   uint64
		code codes.Code
		msg  string
	}{
		{"default", 0, codes.OK, ""},
		{"minimum", 1024, codes.OK, ""},
		{"maximum", 1 << 20, codes.OK, ""},
		{"2^64-1", math.MaxUint64, codes.InvalidArgument, "block size 18446744073709551615 is above the maximum 1048576"},
		{"1 TiB", 1 << 40, codes.InvalidArgument, "block size 1099511627776 is above the maximum"},
		{"below minimum", 512, codes.InvalidArgument, "block size 512 is below the minimum 1024"},
		{"one", 1, codes.InvalidArgument, "below the minimum"},
		{"not a multiple of the checksum chunk", 1500, codes.OK, ""},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := fmt.Sprintf("/f%d", i)
			_, err := x.client(0).Create(x.root(), &api.CreateRequest{Path: p, BlockSize: c.bs})
			wantCode(t, err, c.code, c.msg)
			_, serr := x.client(0).GetFileInfo(x.root(), &api.GetFileInfoRequest{Path: p})
			if c.code != codes.OK {
				wantCode(t, err, c.code, p)
				wantCode(t, serr, codes.NotFound, "")
			} else if serr != nil {
				t.Fatal(serr)
			}
		})
	}
}

// TestAddBlockCarriesBytesPerChecksum: writers learn the cluster's chunk
// size from AddBlock.
func TestAddBlockCarriesBytesPerChecksum(t *testing.T) {
	x := startCluster(t, 1, func(_ int, c *namenode.Config) { c.Namespace.BytesPerChecksum = 4096 })
	x.registerDatanodes(1)
	c := x.client(0)
	cr, err := c.Create(x.root(), &api.CreateRequest{Path: "/f", Replication: 1, BlockSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	ab, err := c.AddBlock(x.root(), &api.AddBlockRequest{Path: "/f", InodeId: cr.Status.InodeId})
	if err != nil {
		t.Fatal(err)
	}
	if ab.BytesPerChecksum != 4096 {
		t.Fatalf("bytes per checksum %d, want 4096", ab.BytesPerChecksum)
	}
}

// TestAddBlockLargerThanEveryDatanode: a block no live datanode could ever
// hold fails at once with FailedPrecondition (the client does not retry
// it), not Unavailable, and allocates nothing; a block that only lacks
// free space now stays Unavailable.
func TestAddBlockLargerThanEveryDatanode(t *testing.T) {
	x := startBMCluster(t)
	x.addDatanode("dn0", 4<<20) // heartbeats report half of it used
	x.addDatanode("dn1", 4<<20)
	c := x.client(0)
	cases := []struct {
		name string
		bs   uint64
		code codes.Code
		msg  string
	}{
		{"larger than any capacity", 8 << 20, codes.FailedPrecondition, "block size 8388608 is larger than the capacity of every live datanode (2 live, the largest holds 4194304 bytes)"},
		{"larger than free space only", 3 << 20, codes.Unavailable, "no live datanodes with space"},
		{"fits", 1 << 20, codes.OK, ""},
	}
	x.settle(2) // the heartbeats' usage is in
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := fmt.Sprintf("/big%d", i)
			cr, err := c.Create(x.root(), &api.CreateRequest{Path: p, Replication: 2, BlockSize: tc.bs})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.AddBlock(x.root(), &api.AddBlockRequest{Path: p, InodeId: cr.Status.InodeId})
			wantCode(t, err, tc.code, tc.msg)
			if tc.code != codes.OK {
				wantCode(t, err, tc.code, "") // and the path:
				if tc.code == codes.FailedPrecondition {
					wantCode(t, err, tc.code, p)
				}
				st, serr := c.GetFileInfo(x.root(), &api.GetFileInfoRequest{Path: p})
				if serr != nil || st.Status.Blocks != 0 {
					t.Fatalf("after a refused AddBlock: %v, %v", st, serr)
				}
			}
		})
	}
}

// sixBlockFile writes /six, six complete blocks of 1024 bytes, each with
// CRC i+1 (block 0: CRC 0, a real value), through AddBlock and Complete.
func sixBlockFile(t *testing.T, x *tc) ([]*api.Block, uint64) {
	t.Helper()
	c := x.client(x.leader())
	cr, err := c.Create(x.root(), &api.CreateRequest{Path: "/six", Replication: 1, BlockSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	var bs []*api.Block
	for i := range 6 {
		req := &api.AddBlockRequest{Path: "/six", InodeId: cr.Status.InodeId}
		if i > 0 {
			req.Previous = bs[i-1]
		}
		ab, err := c.AddBlock(x.root(), req)
		if err != nil {
			t.Fatal(err)
		}
		b := ab.Block.Block
		b.Length, b.Crc32C = 1024, proto.Uint32(uint32(i))
		bs = append(bs, b)
	}
	if _, err := c.Complete(x.root(), &api.CompleteRequest{Path: "/six", InodeId: cr.Status.InodeId, Blocks: bs}); err != nil {
		t.Fatal(err)
	}
	return bs, cr.Status.InodeId
}

// TestGetBlockLocationsRange: offset+length past 2^64 means "to the end",
// never a wrapped small range (offset 5000, length 2^64-1 once answered
// with 1 block of 6); the CRCs come back with the blocks.
func TestGetBlockLocationsRange(t *testing.T) {
	x := startCluster(t, 1, nil)
	x.registerDatanodes(1)
	bs, _ := sixBlockFile(t, x)
	cases := []struct {
		name        string
		off, length uint64
		first, n    int
		code        codes.Code
	}{
		{"whole file", 0, 0, 0, 6, codes.OK},
		{"length 2^64-1 from 0", 0, math.MaxUint64, 0, 6, codes.OK},
		{"length 2^64-1 from 5000", 5000, math.MaxUint64, 4, 2, codes.OK},
		{"end wraps to exactly 0", 5000, math.MaxUint64 - 4999, 4, 2, codes.OK},
		{"end wraps to 1", 5000, math.MaxUint64 - 4998, 4, 2, codes.OK},
		{"last byte", 6143, math.MaxUint64, 5, 1, codes.OK},
		{"inside one block", 5000, 100, 4, 1, codes.OK},
		{"across a boundary", 1000, 100, 0, 2, codes.OK},
		{"at the end", 6144, math.MaxUint64, 0, 0, codes.OK},
		{"past the end", 6145, 1, 0, 0, codes.InvalidArgument},
		{"offset 2^64-1", math.MaxUint64, math.MaxUint64, 0, 0, codes.InvalidArgument},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := x.client(0).GetBlockLocations(x.root(), &api.GetBlockLocationsRequest{Path: "/six", Offset: c.off, Length: c.length})
			wantCode(t, err, c.code, "")
			if err != nil {
				wantCode(t, err, c.code, fmt.Sprint(c.off))
				return
			}
			if err := client.ExpandLocations(r); err != nil {
				t.Fatal(err)
			}
			if len(r.Blocks) != c.n {
				t.Fatalf("%d blocks, want %d", len(r.Blocks), c.n)
			}
			for i, lb := range r.Blocks {
				want := bs[c.first+i]
				if lb.Block.Id != want.Id || lb.Offset != uint64(1024*(c.first+i)) {
					t.Fatalf("block %d: %v at %d, want %v at %d", i, lb.Block, lb.Offset, want, 1024*(c.first+i))
				}
				if lb.Block.Crc32C == nil || *lb.Block.Crc32C != *want.Crc32C {
					t.Fatalf("block %d: CRC %v, want %d", i, lb.Block.Crc32C, *want.Crc32C)
				}
			}
		})
	}
}

// TestCompleteCRCOnce: a retried Complete with other CRCs, or an AddBlock
// whose previous block's CRC disagrees with what Complete later says, is
// refused with FailedPrecondition and changes nothing.
func TestCompleteCRCOnce(t *testing.T) {
	x := startCluster(t, 3, nil)
	x.registerDatanodes(3)
	bs, inode := sixBlockFile(t, x)
	other := make([]*api.Block, len(bs))
	for i, b := range bs {
		other[i] = proto.Clone(b).(*api.Block)
	}
	other[3].Crc32C = proto.Uint32(77)
	for _, nn := range []int{x.leader(), x.follower()} {
		c := x.client(nn)
		_, err := c.Complete(x.root(), &api.CompleteRequest{Path: "/six", InodeId: inode, Blocks: bs})
		wantCode(t, err, codes.OK, "")
		_, err = c.Complete(x.root(), &api.CompleteRequest{Path: "/six", InodeId: inode, Blocks: other})
		wantCode(t, err, codes.FailedPrecondition, "/six")
		wantCode(t, err, codes.FailedPrecondition, "CRC32C 0000004d differs from the recorded 00000003")
	}
	// An open file: AddBlock commits block 0's CRC; Complete may not
	// change it.
	c := x.client(x.leader())
	cr, err := c.Create(x.root(), &api.CreateRequest{Path: "/open", Replication: 1, BlockSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	ab, err := c.AddBlock(x.root(), &api.AddBlockRequest{Path: "/open", InodeId: cr.Status.InodeId})
	if err != nil {
		t.Fatal(err)
	}
	b0 := ab.Block.Block
	b0.Length, b0.Crc32C = 1024, proto.Uint32(0xabcdef01)
	ab, err = c.AddBlock(x.root(), &api.AddBlockRequest{Path: "/open", InodeId: cr.Status.InodeId, Previous: b0})
	if err != nil {
		t.Fatal(err)
	}
	b1 := ab.Block.Block
	b1.Length = 10
	bad := proto.Clone(b0).(*api.Block)
	bad.Crc32C = proto.Uint32(1)
	_, err = c.Complete(x.root(), &api.CompleteRequest{Path: "/open", InodeId: cr.Status.InodeId, Blocks: []*api.Block{bad, b1}})
	wantCode(t, err, codes.FailedPrecondition, "/open")
	st, err := c.GetFileInfo(x.root(), &api.GetFileInfoRequest{Path: "/open"})
	if err != nil || !st.Status.UnderConstruction {
		t.Fatalf("after the refused Complete: %v %v", st, err)
	}
	r, err := c.GetBlockLocations(x.root(), &api.GetBlockLocationsRequest{Path: "/open"})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Crc32Cs) != 2 || r.Crc32Cs[0] != 1<<32|0xabcdef01 || r.Crc32Cs[1] != 0 {
		t.Fatalf("crc32cs %x, want [1abcdef01 0]", r.Crc32Cs)
	}
}

// TestReportedCRCMismatchIsCorrupt: a datanode reporting a replica whose
// CRC differs from the namespace's has a corrupt replica (the block map's
// corrupt path: not served, replaced from a good copy); the replicate
// command carries the namespace's CRC so the target can check the copy.
func TestReportedCRCMismatchIsCorrupt(t *testing.T) {
	x := startBMCluster(t)
	for i := range 3 {
		x.addDatanode(fmt.Sprintf("dn%d", i), 1<<40)
	}
	c := x.client(0)
	cr, err := c.Create(x.root(), &api.CreateRequest{Path: "/f", Replication: 2, BlockSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	ab, err := c.AddBlock(x.root(), &api.AddBlockRequest{Path: "/f", InodeId: cr.Status.InodeId})
	if err != nil {
		t.Fatal(err)
	}
	b := ab.Block.Block
	b.Length = 1000
	var pipeline []string
	for _, d := range ab.Block.Locations {
		pipeline = append(pipeline, d.Id)
		if _, err := x.dp.IncrementalBlockReport(dnCtx(t, d.Id), &api.IncrementalBlockReportRequest{
			DatanodeId: d.Id, Received: []*api.ReportedBlock{{Block: b, InodeId: cr.Status.InodeId}},
		}); err != nil {
			t.Fatal(err)
		}
	}
	good := proto.Clone(b).(*api.Block)
	good.Crc32C = proto.Uint32(0x12345678)
	if _, err := c.Complete(x.root(), &api.CompleteRequest{Path: "/f", InodeId: cr.Status.InodeId, Blocks: []*api.Block{good}}); err != nil {
		t.Fatal(err)
	}
	// The matching CRC changes nothing.
	if _, err := x.dp.BlockReport(dnCtx(t, pipeline[0]), &api.BlockReportRequest{
		DatanodeId: pipeline[0], Blocks: []*api.ReportedBlock{{Block: good, InodeId: cr.Status.InodeId}},
	}); err != nil {
		t.Fatal(err)
	}
	if live, _ := x.bm.NeededReplication(b.Id); live != 2 {
		t.Fatalf("%d good replicas after a matching report, want 2", live)
	}
	victim := pipeline[1]
	bad := proto.Clone(b).(*api.Block)
	bad.Crc32C = proto.Uint32(0x87654321)
	if _, err := x.dp.BlockReport(dnCtx(t, victim), &api.BlockReportRequest{
		DatanodeId: victim, Blocks: []*api.ReportedBlock{{Block: bad, InodeId: cr.Status.InodeId}},
	}); err != nil {
		t.Fatal(err)
	}
	if live, _ := x.bm.NeededReplication(b.Id); live != 1 {
		t.Fatalf("%d good replicas after a mismatching report, want 1", live)
	}
	r, err := c.GetBlockLocations(x.root(), &api.GetBlockLocationsRequest{Path: "/f"})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.ExpandLocations(r); err != nil {
		t.Fatal(err)
	}
	for _, d := range r.Blocks[0].Locations {
		if d.Id == victim {
			t.Fatal("the corrupt replica is still served")
		}
	}
	var cmd *api.ReplicateBlockCommand
	x.waitFor("a replication from the good replica", func() bool {
		_, _, rs := x.commandsFor(pipeline[0], b.Id)
		if len(rs) > 0 {
			cmd = rs[0].GetReplicate()
		}
		return cmd != nil
	})
	if cmd.Block.Crc32C == nil || *cmd.Block.Crc32C != 0x12345678 {
		t.Fatalf("replicate command's block CRC %v, want the namespace's 12345678", cmd.Block.Crc32C)
	}
}
