package namenode

import (
	"context"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/blocks"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/namespace"
)

// GetBlockLocations returns the blocks of a file overlapping [offset,
// offset+length) with their live replicas. It runs under the FSM's read
// lock only (shared), and the block map is sharded, so concurrent calls do
// not serialize.
func (s *clientService) GetBlockLocations(ctx context.Context, req *api.GetBlockLocationsRequest) (*api.GetBlockLocationsResponse, error) {
	if err := validatePath("get block locations", req.Path); err != nil {
		return nil, err
	}
	if err := s.n.readBarrier(ctx, req.Read); err != nil {
		return nil, err
	}
	return s.n.blockLocations(callerFrom(ctx), req)
}

func (n *Namenode) blockLocations(c *api.Caller, req *api.GetBlockLocationsRequest) (*api.GetBlockLocationsResponse, error) {
	f := n.fsm
	f.mu.RLock()
	defer f.mu.RUnlock()
	if u, ok := f.user(c); ok {
		if err := f.st.tree.CheckAccess(u, f.superuser, req.Path, namespace.Read); err != nil {
			return nil, err
		}
	}
	fi, bs, err := f.st.tree.File(req.Path)
	if err != nil {
		return nil, err
	}
	if req.Offset > fi.Length && !(req.Offset == 0 && fi.Length == 0) {
		return nil, errs.Newf(errs.Invalid, "get block locations", req.Path, "offset %d is past the end of the file (%d bytes)", req.Offset, fi.Length)
	}
	end := fi.Length
	if req.Length > 0 && req.Offset+req.Length < end {
		end = req.Offset + req.Length
	}
	out := &api.GetBlockLocationsResponse{
		Header:            n.header(),
		InodeId:           uint64(fi.ID),
		FileLength:        fi.Length,
		UnderConstruction: fi.State == namespace.UnderConstruction,
	}
	var (
		pos  uint64
		locs []blocks.Datanode
	)
	for i, b := range bs {
		bEnd := pos + b.Length
		last := i == len(bs)-1
		// A block overlaps if it ends after offset and starts before end;
		// an under-construction last block (length not yet known) is always
		// included when the range reaches the end of the file.
		if (bEnd > req.Offset && pos < end) || (last && out.UnderConstruction && end == fi.Length) {
			lb := &api.LocatedBlock{Block: toAPIBlock(b), Offset: pos}
			locs = n.blocks.AppendLocations(locs[:0], b.ID)
			lb.Locations = make([]*api.DatanodeInfo, len(locs))
			for j, d := range locs {
				lb.Locations[j] = toDatanodeInfo(d)
			}
			out.Blocks = append(out.Blocks, lb)
		}
		pos = bEnd
		if pos >= end && !out.UnderConstruction {
			break
		}
	}
	return out, nil
}

func toDatanodeInfo(d blocks.Datanode) *api.DatanodeInfo {
	state := "live"
	if d.State == blocks.Dead {
		state = "dead"
	}
	return &api.DatanodeInfo{
		Id: d.ID, Addr: d.Addr, HttpAddr: d.HTTPAddr, Capacity: d.Capacity, Used: d.Used,
		State: state, LastHeartbeatUnixMs: d.LastHeartbeat.UnixMilli(), FailedVolumes: d.FailedVolumes,
	}
}
