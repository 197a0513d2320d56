package namenode

import (
	"context"
	"time"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/namenode/fsm"
	"github.com/blockfs/blockfs/namenode/idrange"
	"github.com/blockfs/blockfs/namenode/locreply"
	"github.com/blockfs/blockfs/security"
)

const (
	maxWriting   = 32   // the most datanodes a PutFile names as still writing its block: more than any replication
	reserveBatch = 1024 // how many files' ids one ReserveIds entry reserves
	// maxPrepare bounds the files one PrepareFile prepares: each costs a
	// placement, and a token of the caller's write rate as a Create does.
	maxPrepare = 16
)

// PrepareFile hands out one-block files' ids from this namenode's
// reservation (no Raft entry but one per reserveBatch files), chooses each
// block's datanodes and signs its write token: the first half of a file
// made in one Raft entry (ARCHITECTURE.md, "A small file in one Raft
// entry"). Nothing is created: the FSM decides at PutFile.
func (s *clientService) PrepareFile(ctx context.Context, req *api.PrepareFileRequest) (*api.PrepareFileResponse, error) {
	const op = "PrepareFile"
	_, cmd, err := s.n.createCommand(ctx, op, req.GetCreate())
	if err != nil {
		return nil, err
	}
	if req.Count > maxPrepare {
		return nil, errs.Newf(errs.Invalid, op, cmd.Path, "count %d: at most %d files a call", req.Count, maxPrepare)
	}
	if s.n.safe.On() {
		return nil, s.n.safe.Refuse(op, s.n.cfg.Now())
	}
	if err := s.n.admit.Charge(cmd.Caller.User, int(req.Count)-1, api.ClientService_PrepareFile_FullMethodName); err != nil {
		return nil, err
	}
	acc := security.Write
	if cmd.Perm&0o400 != 0 { // the caller will own the file: the token reads it back too, as Create's
		acc |= security.Read
	}
	out := &api.PrepareFileResponse{Header: s.n.writeHeader(0), BytesPerChecksum: s.n.cfg.Namespace.BytesPerChecksum, BlockSize: cmd.BlockSize,
		MinReplication: uint32(s.n.cfg.Namespace.MinReplication)}
	for want := uint64(max(req.Count, 1)); uint64(len(out.Files)) < want; {
		// A run of consecutive ids shares one token (its bn claim): the
		// datanodes verify one signature for all its files.
		ids, err := s.n.ids.Next(ctx, want-uint64(len(out.Files)))
		if err != nil {
			return nil, errs.WithOp(err, op)
		}
		tok, err := s.n.issuer.FilesToken(cmd.Caller.User, ids.Inode, ids.Block, ids.GenStamp, ids.Count, acc)
		if err == nil {
			err = s.n.tickets.Remember(tok) // this namenode's PutFile of it: no signature check
		}
		if err != nil {
			return nil, err
		}
		for i := range ids.Count {
			targets, err := s.n.blocks.ChooseTargets(int(cmd.Replication), cmd.BlockSize, nil, "")
			if err != nil {
				if cerr := s.n.checkCapacity(cmd.Path, cmd.BlockSize); cerr != nil {
					return nil, cerr
				}
				return nil, err
			}
			lb := &api.LocatedBlock{Block: &api.Block{Id: ids.Block + i, GenStamp: ids.GenStamp}}
			for _, d := range targets {
				lb.Locations = append(lb.Locations, locreply.DatanodeInfo(d))
			}
			out.Files = append(out.Files, &api.PreparedFile{InodeId: ids.Inode + i, Block: lb, Token: tok})
		}
	}
	return out, nil
}

