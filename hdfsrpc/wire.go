package hdfsrpc

import (
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/blockfs/blockfs/api"
	hdfs "github.com/blockfs/blockfs/api/hadoop/hdfs"
)

// getBlockLocations' answer is the largest message the door sends: a
// LocatedBlockProto per block, each naming its replicas' datanodes in
// full. Built as messages and marshalled, a 1000-block answer marshals
// every shared DatanodeInfoProto and TokenProto once per block that names
// it. appendLocatedBlocks instead encodes each datanode and the shared token
// once and splices their bytes into every block, appending the rest of
// each block (ExtendedBlockProto, offset, corrupt) by hand. The bytes
// decode to what locatedBlocks builds (TestLocatedBlocksWire).
//
// A reader's located blocks carry no storageIDs, storageTypes or isCached
// (repeated fields, so optional): an HDFS client reads a block by its
// ExtendedBlockProto, locations and token. Java's DFSClient
// (PBHelperClient.convertLocatedBlockProto) takes no storage ids as none,
// no storage types as DISK for every location and no isCached as no cached
// replica, which is what blockfs would have sent; colinmarc/hdfs reads none
// of the three. Answers a writer acts on (addBlock, append,
// updateBlockForPipeline: located in convert.go) keep them, since a
// pipeline names its targets' storages. Without them a 1000-block answer
// of 3 replicas is a quarter smaller and decodes with 10 fewer allocations
// a block.

// Field numbers of hdfs.proto's LocatedBlocksProto and LocatedBlockProto
// and ExtendedBlockProto.
const (
	lbsFileLength          = 1
	lbsBlocks              = 2
	lbsUnderConstruction   = 3
	lbsLastBlock           = 4
	lbsIsLastBlockComplete = 5

	lbB          = 1
	lbOffset     = 2
	lbLocs       = 3
	lbCorrupt    = 4
	lbBlockToken = 5

	ebPoolID   = 1
	ebBlockID  = 2
	ebGenStamp = 3
	ebNumBytes = 4

	getBlockLocationsLocations = 1
)

var partial = proto.MarshalOptions{AllowPartial: true}

// locatedAnswer is getBlockLocations' answer with the buffer its encoded
// LocatedBlocksProto lives in; hadoopipc releases it once written, and the
// buffer goes back to the door for the next answer (a 1000-block answer is
// half a megabyte, which a fresh buffer would clear before it is written).
type locatedAnswer struct {
	*hdfs.GetBlockLocationsResponseProto
	d   *Door
	buf []byte
}

// Release gives the answer's buffer back to its door: the answer's bytes
// are not to be read after it.
func (a *locatedAnswer) Release() {
	if a.buf == nil || cap(a.buf) > maxAnswerBuffer {
		return
	}
	select {
	case a.d.answers <- a.buf[:0]:
	default:
	}
	a.buf = nil
}

// A door keeps up to answerBuffers buffers of at most maxAnswerBuffer
// bytes for getBlockLocations' answers.
const (
	answerBuffers   = 4
	maxAnswerBuffer = 16 << 20
)

// getBlockLocationsResponse is getBlockLocations' answer to r, its
// LocatedBlocksProto spliced in as encoded bytes.
func (d *Door) getBlockLocationsResponse(r *api.GetBlockLocationsResponse) *locatedAnswer {
	// The LocatedBlocksProto is encoded after room for the field's tag and
	// length, which are then written just before it: no second copy.
	const room = 1 + 5 // tag 1; a length varint of up to 5 bytes (< 4 GiB)
	var buf []byte
	select {
	case buf = <-d.answers:
	default:
	}
	b := d.appendLocatedBlocks(append(buf[:0], make([]byte, room)...), r)
	body := uint64(len(b) - room)
	start := room - 1 - protowire.SizeVarint(body)
	p := protowire.AppendTag(b[start:start], getBlockLocationsLocations, protowire.BytesType)
	protowire.AppendVarint(p, body)
	out := &hdfs.GetBlockLocationsResponseProto{}
	out.ProtoReflect().SetUnknown(b[start:])
	return &locatedAnswer{GetBlockLocationsResponseProto: out, d: d, buf: b}
}

