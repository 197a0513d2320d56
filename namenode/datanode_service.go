package namenode

import (
	"context"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/blocks"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/namenode/locreply"
	"github.com/blockfs/blockfs/security"
)

// datanodeService implements api.DatanodeProtocolServer. Every namenode
// accepts reports; only the ready leader returns commands.
type datanodeService struct {
	api.UnimplementedDatanodeProtocolServer
	n *Namenode
}

// Register records the calling datanode. A live datanode id registering
// again from another address is refused (errs.Exist): one id is one
// datanode, and a second process taking the id would take its commands.
func (s *datanodeService) Register(ctx context.Context, req *api.RegisterRequest) (*api.RegisterResponse, error) {
	d := req.GetNode()
	if d.GetId() == "" || d.GetAddr() == "" {
		s.n.blocks.Refuse(blocks.RefusedReport)
		return nil, errs.New(errs.Invalid, "Register", "", "datanode id and addr are required")
	}
	if err := s.n.checkDatanodeCaller(ctx, "Register", d.Id); err != nil {
		return nil, err
	}
	if err := s.n.blocks.Register(blocks.Datanode{
		ID: d.Id, Addr: d.Addr, HTTPAddr: d.HttpAddr, HDFSDataAddr: d.HdfsDataAddr, Rack: s.n.topo.Rack(d.Id, d.Addr), Capacity: d.Capacity, Used: d.Used, FailedVolumes: d.FailedVolumes,
	}); err != nil {
		s.n.log.Warn("datanode registration refused", "datanode", d.Id, "addr", d.Addr, "err", err)
		return nil, err
	}
	k, err := s.n.receipts.Issue(d.Id)
	if err != nil {
		return nil, err
	}
	return &api.RegisterResponse{NamenodeId: s.n.cfg.ID, IsLeader: s.n.isReadyLeader(), ReceiptKeyId: k.ID, ReceiptKey: k.Bytes()}, nil
}

func (s *datanodeService) Heartbeat(ctx context.Context, req *api.HeartbeatRequest) (*api.HeartbeatResponse, error) {
	if req.DatanodeId == "" {
		s.n.blocks.Refuse(blocks.RefusedReport)
		return nil, errs.New(errs.Invalid, "Heartbeat", "", "datanode_id is required")
	}
	if err := s.n.checkDatanodeCaller(ctx, "Heartbeat", req.DatanodeId); err != nil {
		return nil, err
	}
	if !s.n.blocks.Heartbeat(req.DatanodeId, req.Capacity, req.Used, req.FailedVolumes) {
		return &api.HeartbeatResponse{Reregister: true}, nil
	}
	resp := &api.HeartbeatResponse{IsLeader: s.n.isReadyLeader(), FullReport: s.n.blocks.WantsFullReport(req.DatanodeId)}
	if !s.n.fsm.HasKeyIDs(req.KeyIds) {
		resp.Keys, resp.KeysChanged = s.n.fsm.PublicKeys(), true
	}
	if resp.IsLeader {
		resp.Commands = s.n.toAPICommands(s.n.blocks.PendingCommands(req.DatanodeId))
		resp.Commands = append(resp.Commands, s.n.recoveryCommands(req.DatanodeId)...)
	}
	return resp, nil
}

func (s *datanodeService) GetKeys(ctx context.Context, req *api.GetKeysRequest) (*api.GetKeysResponse, error) {
	return &api.GetKeysResponse{Keys: s.n.fsm.PublicKeys(), Revoked: s.n.fsm.Revoked()}, nil
}

