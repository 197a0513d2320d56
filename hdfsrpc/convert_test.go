package hdfsrpc

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/blockfs/blockfs/api"
	hdfs "github.com/blockfs/blockfs/api/hadoop/hdfs"
)

// testDoor is a door with only what locatedBlocks reads.
func testDoor() *Door {
	return &Door{
		cfg:     Config{BlockPool: "BP-blockfs", DataAddr: func(d *api.DatanodeInfo) string { return d.HdfsDataAddr }},
		answers: make(chan []byte, answerBuffers),
	}
}

// locations is a GetBlockLocations answer of n blocks on 3 of 5
// datanodes, with one token per request or (perBlock) one per block.
func locations(n int, perBlock bool) *api.GetBlockLocationsResponse {
	r := &api.GetBlockLocationsResponse{FileLength: uint64(n) * 1024, Token: []byte("request-token-bytes-of-a-realistic-length-0123456789abcdef")}
	for i := range 5 {
		r.Datanodes = append(r.Datanodes, &api.DatanodeInfo{
			Id: fmt.Sprintf("dn-%d-0000-1111-2222", i), Addr: fmt.Sprintf("127.0.0.1:%d", 9000+i), HttpAddr: fmt.Sprintf("127.0.0.1:%d", 9100+i),
			HdfsDataAddr: fmt.Sprintf("127.0.0.1:%d", 9200+i), Capacity: 1 << 40, Used: 1 << 30, LastHeartbeatUnixMs: 1700000000000,
		})
	}
	for i := range n {
		r.BlockIds = append(r.BlockIds, uint64(1000+i))
		r.GenStamps = append(r.GenStamps, 1001)
		r.Lengths = append(r.Lengths, 1024)
		r.ReplicaCounts = append(r.ReplicaCounts, 3)
		r.ReplicaIndexes = append(r.ReplicaIndexes, uint32(i%5), uint32((i+1)%5), uint32((i+2)%5))
		if perBlock {
			r.BlockTokens = append(r.BlockTokens, []byte(fmt.Sprintf("block-token-%d-of-a-realistic-length-0123456789abcdef", i)))
		}
	}
	return r
}

func BenchmarkLocatedBlocks(b *testing.B) {
	d := testDoor()
	for _, n := range []int{1000} {
		for _, perBlock := range []bool{false, true} {
			r := locations(n, perBlock)
			b.Run(fmt.Sprintf("blocks=%d/perBlock=%v/marshal", n, perBlock), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					ans := d.getBlockLocationsResponse(r)
					if _, err := proto.Marshal(ans); err != nil {
						b.Fatal(err)
					}
					ans.Release() // as hadoopipc does once the answer is written
				}
			})
			wire, _ := proto.Marshal(d.getBlockLocationsResponse(r))
			b.Run(fmt.Sprintf("blocks=%d/perBlock=%v/unmarshal", n, perBlock), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(wire)))
				for b.Loop() {
					var m hdfs.GetBlockLocationsResponseProto
					if err := proto.Unmarshal(wire, &m); err != nil {
						b.Fatal(err)
					}
				}
			})
			grpcWire, _ := proto.Marshal(r)
			b.Run(fmt.Sprintf("blocks=%d/perBlock=%v/grpc", n, perBlock), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(grpcWire)))
				for b.Loop() {
					w, _ := proto.Marshal(r)
					var m api.GetBlockLocationsResponse
					if err := proto.Unmarshal(w, &m); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestLocatedBlocksWire: the spliced encoding of getBlockLocations'
// answer decodes to the message locatedBlocks builds, for every token
// mode's shape and for a file under construction, a block with no live
// replica and a replica index out of range, each case encoded into the
// buffer the one before released.
func TestLocatedBlocksWire(t *testing.T) {
	d := testDoor()
	uc := locations(3, false)
	uc.UnderConstruction = true
	odd := locations(4, true)
	odd.ReplicaCounts[1] = 0
	odd.ReplicaIndexes = append(odd.ReplicaIndexes[:3], odd.ReplicaIndexes[6:]...)
	odd.ReplicaIndexes[4] = 99 // no such datanode: skipped
	odd.BlockTokens[2] = nil   // no per-block token: the request's
	odd.FirstOffset = 4096
	cases := []struct {
		name string
		r    *api.GetBlockLocationsResponse
	}{
		{"empty file", &api.GetBlockLocationsResponse{}},
		{"one block, shared token", locations(1, false)},
		{"1000 blocks, shared token", locations(1000, false)},
		{"100 blocks, per-block tokens", locations(100, true)},
		{"under construction", uc},
		{"odd replicas", odd},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ans := d.getBlockLocationsResponse(tc.r)
			wire, err := proto.Marshal(ans)
			if err != nil {
				t.Fatal(err)
			}
			ans.Release() // the next case encodes into the same buffer
			var got hdfs.GetBlockLocationsResponseProto
			if err := proto.Unmarshal(wire, &got); err != nil {
				t.Fatal(err)
			}
			want := &hdfs.GetBlockLocationsResponseProto{Locations: d.locatedBlocks(tc.r)}
			if !proto.Equal(&got, want) {
				t.Fatalf("spliced answer differs:\n got %v\nwant %v", &got, want)
			}
			if len(got.ProtoReflect().GetUnknown()) != 0 || len(got.GetLocations().ProtoReflect().GetUnknown()) != 0 {
				t.Error("the answer decodes with unknown fields")
			}
		})
	}
}