// PutFile creates a file PrepareFile prepared, complete with its block,
// in one Raft entry. The write token proves the ids: it is checked as a
// datanode checks it, and must name the caller. The block's replicas are
// counted as Complete counts them (receipts, then reports).
func (s *clientService) PutFile(ctx context.Context, req *api.PutFileRequest) (resp *api.PutFileResponse, err error) {
	const op = "PutFile"
	defer func() { s.n.audited(ctx, "create", req.GetCreate().GetPath(), "", resp.GetStatus(), err) }()
	p, cmd, err := s.n.createCommand(ctx, op, req.GetCreate())
	if err != nil {
		return nil, err
	}
	b := req.GetBlock()
	if b == nil || b.Crc32C == nil || req.InodeId == 0 {
		return nil, errs.New(errs.Invalid, op, cmd.Path, "inode_id and the block with its length and CRC32C are required")
	}
	cl, err := s.n.tickets.Verify(req.Token, security.Request{Inode: req.InodeId, BlockID: b.Id, GenStamp: b.GenStamp, Access: security.Write})
	switch {
	case err != nil:
		return nil, errs.WithOp(err, op)
	case !cl.HasBlock || cl.User != cmd.Caller.User:
		return nil, errs.New(errs.Permission, op, cmd.Path, "the write token is not the one PrepareFile gave this user for this file")
	}
	deadline := s.n.putDeadline(cl)
	if cmd.MtimeUnixMs > deadline.UnixMilli() {
		return nil, errs.Newf(errs.Permission, op, cmd.Path, "the file was prepared too long ago (PutFile is taken until %s); prepare it again", deadline.UTC().Format(time.RFC3339))
	}
	if err := s.n.fsm.CheckReserved(cmd.Caller, op, cmd.Path, req.InodeId, b.Id, b.GenStamp, cmd.MtimeUnixMs); err != nil {
		return nil, err
	}
	s.n.acceptReceipts(req.InodeId, b, req.Receipts)
	if err := s.n.awaitMinReplication(ctx, op, cmd.Caller.User, cmd.Path, []*api.Block{b}, true); err != nil {
		return nil, err
	}
	// Replicas still being written count as on their way from the apply on
	// (not this call's return), on the leader: it plans replication.
	if s.n.isReadyLeader() {
		s.n.blocks.ExpectReplicas(b.Id, req.Writing[:min(len(req.Writing), maxWriting)])
	}
	res, idx, err := s.n.proposeTakingOver(ctx, op, fsm.CmdPutFile, &api.PutFileCommand{
		Create: cmd, InodeId: req.InodeId, Block: b, TokenExpiresUnixMs: deadline.UnixMilli(),
	}, cmd.Caller, p)
	if err != nil {
		s.n.blocks.DropExpected(b.Id)
		return nil, err
	}
	resp = &api.PutFileResponse{Header: s.n.writeHeader(idx), Status: res.Status}
	if req.WantLocations {
		var readTok []byte // the caller's token reads the file back too when it grants Read
		if cl.Access&security.Read != 0 {
			readTok = req.Token
		}
		resp.Located = s.n.closedLocations(ctx, cmd.Path, req.InodeId, readTok)
	}
	return resp, nil
}

// putDeadline is when the FSM stops taking a PutFile of the file cl's
// token prepared: the token's expiry, or half the unknown-replica grace
// after its issue if that is sooner, so that the leader never deletes the
// replicas of a block, unknown until its PutFile, that a PutFile may
// still make a file of (they were first reported after the issue).
func (n *Namenode) putDeadline(cl security.Claims) time.Time {
	if d := cl.IssuedAt.Add(n.cfg.Blocks.UnknownReplicaGrace / 2); d.Before(cl.ExpiresAt) {
		return d
	}
	return cl.ExpiresAt
}

// reserveIDs reserves the next range of PrepareFile's ids. PutFile may
// use them for two token lifetimes; the cursor stops handing them out one
// lifetime before that, so no token outlives its range.
func (n *Namenode) reserveIDs(ctx context.Context) (idrange.Range, error) {
	now := n.cfg.Now()
	exp := now.Add(2 * n.cfg.Tokens.TokenLifetime)
	res, _, err := n.propose(ctx, "PrepareFile", fsm.CmdReserveIds, &api.ReserveIdsCommand{
		Count: reserveBatch, MtimeUnixMs: now.UnixMilli(), ExpiresUnixMs: exp.UnixMilli(),
	})
	if err != nil {
		return idrange.Range{}, err
	}
	r := res.GetReserved()
	if r.GetCount() == 0 {
		return idrange.Range{}, errs.New(errs.Internal, "PrepareFile", "", "the FSM reserved no ids")
	}
	return idrange.Range{FirstInode: r.FirstInode, FirstBlock: r.FirstBlock, GenStamp: r.GenStamp, Count: r.Count, Expires: exp}, nil
}
