package namenode

import (
	"context"
	"slices"
	"sync"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/blocks"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/namenode/fsm"
	"github.com/blockfs/blockfs/namespace"
)

// GetBlockLocations returns the blocks of a file overlapping [offset,
// offset+length) with their live replicas. It runs under the FSM's read
// lock only (shared), and the block map is sharded, so concurrent calls do
// not serialize.
func (s *clientService) GetBlockLocations(ctx context.Context, req *api.GetBlockLocationsRequest) (resp *api.GetBlockLocationsResponse, err error) {
	defer func() { s.n.audited(ctx, "open", req.Path, "", nil, err) }()
	p, err := parsePath(opGetBlockLocations, req.Path)
	if err != nil {
		return nil, err
	}
	if err := s.n.readBarrier(ctx, opGetBlockLocations, req.Read); err != nil {
		return nil, err
	}
	user, groups := s.n.reader(ctx)
	out, err := s.n.blockLocationsAt(user, groups, p, req)
	if err != nil {
		return nil, err
	}
	if err := s.n.fillReadTokens(user, out); err != nil {
		return nil, err
	}
	return out, nil
}

// opGetBlockLocations is the op of GetBlockLocations' errors, all of them.
const opGetBlockLocations = "GetBlockLocations"

// blockLocations is blockLocationsAt for a caller holding the request's
// path unparsed.
func (n *Namenode) blockLocations(user string, groups []string, req *api.GetBlockLocationsRequest) (*api.GetBlockLocationsResponse, error) {
	p, err := parsePath(opGetBlockLocations, req.Path)
	if err != nil {
		return nil, err
	}
	return n.blockLocationsAt(user, groups, p, req)
}

// blockLocationsAt builds the reply of GetBlockLocations of p (the
// request's path, parsed) for user, a member of groups, under the FSM's
// read lock.
func (n *Namenode) blockLocationsAt(user string, groups []string, p namespace.Path, req *api.GetBlockLocationsRequest) (out *api.GetBlockLocationsResponse, err error) {
	n.fsm.View(func(r fsm.Reader) { out, err = n.locate(r, user, groups, p, req) })
	return out, err
}

// locate is blockLocationsAt inside the FSM's View: the blocks it reads
// are valid only there.
func (n *Namenode) locate(r fsm.Reader, user string, groups []string, p namespace.Path, req *api.GetBlockLocationsRequest) (*api.GetBlockLocationsResponse, error) {
	sc := scratches.Get().(*scratch)
	defer sc.release()
	ns, err := r.AsUser(&sc.nc, user, groups, opGetBlockLocations, req.Path)
	if err != nil {
		return nil, err
	}
	var one [1]namespace.Block
	fi, bs, err := ns.FileInto(p, &one) // one walk: traverse and read checks included; bs is read only under the lock
	if err != nil {
		return nil, err
	}
	if req.Offset > fi.Length && !(req.Offset == 0 && fi.Length == 0) {
		return nil, errs.Newf(errs.Invalid, opGetBlockLocations, req.Path, "offset %d is past the end of the file (%d bytes)", req.Offset, fi.Length)
	}
	end := rangeEnd(req.Offset, req.Length, fi.Length)
	uc := fi.State == namespace.UnderConstruction
	// The reply is parallel packed arrays (see api/client.proto), filled
	// with no allocation per block; each datanode is named once.
	first, last := overlapping(bs, req.Offset, end, uc && end == fi.Length)
	count := last - first
	out := newReply(count)
	setHeader(out, n.fsm.AppliedIndex(), n.cfg.ID)
	out.InodeId, out.FileLength, out.UnderConstruction = uint64(fi.ID), fi.Length, uc
	out.FirstOffset = blockOffset(bs, first)
	// One clock read per request; replicas come back as datanode numbers,
	// mapped in place to indexes into the reply's datanode table, which
	// names each datanode once, in entries the reply owns (replies.go).
	rd := &sc.rd
	rd.Reset(n.blocks)
	sc.infos = out.Datanodes
	if cap(sc.infos) == 0 {
		sc.infos = make([]*api.DatanodeInfo, 0, min(rd.Datanodes(), 3*count))
	}
	for i, b := range bs[first:last] {
		out.BlockIds[i], out.GenStamps[i], out.Lengths[i] = b.ID, b.GenStamp, b.Length
		k := len(out.ReplicaIndexes)
		out.ReplicaIndexes = rd.Append(out.ReplicaIndexes, b.ID)
		out.ReplicaCounts[i] = uint32(len(out.ReplicaIndexes) - k)
		for j := k; j < len(out.ReplicaIndexes); j++ {
			out.ReplicaIndexes[j] = sc.index(rd, out.ReplicaIndexes[j])
		}
	}
	if out.UnderConstruction && count > 0 && last == len(bs) && out.ReplicaCounts[count-1] == 0 && bs[last-1].Length > 0 {
		// The last block is being written: its replicas report nothing
		// until it is finalized, so readers of hflushed bytes go to the
		// datanodes of its pipeline.
		for _, d := range n.blocks.WriteTargets(bs[last-1].ID) {
			k := slices.IndexFunc(sc.infos, func(i *api.DatanodeInfo) bool { return i.Id == d.ID })
			if k < 0 {
				k = len(sc.infos)
				sc.infos = appendInfo(sc.infos, &d)
			}
			out.ReplicaIndexes = append(out.ReplicaIndexes, uint32(k))
			out.ReplicaCounts[count-1]++
		}
	}
	out.Datanodes = sc.infos
	crcs := out.Crc32Cs // a recycled reply's array, empty
	out.Crc32Cs = nil
	for i, b := range bs[first:last] {
		if b.HasCRC {
			if out.Crc32Cs == nil {
				out.Crc32Cs = zeroed(crcs, count)
			}
			out.Crc32Cs[i] = packCRC(b)
		}
	}
	return out, nil
}

