package locreply

import (
	"sync"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/blocks"
)

// replies recycles GetBlockLocations replies: the gRPC codec
// (serve.Codec) hands each one to releaseReply once it is marshaled, and
// the next request refills it, arrays included. At steady state a call
// allocates no reply. Replies that never reach the codec (WebHDFS, tests
// calling the handler) are left to the garbage collector.
//
// A reply owns everything it points to: its header and its datanode
// entries are its own copies, never shared with another reply. Marshaling
// writes each message's size cache, so a shared entry would be a cache line
// that every core's replies write, passed from core to core on every call.
var replies sync.Pool

// Release takes back a message the server has marshaled, if it is a
// GetBlockLocations reply. It must not be read afterwards.
func Release(v any) {
	out, ok := v.(*api.GetBlockLocationsResponse)
	if !ok || out == nil || cap(out.BlockIds) > 3*maxPooledBlocks {
		return // a huge file's reply is left to the collector, not kept for small ones
	}
	clear(out.BlockTokens) // the tokens are not the reply's: drop them
	replies.Put(out)
}

// maxPooledBlocks is the most blocks a reply kept for reuse has room for.
const maxPooledBlocks = 4096

// New returns an empty reply with arrays for count blocks: block ids,
// generation stamps and lengths in one array, replica counts and (room for
// 3 per block) replica indexes in another, and an empty datanode table; and
// its own header. A recycled reply's arrays, entries and header are reused
// when they are big enough. The layout keeps each array recoverable from
// the reply alone: BlockIds and ReplicaCounts start their arrays and keep
// their capacity, and the datanode table keeps its entries beyond its
// length (appendInfo).
func New(count int) *api.GetBlockLocationsResponse {
	out, _ := replies.Get().(*api.GetBlockLocationsResponse)
	if out == nil {
		if count == 1 {
			return newOneBlockReply()
		}
		out = new(api.GetBlockLocationsResponse)
	}
	return refill(out, count)
}

// refill empties a released reply out for a reply of count blocks.
func refill(out *api.GetBlockLocationsResponse, count int) *api.GetBlockLocationsResponse {
	u64, u32 := out.BlockIds[:cap(out.BlockIds)], out.ReplicaCounts[:cap(out.ReplicaCounts)]
	infos, tokens, crcs, hdr := out.Datanodes[:0], out.BlockTokens[:0], out.Crc32Cs[:0], out.Header
	out.Reset()
	if len(u64) < 3*count {
		u64 = make([]uint64, 3*count)
	}
	if len(u32) < 4*count {
		u32 = make([]uint32, 4*count)
	}
	if hdr == nil {
		hdr = new(api.ResponseHeader)
	}
	out.BlockIds, out.GenStamps, out.Lengths = u64[:count], u64[count:2*count:2*count], u64[2*count:3*count:3*count]
	out.ReplicaCounts, out.ReplicaIndexes = u32[:count], u32[count:count]
	// Empty but with their arrays: blockLocations and fillReadTokens fill
	// them in place when they can.
	out.Datanodes, out.BlockTokens, out.Crc32Cs, out.Header = infos, tokens, crcs, hdr
	return out
}

// SetHeader fills out's own header: applied index idx, served by id. (The
// namenode's shared header, Namenode.header, would only be copied here, and
// building one on each new applied index is an allocation and a shared
// store on the read path.)
func SetHeader(out *api.GetBlockLocationsResponse, idx uint64, id string) {
	*out.Header = api.ResponseHeader{AppliedIndex: idx, ServedBy: id}
}

// AppendInfo appends datanode d to a reply's table, in the entry the
// table's array already holds past its length if there is one (a recycled
// reply's), else in a new one.
func AppendInfo(infos []*api.DatanodeInfo, d *blocks.Datanode) []*api.DatanodeInfo {
	var e *api.DatanodeInfo
	if k := len(infos); k < cap(infos) {
		e = infos[:k+1][k]
	}
	if e == nil {
		e = new(api.DatanodeInfo)
	}
	FillDatanodeInfo(e, d)
	return append(infos, e)
}

// oneBlockReply is a reply of one block with its arrays, its header and a
// datanode table of 3, in one allocation instead of eight: most files have
// one block, and most GetBlockLocations calls read one.
type oneBlockReply struct {
	out   api.GetBlockLocationsResponse
	hdr   api.ResponseHeader
	u64   [3]uint64            // block id, generation stamp, length
	u32   [1 + 3]uint32        // replica count, then 3 replica indexes
	infos [3]*api.DatanodeInfo // the table (more replicas: append grows it)
	dns   [3]api.DatanodeInfo  // its entries
}

// newOneBlockReply returns an empty reply of one block whose arrays,
// header and datanode table (empty, room for 3) are in the same allocation.
func newOneBlockReply() *api.GetBlockLocationsResponse {
	r := new(oneBlockReply)
	out := &r.out
	out.BlockIds, out.GenStamps, out.Lengths = r.u64[0:1], r.u64[1:2:2], r.u64[2:3:3]
	out.ReplicaCounts, out.ReplicaIndexes = r.u32[:1], r.u32[1:1]
	for i := range r.infos {
		r.infos[i] = &r.dns[i]
	}
	out.Datanodes, out.Header = r.infos[:0], &r.hdr
	return out
}