func (s *datanodeService) BlockReport(ctx context.Context, req *api.BlockReportRequest) (*api.BlockReportResponse, error) {
	const op = "BlockReport"
	if req.DatanodeId == "" {
		s.n.blocks.Refuse(blocks.RefusedReport)
		return nil, errs.New(errs.Invalid, op, "", "datanode_id is required")
	}
	if err := s.n.checkDatanodeCaller(ctx, op, req.DatanodeId); err != nil {
		return nil, err
	}
	rs, err := s.replicas(op, req.Blocks)
	if err != nil {
		return nil, err
	}
	all, reported, done, err := s.n.reportParts.Add(req.DatanodeId, req, rs)
	if err != nil {
		s.n.blocks.Refuse(blocks.RefusedReport)
		return nil, err
	}
	if done && s.n.blocks.FullReport(req.DatanodeId, all) {
		s.n.reportCRCMismatches(req.DatanodeId, reported)
	}
	return &api.BlockReportResponse{}, nil
}

func (s *datanodeService) IncrementalBlockReport(ctx context.Context, req *api.IncrementalBlockReportRequest) (*api.IncrementalBlockReportResponse, error) {
	const op = "IncrementalBlockReport"
	if req.DatanodeId == "" {
		s.n.blocks.Refuse(blocks.RefusedReport)
		return nil, errs.New(errs.Invalid, op, "", "datanode_id is required")
	}
	if err := s.n.checkDatanodeCaller(ctx, op, req.DatanodeId); err != nil {
		return nil, err
	}
	rs, err := s.replicas(op, req.Received)
	if err != nil {
		return nil, err
	}
	del := make([]uint64, len(req.Deleted))
	for i, b := range req.Deleted {
		if b == nil {
			s.n.blocks.Refuse(blocks.RefusedReport)
			return nil, errs.New(errs.Invalid, op, "", "a deleted entry without a block")
		}
		del[i] = b.Id
	}
	ver := make([]blocks.Replica, len(req.Verified))
	for i, b := range req.Verified {
		if b == nil {
			s.n.blocks.Refuse(blocks.RefusedReport)
			return nil, errs.New(errs.Invalid, op, "", "a verified entry without a block")
		}
		ver[i] = blocks.Replica{BlockID: b.Id, GenStamp: b.GenStamp, Length: b.Length}
	}
	if s.n.blocks.IncrementalReport(req.DatanodeId, rs, del) {
		s.n.reportCRCMismatches(req.DatanodeId, req.Received)
		if len(ver) > 0 {
			s.n.blocks.ReportVerified(req.DatanodeId, ver)
		}
	}
	return &api.IncrementalBlockReportResponse{}, nil
}

// replicas converts reported blocks, refusing the whole report (changing
// nothing) if an entry has no block.
func (s *datanodeService) replicas(op string, bs []*api.ReportedBlock) ([]blocks.Replica, error) {
	rs := make([]blocks.Replica, len(bs))
	for i, b := range bs {
		if b.GetBlock() == nil {
			s.n.blocks.Refuse(blocks.RefusedReport)
			return nil, errs.Newf(errs.Invalid, op, "", "entry %d has no block", i)
		}
		rs[i] = toReplica(b)
	}
	return rs, nil
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
			r := &api.ReplicateBlockCommand{Block: n.withCommittedCRC(replicaBlock(c.Block)), InodeId: c.Block.Inode, BalanceBandwidth: c.Bandwidth}
			ids := make([]string, len(c.Targets))
			for i, t := range c.Targets {
				ids[i] = t.ID
			}
			// The copy token names its targets: only they accept the replica.
			tok, err := n.issuer.BlockToken(security.CopySubject(ids), c.Block.Inode, c.Block.BlockID, c.Block.GenStamp, security.Copy)
			if err != nil {
				n.log.Warn("sign replication token", "block", c.Block.BlockID, "err", err)
				continue
			}
			r.Token = tok
			for _, t := range c.Targets {
				r.Targets = append(r.Targets, locreply.DatanodeInfo(t))
			}
			out = append(out, &api.DatanodeCommand{Command: &api.DatanodeCommand_Replicate{Replicate: r}})
		case blocks.Verify:
			v := &api.VerifyBlockCommand{Block: n.withCommittedCRC(replicaBlock(c.Block))}
			out = append(out, &api.DatanodeCommand{Command: &api.DatanodeCommand_Verify{Verify: v}})
		}
	}
	return out
}