// zeroed returns n zeros in s's array if it has room, else in a new one.
func zeroed(s []uint64, n int) []uint64 {
	if cap(s) < n {
		return make([]uint64, n)
	}
	s = s[:n]
	clear(s)
	return s
}

func toDatanodeInfo(d blocks.Datanode) *api.DatanodeInfo {
	e := new(api.DatanodeInfo)
	fillDatanodeInfo(e, &d)
	return e
}

// fillDatanodeInfo sets e to describe d.
func fillDatanodeInfo(e *api.DatanodeInfo, d *blocks.Datanode) {
	state := "live"
	if d.State == blocks.Dead {
		state = "dead"
	}
	*e = api.DatanodeInfo{
		Id: d.ID, Addr: d.Addr, HttpAddr: d.HTTPAddr, HdfsDataAddr: d.HDFSDataAddr, Rack: d.Rack, Capacity: d.Capacity, Used: d.Used,
		State: state, LastHeartbeatUnixMs: d.LastHeartbeat.UnixMilli(), FailedVolumes: d.FailedVolumes,
	}
	if d.Admin.State != blocks.AdminNormal { // "" is NORMAL: no bytes on the hot path
		e.AdminState = d.Admin.State.HDFS()
	}
}

// rangeEnd is where a read of length bytes (0: to the end) from off stops
// in a file of fileLen bytes: off+length or the end of the file, whichever
// comes first. off <= fileLen (checked before), so the subtraction cannot
// wrap, and an off+length past 2^64 is simply past the end.
func rangeEnd(off, length, fileLen uint64) uint64 {
	if length > 0 && off <= fileLen && length < fileLen-off {
		return off + length
	}
	return fileLen
}

// overlapping returns the index range [first, last) of the blocks that
// overlap [off, end). withLast forces the last block in (an under-
// construction block whose length is not known yet).
func overlapping(bs []namespace.Block, off, end uint64, withLast bool) (int, int) {
	first, last := len(bs), 0
	var pos uint64
	for i, b := range bs {
		bEnd := pos + b.Length
		if bEnd > off && pos < end {
			first, last = min(first, i), i+1
		}
		pos = bEnd
		if pos >= end && !withLast {
			break
		}
	}
	if withLast && len(bs) > 0 {
		first, last = min(first, len(bs)-1), len(bs)
	}
	if last <= first {
		return 0, 0
	}
	return first, last
}

// blockOffset returns the file offset of block i.
func blockOffset(bs []namespace.Block, i int) uint64 {
	var pos uint64
	for _, b := range bs[:i] {
		pos += b.Length
	}
	return pos
}

// scratch is one request's replica reader and datanode table, recycled
// through scratches.
type scratch struct {
	// nc is the reader's namespace caller: the session keeps a pointer to
	// it, and one on the stack would escape (namespace.Session's errors
	// carry its op), costing an allocation a call.
	nc namespace.Caller
	rd blocks.LocationReader
	// slot maps a datanode's number (blocks.LocationReader.Append) to 1 +
	// its index in infos, 0 when not yet in this reply; used lists the
	// numbers set, so release clears only those.
	slot  []uint32
	used  []uint32
	infos []*api.DatanodeInfo
}

var scratches = sync.Pool{New: func() any { return new(scratch) }}

// index returns the index of datanode number num in the reply's table,
// adding it on first sight.
func (sc *scratch) index(rd *blocks.LocationReader, num uint32) uint32 {
	if int(num) < len(sc.slot) {
		if k := sc.slot[num]; k != 0 {
			return k - 1
		}
	} else {
		sc.slot = append(sc.slot, make([]uint32, int(num)+1-len(sc.slot))...)
	}
	sc.infos = appendInfo(sc.infos, rd.Datanode(num))
	k := uint32(len(sc.infos))
	sc.slot[num] = k
	sc.used = append(sc.used, num)
	return k - 1
}

// release clears sc and returns it to the pool. The reply keeps infos (its
// datanode table), so the next request starts from its own reply's.
func (sc *scratch) release() {
	for _, num := range sc.used {
		sc.slot[num] = 0
	}
	sc.used, sc.infos = sc.used[:0], nil
	sc.nc = namespace.Caller{}
	sc.rd.Reset(nil)
	scratches.Put(sc)
}

// packCRC is a block's entry in GetBlockLocationsResponse.crc32cs: 0 for
// none, else 2^32 + the CRC.
func packCRC(b namespace.Block) uint64 {
	if !b.HasCRC {
		return 0
	}
	return 1<<32 | uint64(b.CRC)
}
