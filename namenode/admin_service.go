package namenode

import (
	"context"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/namenode/fsm"
	"github.com/blockfs/blockfs/security"
)

// adminService implements api.AdminServer. Membership changes run on the
// leader; a follower forwards them there.
type adminService struct {
	api.UnimplementedAdminServer
	n *Namenode
}

func (s *adminService) AddServer(ctx context.Context, req *api.AddServerRequest) (*api.AddServerResponse, error) {
	if req.Id == "" || req.RaftAddr == "" || req.GrpcAddr == "" {
		return nil, errs.New(errs.Invalid, "AddServer", req.Id, "id, raft_addr and grpc_addr are required")
	}
	n := s.n
	if n.raft.State() != raft.Leader {
		conn, err := n.leaderConn(ctx, "AddServer")
		if err != nil {
			return nil, err
		}
		return api.NewAdminClient(conn).AddServer(ctx, req)
	}
	if n.raftAdmit != nil {
		defer n.raftAdmit.adding(req.Id)()
	}
	f := n.raft.AddVoter(raft.ServerID(req.Id), raft.ServerAddress(req.RaftAddr), 0, n.cfg.Raft.ApplyTimeout)
	if err := f.Error(); err != nil {
		return nil, n.raftError("AddServer", err)
	}
	_, idx, err := n.propose(ctx, "AddServer", fsm.CmdSetMember, &api.SetMemberCommand{Member: &api.Member{
		Id: req.Id, RaftAddr: req.RaftAddr, GrpcAddr: req.GrpcAddr, HttpAddr: req.HttpAddr, Voter: true,
	}})
	if err != nil {
		return nil, err
	}
	n.log.Info("added server", "id", req.Id, "raft", req.RaftAddr)
	return &api.AddServerResponse{Index: idx}, nil
}

func (s *adminService) RemoveServer(ctx context.Context, req *api.RemoveServerRequest) (*api.RemoveServerResponse, error) {
	if req.Id == "" {
		return nil, errs.New(errs.Invalid, "RemoveServer", "", "id is required")
	}
	n := s.n
	if n.raft.State() != raft.Leader {
		conn, err := n.leaderConn(ctx, "RemoveServer")
		if err != nil {
			return nil, err
		}
		return api.NewAdminClient(conn).RemoveServer(ctx, req)
	}
	if !n.isMember(req.Id) {
		return nil, errs.New(errs.NotFound, "RemoveServer", req.Id, "no such server in the Raft configuration")
	}
	// Drop the member entry first, while this node surely still leads.
	if _, _, err := n.propose(ctx, "RemoveServer", fsm.CmdRemoveMember, &api.RemoveMemberCommand{Id: req.Id}); err != nil {
		return nil, err
	}
	f := n.raft.RemoveServer(raft.ServerID(req.Id), 0, n.cfg.Raft.ApplyTimeout)
	if n.raftAdmit != nil {
		defer n.raftAdmit.refresh() // refuse the removed server here at once
	}
	if err := f.Error(); err != nil {
		return nil, n.raftError("RemoveServer", err)
	}
	n.log.Info("removed server", "id", req.Id)
	return &api.RemoveServerResponse{Index: f.Index()}, nil
}

func (n *Namenode) isMember(id string) bool {
	cf := n.raft.GetConfiguration()
	if cf.Error() != nil {
		return false
	}
	for _, s := range cf.Configuration().Servers {
		if string(s.ID) == id {
			return true
		}
	}
	return false
}

func (s *adminService) TransferLeadership(ctx context.Context, req *api.TransferLeadershipRequest) (*api.TransferLeadershipResponse, error) {
	n := s.n
	if n.raft.State() != raft.Leader {
		conn, err := n.leaderConn(ctx, "TransferLeadership")
		if err != nil {
			return nil, err
		}
		return api.NewAdminClient(conn).TransferLeadership(ctx, req)
	}
	var f raft.Future
	if req.Id == "" {
		f = n.raft.LeadershipTransfer()
	} else {
		addr, ok := n.memberRaftAddr(req.Id)
		if !ok {
			return nil, errs.New(errs.NotFound, "TransferLeadership", req.Id, "no such server")
		}
		f = n.raft.LeadershipTransferToServer(raft.ServerID(req.Id), raft.ServerAddress(addr))
	}
	if err := f.Error(); err != nil {
		return nil, n.raftError("TransferLeadership", err)
	}
	_, id := n.raft.LeaderWithID()
	return &api.TransferLeadershipResponse{NewLeaderId: string(id)}, nil
}

