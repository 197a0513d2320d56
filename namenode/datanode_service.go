package namenode

import (
	"context"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/blocks"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/security"
)

// datanodeService implements api.DatanodeProtocolServer. Every namenode
// accepts reports; only the ready leader returns commands.
type datanodeService struct {
	api.UnimplementedDatanodeProtocolServer
	n *Namenode
}

func (s *datanodeService) Register(ctx context.Context, req *api.RegisterRequest) (*api.RegisterResponse, error) {
	d := req.GetNode()
	if d.GetId() == "" || d.GetAddr() == "" {
		return nil, errs.New(errs.Invalid, "register", "", "datanode id and addr are required")
	}
	s.n.blocks.Register(blocks.Datanode{
		ID: d.Id, Addr: d.Addr, HTTPAddr: d.HttpAddr, Capacity: d.Capacity, Used: d.Used, FailedVolumes: d.FailedVolumes,
	})
	return &api.RegisterResponse{NamenodeId: s.n.cfg.ID, IsLeader: s.n.isReadyLeader()}, nil
}

func (s *datanodeService) Heartbeat(ctx context.Context, req *api.HeartbeatRequest) (*api.HeartbeatResponse, error) {
	if req.DatanodeId == "" {
		return nil, errs.New(errs.Invalid, "heartbeat", "", "datanode_id is required")
	}
	if !s.n.blocks.Heartbeat(req.DatanodeId, req.Capacity, req.Used, req.FailedVolumes) {
		return &api.HeartbeatResponse{Reregister: true}, nil
	}
	resp := &api.HeartbeatResponse{IsLeader: s.n.isReadyLeader(), FullReport: s.n.blocks.WantsFullReport(req.DatanodeId)}
	if !s.n.fsm.hasKeyIDs(req.KeyIds) {
		resp.Keys, resp.KeysChanged = s.n.fsm.publicKeys(), true
	}
	if resp.IsLeader {
		resp.Commands = s.n.toAPICommands(s.n.blocks.PendingCommands(req.DatanodeId))
	}
	return resp, nil
}

func (s *datanodeService) GetKeys(ctx context.Context, req *api.GetKeysRequest) (*api.GetKeysResponse, error) {
	return &api.GetKeysResponse{Keys: s.n.fsm.publicKeys()}, nil
}

func (s *datanodeService) BlockReport(ctx context.Context, req *api.BlockReportRequest) (*api.BlockReportResponse, error) {
	if req.DatanodeId == "" {
		return nil, errs.New(errs.Invalid, "block report", "", "datanode_id is required")
	}
	rs := make([]blocks.Replica, len(req.Blocks))
	for i, b := range req.Blocks {
		rs[i] = toReplica(b)
	}
	s.n.blocks.FullReport(req.DatanodeId, rs)
	return &api.BlockReportResponse{}, nil
}

func (s *datanodeService) IncrementalBlockReport(ctx context.Context, req *api.IncrementalBlockReportRequest) (*api.IncrementalBlockReportResponse, error) {
	if req.DatanodeId == "" {
		return nil, errs.New(errs.Invalid, "incremental block report", "", "datanode_id is required")
	}
	rs := make([]blocks.Replica, len(req.Received))
	for i, b := range req.Received {
		rs[i] = toReplica(b)
	}
	del := make([]uint64, len(req.Deleted))
	for i, b := range req.Deleted {
		del[i] = b.GetId()
	}
	s.n.blocks.IncrementalReport(req.DatanodeId, rs, del)
	return &api.IncrementalBlockReportResponse{}, nil
}

func toReplica(b *api.ReportedBlock) blocks.Replica {
	return blocks.Replica{
		BlockID: b.GetBlock().GetId(), GenStamp: b.GetBlock().GetGenStamp(),
		Length: b.GetBlock().GetLength(), Inode: b.GetInodeId(),
	}
}

func replicaBlock(r blocks.Replica) *api.Block {
	return &api.Block{Id: r.BlockID, GenStamp: r.GenStamp, Length: r.Length}
}

func (n *Namenode) toAPICommands(cs []blocks.Command) []*api.DatanodeCommand {
	out := make([]*api.DatanodeCommand, 0, len(cs))
	for _, c := range cs {
		switch c.Kind {
		case blocks.Delete:
			d := &api.DeleteBlocksCommand{}
			for _, r := range c.Blocks {
				d.Blocks = append(d.Blocks, replicaBlock(r))
			}
			out = append(out, &api.DatanodeCommand{Command: &api.DatanodeCommand_Delete{Delete: d}})
		case blocks.Replicate:
			r := &api.ReplicateBlockCommand{Block: replicaBlock(c.Block), InodeId: c.Block.Inode}
			tok, err := n.issuer.BlockToken(replicationUser, c.Block.Inode, c.Block.BlockID, c.Block.GenStamp, security.Copy)
			if err != nil {
				n.log.Warn("sign replication token", "block", c.Block.BlockID, "err", err)
				continue
			}
			r.Token = tok
			for _, t := range c.Targets {
				r.Targets = append(r.Targets, toDatanodeInfo(t))
			}
			out = append(out, &api.DatanodeCommand{Command: &api.DatanodeCommand_Replicate{Replicate: r}})
		}
	}
	return out
}
