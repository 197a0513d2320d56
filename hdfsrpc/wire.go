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
// it. locatedBlocksWire instead encodes each datanode and the shared token
// once and splices their bytes into every block, appending the rest of
// each block (ExtendedBlockProto, offset, storage ids) by hand. The bytes
// decode to what locatedBlocks builds (TestLocatedBlocksWire).

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
	lbStorageIDs = 8

	ebPoolID   = 1
	ebBlockID  = 2
	ebGenStamp = 3
	ebNumBytes = 4

	getBlockLocationsLocations = 1
)

var partial = proto.MarshalOptions{AllowPartial: true}

// getBlockLocationsResponse is getBlockLocations' answer to r, its
// LocatedBlocksProto spliced in as encoded bytes.
func (d *Door) getBlockLocationsResponse(r *api.GetBlockLocationsResponse) *hdfs.GetBlockLocationsResponseProto {
	lbs := d.locatedBlocksWire(r)
	b := make([]byte, 0, len(lbs)+protowire.SizeVarint(uint64(len(lbs)))+1)
	b = protowire.AppendTag(b, getBlockLocationsLocations, protowire.BytesType)
	b = protowire.AppendBytes(b, lbs)
	out := &hdfs.GetBlockLocationsResponseProto{}
	out.ProtoReflect().SetUnknown(b)
	return out
}

// locatedBlocksWire encodes r's blocks as a LocatedBlocksProto.
func (d *Door) locatedBlocksWire(r *api.GetBlockLocationsResponse) []byte {
	dns := make([][]byte, len(r.Datanodes))
	ids := make([]string, len(r.Datanodes))
	for i, dn := range r.Datanodes {
		dns[i], _ = partial.Marshal(d.replica(dn))
		ids[i] = "DS-" + dn.Id
	}
	shared, _ := partial.Marshal(token(r.Token))
	// The isCached and storageTypes columns of a block of k replicas (all
	// false, all DISK), encoded once per k.
	tails := map[int][]byte{}
	tail := func(k int) []byte {
		t, ok := tails[k]
		if !ok {
			m := &hdfs.LocatedBlockProto{IsCached: make([]bool, k), StorageTypes: make([]hdfs.StorageTypeProto, k)}
			for i := range m.StorageTypes {
				m.StorageTypes[i] = hdfs.StorageTypeProto_DISK
			}
			t, _ = partial.Marshal(m)
			tails[k] = t
		}
		return t
	}
	n := len(r.BlockIds)
	var out []byte // sized by the first block: blocks differ by a few varint bytes
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
		k := 0
		for _, x := range locs {
			if int(x) < len(dns) {
				blk = protowire.AppendTag(blk, lbLocs, protowire.BytesType)
				blk = protowire.AppendBytes(blk, dns[x])
				k++
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
		if k > 0 {
			blk = append(blk, tail(k)...)
			for _, x := range locs {
				if int(x) < len(dns) {
					blk = protowire.AppendTag(blk, lbStorageIDs, protowire.BytesType)
					blk = protowire.AppendString(blk, ids[x])
				}
			}
		}
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