func (n *Namenode) memberRaftAddr(id string) (string, bool) {
	cf := n.raft.GetConfiguration()
	if cf.Error() != nil {
		return "", false
	}
	for _, s := range cf.Configuration().Servers {
		if string(s.ID) == id {
			return string(s.Address), true
		}
	}
	return "", false
}

// Snapshot takes a Raft snapshot on the node that receives the call. Its
// index and term come from the store's listing: the future's Open would
// read the whole image back to check its CRC only to return them.
func (s *adminService) Snapshot(ctx context.Context, req *api.SnapshotRequest) (*api.SnapshotResponse, error) {
	f := s.n.raft.Snapshot()
	if err := f.Error(); err != nil {
		return nil, errs.Wrap(errs.Precondition, "Snapshot", "", err)
	}
	meta, err := s.n.snaps.Newest()
	if err != nil {
		return nil, errs.Wrap(errs.IO, "Snapshot", "", err)
	}
	return &api.SnapshotResponse{Index: meta.Index, Term: meta.Term}, nil
}

// NamespaceHash answers this node's own digest of the replicated state at
// its applied index; it is never forwarded.
func (s *adminService) NamespaceHash(ctx context.Context, req *api.NamespaceHashRequest) (*api.NamespaceHashResponse, error) {
	idx, h := s.n.fsm.HashAt()
	return &api.NamespaceHashResponse{AppliedIndex: idx, Hash: h[:], ServedBy: s.n.cfg.ID}, nil
}

// Revoke and Unrevoke change the replicated deny list (fsm/revoke.go),
// stamped with the caller and this node's clock; ListRevoked lists it.
func (s *adminService) Revoke(ctx context.Context, req *api.RevokeRequest) (*api.RevokeResponse, error) {
	return s.revoke(ctx, "Revoke", fsm.CmdRevoke, req.GetEntry())
}

func (s *adminService) Unrevoke(ctx context.Context, req *api.UnrevokeRequest) (*api.RevokeResponse, error) {
	return s.revoke(ctx, "Unrevoke", fsm.CmdUnrevoke, req.GetEntry())
}

func (s *adminService) revoke(ctx context.Context, op string, t fsm.CmdType, e *api.RevokedEntry) (*api.RevokeResponse, error) {
	caller, _ := security.IdentityFromContext(ctx)
	msg, err := fsm.RevokeCommand(t, e, caller.String(), time.Now())
	if err != nil {
		return nil, errs.WithOp(err, op)
	}
	_, idx, err := s.n.propose(ctx, op, t, msg)
	if err != nil {
		return nil, err
	}
	s.n.log.Warn("deny list changed", "op", op, "entry", msg, "by", caller.String())
	return &api.RevokeResponse{Index: idx}, nil
}

func (s *adminService) ListRevoked(context.Context, *api.ListRevokedRequest) (*api.ListRevokedResponse, error) {
	return &api.ListRevokedResponse{Entries: s.n.fsm.Revoked()}, nil
}

// internalService implements api.NamenodeInternalServer (namenode to
// namenode only).
type internalService struct {
	api.UnimplementedNamenodeInternalServer
	n *Namenode
}