// locatedBlocks converts GetBlockLocations' columns into messages. Each
// datanode and, in per-request and cached token mode, the token are
// converted once and shared by every block that names them; a reader's
// blocks carry no storage ids, storage types or isCached (wire.go says
// why). It is the definition getBlockLocations' encoded answer
// (appendLocatedBlocks, which does not marshal the shared messages once per
// block) is tested against.
func (d *Door) locatedBlocks(r *api.GetBlockLocationsResponse) *hdfs.LocatedBlocksProto {
	n := len(r.BlockIds)
	dns := make([]*hdfs.DatanodeInfoProto, len(r.Datanodes))
	for i, dn := range r.Datanodes {
		dns[i] = d.replica(dn)
	}
	shared := token(r.Token)
	blocks := make([]*hdfs.LocatedBlockProto, n)
	// One allocation for every block's messages.
	lbs := make([]hdfs.LocatedBlockProto, n)
	ebs := make([]hdfs.ExtendedBlockProto, n)
	offset, next := r.FirstOffset, 0
	for i := range n {
		ebs[i] = hdfs.ExtendedBlockProto{
			PoolId: &d.cfg.BlockPool, BlockId: &r.BlockIds[i], GenerationStamp: &r.GenStamps[i], NumBytes: &r.Lengths[i],
		}
		lb := &lbs[i]
		lb.B, lb.Offset, lb.Corrupt, lb.BlockToken = &ebs[i], proto.Uint64(offset), proto.Bool(false), shared
		if i < len(r.BlockTokens) && len(r.BlockTokens[i]) > 0 {
			lb.BlockToken = token(r.BlockTokens[i])
		}
		cnt := 0
		if i < len(r.ReplicaCounts) {
			cnt = int(r.ReplicaCounts[i])
		}
		if cnt > 0 && next+cnt <= len(r.ReplicaIndexes) {
			lb.Locs = make([]*hdfs.DatanodeInfoProto, 0, cnt)
			for _, x := range r.ReplicaIndexes[next : next+cnt] {
				if int(x) < len(dns) {
					lb.Locs = append(lb.Locs, dns[x])
				}
			}
		}
		next += cnt
		offset += r.Lengths[i]
		blocks[i] = lb
	}
	out := &hdfs.LocatedBlocksProto{
		FileLength: proto.Uint64(r.FileLength), Blocks: blocks,
		UnderConstruction: proto.Bool(r.UnderConstruction), IsLastBlockComplete: proto.Bool(!r.UnderConstruction),
	}
	if n > 0 && r.UnderConstruction {
		out.LastBlock = blocks[n-1]
		out.IsLastBlockComplete = proto.Bool(false)
	}
	return out
}