// appendLocatedBlocks appends r's blocks encoded as a LocatedBlocksProto
// to out.
func (d *Door) appendLocatedBlocks(out []byte, r *api.GetBlockLocationsResponse) []byte {
	dns := make([][]byte, len(r.Datanodes))
	for i, dn := range r.Datanodes {
		dns[i], _ = partial.Marshal(d.replica(dn))
	}
	shared, _ := partial.Marshal(token(r.Token))
	n := len(r.BlockIds)
	// out is grown once, by the first block's size: blocks differ by a few
	// varint bytes.
	out = protowire.AppendTag(out, lbsFileLength, protowire.VarintType)
	out = protowire.AppendVarint(out, r.FileLength)
	var blk []byte // one block's LocatedBlockProto, reused
	var last []byte
	offset, next := r.FirstOffset, 0
	for i := range n {
		blk = blk[:0]
		ebLen := 1 + protowire.SizeBytes(len(d.cfg.BlockPool)) + 1 + protowire.SizeVarint(r.BlockIds[i]) +
			1 + protowire.SizeVarint(r.GenStamps[i]) + 1 + protowire.SizeVarint(r.Lengths[i])
		blk = protowire.AppendTag(blk, lbB, protowire.BytesType)
		blk = protowire.AppendVarint(blk, uint64(ebLen))
		blk = protowire.AppendTag(blk, ebPoolID, protowire.BytesType)
		blk = protowire.AppendString(blk, d.cfg.BlockPool)
		blk = protowire.AppendTag(blk, ebBlockID, protowire.VarintType)
		blk = protowire.AppendVarint(blk, r.BlockIds[i])
		blk = protowire.AppendTag(blk, ebGenStamp, protowire.VarintType)
		blk = protowire.AppendVarint(blk, r.GenStamps[i])
		blk = protowire.AppendTag(blk, ebNumBytes, protowire.VarintType)
		blk = protowire.AppendVarint(blk, r.Lengths[i])
		blk = protowire.AppendTag(blk, lbOffset, protowire.VarintType)
		blk = protowire.AppendVarint(blk, offset)

		cnt := 0
		if i < len(r.ReplicaCounts) {
			cnt = int(r.ReplicaCounts[i])
		}
		var locs []uint32
		if cnt > 0 && next+cnt <= len(r.ReplicaIndexes) {
			locs = r.ReplicaIndexes[next : next+cnt]
		}
		for _, x := range locs {
			if int(x) < len(dns) {
				blk = protowire.AppendTag(blk, lbLocs, protowire.BytesType)
				blk = protowire.AppendBytes(blk, dns[x])
			}
		}
		blk = protowire.AppendTag(blk, lbCorrupt, protowire.VarintType)
		blk = protowire.AppendVarint(blk, 0)
		tok := shared
		if i < len(r.BlockTokens) && len(r.BlockTokens[i]) > 0 {
			tok, _ = partial.Marshal(token(r.BlockTokens[i]))
		}
		blk = protowire.AppendTag(blk, lbBlockToken, protowire.BytesType)
		blk = protowire.AppendBytes(blk, tok)
		next += cnt
		offset += r.Lengths[i]
		if i == 0 {
			out = slices.Grow(out, 32+n*(len(blk)+16)+2*len(blk))
		}
		out = protowire.AppendTag(out, lbsBlocks, protowire.BytesType)
		out = protowire.AppendBytes(out, blk)
		if i == n-1 {
			last = out[len(out)-len(blk):]
		}
	}
	out = protowire.AppendTag(out, lbsUnderConstruction, protowire.VarintType)
	out = protowire.AppendVarint(out, protowire.EncodeBool(r.UnderConstruction))
	if n > 0 && r.UnderConstruction {
		out = protowire.AppendTag(out, lbsLastBlock, protowire.BytesType)
		out = protowire.AppendBytes(out, last)
	}
	out = protowire.AppendTag(out, lbsIsLastBlockComplete, protowire.VarintType)
	out = protowire.AppendVarint(out, protowire.EncodeBool(!r.UnderConstruction))
	return out
}