func (s *internalService) Apply(ctx context.Context, req *api.ApplyRequest) (*api.ApplyResponse, error) {
	if s.n.raft.State() != raft.Leader {
		return nil, s.n.raftError("Apply", raft.ErrNotLeader)
	}
	peer, _ := security.IdentityFromContext(ctx)
	data, err := forwardedCommand(req.Command, peer.Name)
	if err != nil {
		return nil, err
	}
	res, idx, err := s.n.applyLocal(ctx, "Apply", data)
	if res == nil {
		if err == nil {
			err = errs.New(errs.Internal, "Apply", "", "no result")
		}
		return nil, err
	}
	b, merr := proto.Marshal(res)
	if merr != nil {
		return nil, errs.Wrap(errs.Internal, "Apply", "", merr)
	}
	return &api.ApplyResponse{Result: b, Index: idx}, nil
}

// forwardedCommand checks a command that namenode peer forwarded to the
// leader and returns the entry to propose. The authorizer has checked that
// peer is a member namenode; this checks what a member may ask for: no
// batches (the leader forms them), no key pruning, member removal or
// admin state (the leader's own work; an admin state must pass the
// leader's block-map checks), its own member entry only, and only its own signing
// keys, which the leader stamps with peer as the proposer.
func forwardedCommand(data []byte, peer string) ([]byte, error) {
	const op = "Apply"
	t, msg, err := fsm.Decode(data)
	if err != nil {
		return nil, errs.WithOp(err, op)
	}
	switch t {
	case fsm.CmdBatch, fsm.CmdPruneKeys, fsm.CmdRemoveMember, fsm.CmdSetAdminState:
		return nil, errs.Newf(errs.Permission, op, "", "command type %d is the leader's own and is not taken from %s", t, peer)
	case fsm.CmdSetMember:
		if id := msg.(*api.SetMemberCommand).GetMember().GetId(); id != peer {
			return nil, errs.Newf(errs.Permission, op, id, "namenode %s may only register itself", peer)
		}
	case fsm.CmdRegisterKey:
		c := msg.(*api.RegisterKeyCommand)
		var pk security.PublicKey
		if err := pk.UnmarshalBinary(c.PublicKey); err != nil {
			return nil, errs.Wrap(errs.Invalid, op, "", err)
		}
		if owner := security.KeyOwner(pk.KID); owner != peer {
			return nil, errs.Newf(errs.Permission, op, pk.KID, "namenode %s may only publish its own keys, not namenode %q's", peer, owner)
		}
		c.Proposer = peer // the FSM checks it again
		return fsm.Encode(t, c)
	}
	return data, nil
}

func (s *internalService) ReadIndex(ctx context.Context, req *api.ReadIndexRequest) (*api.ReadIndexResponse, error) {
	if s.n.raft.State() != raft.Leader {
		return nil, s.n.raftError("ReadIndex", raft.ErrNotLeader)
	}
	idx, err := s.n.leaderReadIndex(ctx, "ReadIndex")
	if err != nil {
		return nil, err
	}
	return &api.ReadIndexResponse{Index: idx}, nil
}

// SafeMode answers the leader's safe mode, entering or leaving it first
// if asked; a follower forwards to the leader, whose mode is the one that
// refuses writes.
func (s *adminService) SafeMode(ctx context.Context, req *api.SafeModeRequest) (*api.SafeModeResponse, error) {
	if s.n.raft.State() != raft.Leader {
		conn, err := s.n.leaderConn(ctx, "SafeMode")
		if err != nil {
			return nil, err
		}
		return api.NewAdminClient(conn).SafeMode(ctx, req)
	}
	switch req.Action {
	case api.SafeModeAction_SAFE_MODE_ENTER:
		s.n.safe.Enter(true)
	case api.SafeModeAction_SAFE_MODE_LEAVE:
		s.n.safe.Leave()
	}
	if req.Action != api.SafeModeAction_SAFE_MODE_GET {
		caller, _ := security.IdentityFromContext(ctx)
		s.n.log.Warn("safe mode set by hand", "action", req.Action.String(), "by", caller.String())
	}
	s.n.updateSafeMode()
	st := s.n.SafeMode()
	return &api.SafeModeResponse{On: st.On, Manual: st.Manual, Message: st.Message,
		SafeBlocks: uint64(st.Counts.Safe), TotalBlocks: uint64(st.Counts.Total), ServedBy: s.n.cfg.ID}, nil
}
