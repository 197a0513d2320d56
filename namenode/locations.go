package namenode

import (
	"context"
	"slices"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/namenode/fsm"
	"github.com/blockfs/blockfs/namenode/locreply"
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
	sc := locreply.GetScratch()
	defer sc.Release()
	ns, err := r.AsUser(&sc.NC, user, groups, opGetBlockLocations, req.Path)
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
	end := namespace.RangeEnd(req.Offset, req.Length, fi.Length)
	uc := fi.State == namespace.UnderConstruction
	// The reply is parallel packed arrays (see api/client.proto), filled
	// with no allocation per block; each datanode is named once.
	first, last := namespace.Overlapping(bs, req.Offset, end, uc && end == fi.Length)
	count := last - first
	out := locreply.New(count)
	locreply.SetHeader(out, n.fsm.AppliedIndex(), n.cfg.ID)
	out.InodeId, out.FileLength, out.UnderConstruction = uint64(fi.ID), fi.Length, uc
	out.FirstOffset = namespace.BlockOffset(bs, first)
	// One clock read per request; replicas come back as datanode numbers,
	// mapped in place to indexes into the reply's datanode table, which
	// names each datanode once, in entries the reply owns (package locreply).
	rd := &sc.RD
	rd.Reset(n.blocks)
	sc.Infos = out.Datanodes
	if cap(sc.Infos) == 0 {
		sc.Infos = make([]*api.DatanodeInfo, 0, min(rd.Datanodes(), 3*count))
	}
	for i, b := range bs[first:last] {
		out.BlockIds[i], out.GenStamps[i], out.Lengths[i] = b.ID, b.GenStamp, b.Length
		k := len(out.ReplicaIndexes)
		out.ReplicaIndexes = rd.Append(out.ReplicaIndexes, b.ID)
		out.ReplicaCounts[i] = uint32(len(out.ReplicaIndexes) - k)
		for j := k; j < len(out.ReplicaIndexes); j++ {
			out.ReplicaIndexes[j] = sc.Index(rd, out.ReplicaIndexes[j])
		}
	}
	if out.UnderConstruction && count > 0 && last == len(bs) && out.ReplicaCounts[count-1] == 0 && bs[last-1].Length > 0 {
		// The last block is being written: its replicas report nothing
		// until it is finalized, so readers of hflushed bytes go to the
		// datanodes of its pipeline.
		for _, d := range n.blocks.WriteTargets(bs[last-1].ID) {
			k := slices.IndexFunc(sc.Infos, func(i *api.DatanodeInfo) bool { return i.Id == d.ID })
			if k < 0 {
				k = len(sc.Infos)
				sc.Infos = locreply.AppendInfo(sc.Infos, &d)
			}
			out.ReplicaIndexes = append(out.ReplicaIndexes, uint32(k))
			out.ReplicaCounts[count-1]++
		}
	}
	out.Datanodes = sc.Infos
	crcs := out.Crc32Cs // a recycled reply's array, empty
	out.Crc32Cs = nil
	for i, b := range bs[first:last] {
		if b.HasCRC {
			if out.Crc32Cs == nil {
				out.Crc32Cs = locreply.Zeroed(crcs, count)
			}
			out.Crc32Cs[i] = locreply.PackCRC(b)
		}
	}
	return out, nil
}
