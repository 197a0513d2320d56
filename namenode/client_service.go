package namenode

import (
	"context"

	"github.com/hashicorp/raft"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/blocks"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/namenode/attrs"
	"github.com/blockfs/blockfs/namenode/fsm"
	"github.com/blockfs/blockfs/namenode/hsnapshot"
	"github.com/blockfs/blockfs/namenode/locreply"
	"github.com/blockfs/blockfs/namespace"
	"github.com/blockfs/blockfs/security"
)

// clientService implements api.ClientServiceServer. Writes become FSM
// commands; reads pass the read barrier and then run under the FSM's read
// lock. The HDFS snapshot methods are the embedded door's (hsnapshot).
type clientService struct {
	*attrsService    // xattrs, times, truncate, defaults (attrs_core.go)
	*snapshotService // HDFS snapshots (hsnapshot_door.go)
	n                *Namenode
}

// The embedded services' names as fields of clientService.
type (
	attrsService    = attrs.Service
	snapshotService = hsnapshot.Service
)

func (s *clientService) Mkdirs(ctx context.Context, req *api.MkdirsRequest) (resp *api.MkdirsResponse, err error) {
	defer func() { s.n.audited(ctx, "mkdirs", req.Path, "", nil, err) }()
	if err := validatePath("Mkdirs", req.Path); err != nil {
		return nil, err
	}
	perm, err := permOrDefault("Mkdirs", req.Path, req.Mode, 0o755)
	if err != nil {
		return nil, err
	}
	_, idx, err := s.n.propose(ctx, "Mkdirs", fsm.CmdMkdirs, &api.MkdirsCommand{
		Caller: s.n.caller(ctx), Path: req.Path, Perm: perm, Parents: req.Parents, MtimeUnixMs: s.n.nowMs(),
	})
	if err != nil {
		return nil, err
	}
	return &api.MkdirsResponse{Header: s.n.writeHeader(idx)}, nil
}

func (s *clientService) Create(ctx context.Context, req *api.CreateRequest) (resp *api.CreateResponse, err error) {
	defer func() { s.n.audited(ctx, "create", req.Path, "", resp.GetStatus(), err) }()
	p, cmd, err := s.n.createCommand(ctx, "Create", req)
	if err != nil {
		return nil, err
	}
	c, repl, bs := cmd.Caller, cmd.Replication, cmd.BlockSize
	red, _ := security.RedirectFromContext(ctx)
	if red.Op == security.RedirectCreate {
		cmd.RedirectNonce, cmd.RedirectExpiresUnixMs = red.Nonce, red.ExpiresAt.UnixMilli()
	}
	var targets []blocks.Datanode
	if req.FirstBlock {
		// No datanode to choose is not the Create's failure: the file is
		// created without a block, and the writer's AddBlock says why.
		targets, _ = s.n.blocks.ChooseTargets(int(repl), bs, nil, red.Datanode)
		cmd.FirstBlockTargets = blocks.IDs(targets)
	}
	res, idx, err := s.n.proposeTakingOver(ctx, "Create", fsm.CmdCreate, cmd, c, p)
	if err != nil {
		return nil, err
	}
	resp = &api.CreateResponse{Header: s.n.writeHeader(idx), Status: res.Status, LeaseSoftLimitMs: s.n.cfg.Leases.SoftLimit.Milliseconds()}
	if res.Block != nil && len(targets) > 0 {
		// The owner who may read the new file gets a token that reads the
		// block too (rw): reading it back then presents a token the
		// pipeline's datanodes have verified already.
		acc := security.Write
		if st := res.Status; st.GetOwner() == c.User && st.GetMode()&0o400 != 0 {
			acc |= security.Read
		}
		if resp.Block, resp.Token, err = s.n.locatedWriteBlock(c.User, res.Status.GetInodeId(), res.Block, res.Offset, targets, acc); err != nil {
			return nil, err
		}
		resp.BytesPerChecksum = s.n.cfg.Namespace.BytesPerChecksum
	}
	return resp, nil
}

// createCommand checks a Create's arguments (op's, for PrepareFile and
// PutFile too) and returns the command that creates the file, defaults
// filled in.
func (n *Namenode) createCommand(ctx context.Context, op string, req *api.CreateRequest) (namespace.Path, *api.CreateCommand, error) {
	p, err := parsePath(op, req.GetPath())
	if err != nil {
		return p, nil, err
	}
	perm, err := permOrDefault(op, req.Path, req.Mode, 0o644)
	if err != nil {
		return p, nil, err
	}
	repl, bs := req.Replication, req.BlockSize
	if repl == 0 {
		repl = n.cfg.Namespace.DefaultReplication
	}
	if bs == 0 {
		bs = n.cfg.Namespace.DefaultBlockSize
	}
	if msg := n.cfg.Namespace.BlockSizeProblem(bs); msg != "" {
		return p, nil, errs.Newf(errs.Invalid, op, req.Path, "block size %d is %s", bs, msg)
	}
	return p, &api.CreateCommand{
		Caller: n.caller(ctx), Path: req.Path, Perm: perm, Overwrite: req.Overwrite,
		CreateParent: req.CreateParent, Replication: repl, BlockSize: bs, MtimeUnixMs: n.nowMs(),
		SoftLimitMs: n.cfg.Leases.SoftLimit.Milliseconds(),
	}, nil
}

// locatedWriteBlock is a block the FSM gave the file's writer, with its
// pipeline and the write token for it.
func (n *Namenode) locatedWriteBlock(user string, inode uint64, b *api.Block, offset uint64, targets []blocks.Datanode, acc security.Access) (*api.LocatedBlock, []byte, error) {
	lb := &api.LocatedBlock{Block: b, Offset: offset}
	for _, d := range targets {
		lb.Locations = append(lb.Locations, locreply.DatanodeInfo(d))
	}
	tok, err := n.issuer.BlockToken(user, inode, b.Id, b.GenStamp, acc)
	if err != nil {
		return nil, nil, err
	}
	return lb, tok, nil
}

func (s *clientService) AddBlock(ctx context.Context, req *api.AddBlockRequest) (*api.AddBlockResponse, error) {
	const op = "AddBlock"
	p, err := parsePath(op, req.Path)
	if err != nil {
		return nil, err
	}
	if req.InodeId == 0 {
		return nil, errs.New(errs.Invalid, op, req.Path, "inode_id is required")
	}
	// Choose the pipeline before allocating, so a cluster with no
	// datanodes fails without leaving an empty block behind.
	c := s.n.caller(ctx)
	info, err := s.statLocal(c, op, p)
	if errs.Is(err, errs.NotFound) {
		// This node may lag the create (a client that moved to it after a
		// leader change, a node catching up after a restart): catch up to
		// the leader's read index and look again.
		if berr := s.n.readBarrier(ctx, op, nil); berr == nil {
			info, err = s.statLocal(c, op, p)
		}
	}
	if err != nil {
		return nil, err
	}
	// A WebHDFS datanode writing for a user is the writer: its replica first.
	red, _ := security.RedirectFromContext(ctx)
	targets, err := s.n.blocks.ChooseTargets(int(info.Replication), info.BlockSize, req.ExcludeNodes, red.Datanode)
	if err != nil {
		if cerr := s.n.checkCapacity(req.Path, info.BlockSize); cerr != nil {
			return nil, cerr
		}
		return nil, err
	}
	res, idx, err := s.n.propose(ctx, op, fsm.CmdAddBlock, &api.AddBlockCommand{
		Caller: c, Path: req.Path, InodeId: req.InodeId, Previous: req.Previous, MtimeUnixMs: s.n.nowMs(), Targets: blocks.IDs(targets),
	})
	if err != nil {
		return nil, err
	}
	// The FSM gave out the block only to the file's writer.
	lb, tok, err := s.n.locatedWriteBlock(c.User, req.InodeId, res.Block, res.Offset, targets, security.Write)
	if err != nil {
		return nil, err
	}
	return &api.AddBlockResponse{Header: s.n.writeHeader(idx), Block: lb, Token: tok, BytesPerChecksum: s.n.cfg.Namespace.BytesPerChecksum}, nil
}

// checkCapacity refuses (Precondition) a block of blockSize bytes for file
// p when live datanodes exist and none of them could ever hold it: its
// capacity, not only its free space, is smaller. The client does not
// retry that, where "no datanode with space" (Unavailable) is worth a
// retry. With no live datanode at all it says nothing: they may be
// starting.
func (n *Namenode) checkCapacity(p string, blockSize uint64) error {
	var largest uint64
	live := 0
	for _, d := range n.blocks.Datanodes() {
		if d.State != blocks.Live {
			continue
		}
		live++
		largest = max(largest, d.Capacity)
	}
	if live == 0 || largest >= blockSize {
		return nil
	}
	return errs.Newf(errs.Precondition, "AddBlock", p, "block size %d is larger than the capacity of every live datanode (%d live, the largest holds %d bytes)", blockSize, live, largest)
}

func (s *clientService) Complete(ctx context.Context, req *api.CompleteRequest) (*api.CompleteResponse, error) {
	p, err := parsePath("Complete", req.Path)
	if err != nil {
		return nil, err
	}
	if req.InodeId == 0 {
		return nil, errs.New(errs.Invalid, "Complete", req.Path, "inode_id is required")
	}
	c := s.n.caller(ctx)
	// Wait for the reports only for the file's own writer: anyone else is
	// refused by the FSM at once and must not hold a handler meanwhile.
	if s.isWriter(c, "Complete", p, req.InodeId) {
		if len(req.Blocks) > 0 {
			s.n.acceptReceipts(req.InodeId, req.Blocks[len(req.Blocks)-1], req.Receipts)
		}
		if err := s.n.awaitMinReplication(ctx, "Complete", c.User, req.Path, req.Blocks, false); err != nil {
			return nil, err
		}
	}
	_, idx, err := s.n.propose(ctx, "Complete", fsm.CmdComplete, &api.CompleteCommand{
		Caller: c, Path: req.Path, InodeId: req.InodeId, Blocks: req.Blocks, MtimeUnixMs: s.n.nowMs(),
	})
	if err != nil {
		return nil, err
	}
	out := &api.CompleteResponse{Header: s.n.writeHeader(idx)}
	if req.WantLocations {
		out.Located = s.n.closedLocations(ctx, req.Path, req.InodeId, nil)
	}
	return out, nil
}

// closedLocations is what GetBlockLocations would answer now about the
// file just closed (inode id at p), for a writer that asked for it; nil
// if the caller may not read it. A one-block file whose writer holds a
// token that reads it (PutFile's, checked) gets that token back rather
// than a new signature, except in per-block mode (a token per block).
func (n *Namenode) closedLocations(ctx context.Context, p string, id uint64, tok []byte) *api.GetBlockLocationsResponse {
	user, groups := n.reader(ctx)
	loc, err := n.blockLocations(user, groups, &api.GetBlockLocationsRequest{Path: p})
	if err != nil || loc.InodeId != id {
		return nil
	}
	if tok != nil && len(loc.BlockIds) == 1 && n.cfg.Tokens.Mode != security.PerBlock {
		loc.Token = tok
	} else if n.fillReadTokens(user, loc) != nil {
		return nil
	}
	n.audited(ctx, "open", p, "", nil, nil) // read access handed out, as GetBlockLocations audits it
	return loc
}

// Append reopens a closed file for the caller (the FSM checks w on it
// and that nobody is writing it). The caller's retry of a lost answer is
// answered from the retry cache, not refused as "already being written".
func (s *clientService) Append(ctx context.Context, req *api.AppendRequest) (resp *api.AppendResponse, err error) {
	defer func() { s.n.audited(ctx, "append", req.Path, "", nil, err) }()
	p, err := parsePath("Append", req.Path)
	if err != nil {
		return nil, err
	}
	c := s.n.caller(ctx)
	res, idx, err := s.n.proposeTakingOver(ctx, "Append", fsm.CmdAppend, &api.AppendCommand{
		Caller: c, Path: req.Path, MtimeUnixMs: s.n.nowMs(), NewBlock: req.NewBlock,
		SoftLimitMs: s.n.cfg.Leases.SoftLimit.Milliseconds(),
	}, c, p)
	if err != nil {
		return nil, err
	}
	out := &api.AppendResponse{Header: s.n.writeHeader(idx), Status: res.Status, Blocks: res.Blocks, BytesPerChecksum: s.n.cfg.Namespace.BytesPerChecksum,
		LeaseSoftLimitMs: s.n.cfg.Leases.SoftLimit.Milliseconds()}
	if b := res.GetBlock(); b != nil {
		// The reopened block: its replicas are where the old stamp's are.
		lb := &api.LocatedBlock{Block: b, Offset: res.Status.GetLength() - b.Length}
		for _, d := range s.n.blocks.WriteTargets(b.Id) {
			lb.Locations = append(lb.Locations, locreply.DatanodeInfo(d))
		}
		tok, err := s.n.issuer.WriteToken(c.User, res.Status.GetInodeId(), b.Id, b.GenStamp)
		if err != nil {
			return nil, err
		}
		out.LastBlock, out.Token = lb, tok
	}
	return out, nil
}

func (s *clientService) AbandonBlock(ctx context.Context, req *api.AbandonBlockRequest) (*api.AbandonBlockResponse, error) {
	if err := validatePath("AbandonBlock", req.Path); err != nil {
		return nil, err
	}
	if req.InodeId == 0 || req.Block == nil || req.Block.Id == 0 {
		return nil, errs.New(errs.Invalid, "AbandonBlock", req.Path, "inode_id and block are required")
	}
	_, idx, err := s.n.propose(ctx, "AbandonBlock", fsm.CmdAbandonBlock, &api.AbandonBlockCommand{
		Caller: s.n.caller(ctx), Path: req.Path, InodeId: req.InodeId, Block: req.Block,
	})
	if err != nil {
		return nil, err
	}
	return &api.AbandonBlockResponse{Header: s.n.writeHeader(idx)}, nil
}

func (s *clientService) Delete(ctx context.Context, req *api.DeleteRequest) (resp *api.DeleteResponse, err error) {
	defer func() { s.n.audited(ctx, "delete", req.Path, "", nil, err) }()
	if err := validatePath("Delete", req.Path); err != nil {
		return nil, err
	}
	_, idx, err := s.n.propose(ctx, "Delete", fsm.CmdDelete, &api.DeleteCommand{
		Caller: s.n.caller(ctx), Path: req.Path, Recursive: req.Recursive, MtimeUnixMs: s.n.nowMs(),
	})
	if err != nil {
		return nil, err
	}
	return &api.DeleteResponse{Header: s.n.writeHeader(idx), Deleted: true}, nil
}

func (s *clientService) Rename(ctx context.Context, req *api.RenameRequest) (resp *api.RenameResponse, err error) {
	defer func() { s.n.audited(ctx, "rename", req.Src, req.Dst, nil, err) }()
	if err := validatePath("Rename", req.Src); err != nil {
		return nil, err
	}
	if err := validatePath("Rename", req.Dst); err != nil {
		return nil, err
	}
	_, idx, err := s.n.propose(ctx, "Rename", fsm.CmdRename, &api.RenameCommand{
		Caller: s.n.caller(ctx), Src: req.Src, Dst: req.Dst, MtimeUnixMs: s.n.nowMs(),
		Exact: req.Exact, Overwrite: req.Overwrite,
	})
	if err != nil {
		return nil, err
	}
	return &api.RenameResponse{Header: s.n.writeHeader(idx)}, nil
}

func (s *clientService) GetFileInfo(ctx context.Context, req *api.GetFileInfoRequest) (resp *api.GetFileInfoResponse, err error) {
	defer func() { s.n.audited(ctx, "getfileinfo", req.Path, "", nil, err) }()
	const op = "GetFileInfo"
	p, err := parsePath(op, req.Path)
	if err != nil {
		return nil, err
	}
	if err := s.n.readBarrier(ctx, op, req.Read); err != nil {
		return nil, err
	}
	var fi namespace.FileInfo
	s.n.fsm.View(func(r fsm.Reader) {
		var ns fsm.ReadSession
		if ns, err = r.As(s.n.readCaller(ctx), op, req.Path); err == nil {
			fi, err = ns.Stat(p)
		}
	})
	if err != nil {
		return nil, err
	}
	return &api.GetFileInfoResponse{Header: s.n.header(), Status: fsm.ToFileStatus(fi)}, nil
}

func (s *clientService) ListStatus(ctx context.Context, req *api.ListStatusRequest) (resp *api.ListStatusResponse, err error) {
	defer func() { s.n.audited(ctx, "listStatus", req.Path, "", nil, err) }()
	const op = "ListStatus"
	p, err := parsePath(op, req.Path)
	if err != nil {
		return nil, err
	}
	limit := int(req.Limit)
	if limit <= 0 || limit > s.n.cfg.Namespace.MaxListPage {
		limit = s.n.cfg.Namespace.MaxListPage
	}
	if err := s.n.readBarrier(ctx, op, req.Read); err != nil {
		return nil, err
	}
	var entries []namespace.FileInfo
	var more bool
	s.n.fsm.View(func(r fsm.Reader) {
		var ns fsm.ReadSession
		if ns, err = r.As(s.n.readCaller(ctx), op, req.Path); err == nil {
			entries, more, err = ns.List(p, req.StartAfter, limit)
		}
	})
	if err != nil {
		return nil, err
	}
	out := &api.ListStatusResponse{Header: s.n.header(), HasMore: more, Entries: make([]*api.FileStatus, len(entries))}
	for i, fi := range entries {
		out.Entries[i] = fsm.ToFileStatus(fi)
	}
	return out, nil
}

func (s *clientService) SetPermission(ctx context.Context, req *api.SetPermissionRequest) (resp *api.SetPermissionResponse, err error) {
	defer func() { s.n.audited(ctx, "setPermission", req.Path, "", nil, err) }()
	if err := validatePath("SetPermission", req.Path); err != nil {
		return nil, err
	}
	if req.Mode&^0o1777 != 0 {
		return nil, errs.Newf(errs.Invalid, "SetPermission", req.Path, "mode %#o has bits outside 01777", req.Mode)
	}
	_, idx, err := s.n.propose(ctx, "SetPermission", fsm.CmdSetPermission, &api.SetPermissionCommand{
		Caller: s.n.caller(ctx), Path: req.Path, Perm: req.Mode, MtimeUnixMs: s.n.nowMs(),
	})
	if err != nil {
		return nil, err
	}
	return &api.SetPermissionResponse{Header: s.n.writeHeader(idx)}, nil
}

func (s *clientService) SetOwner(ctx context.Context, req *api.SetOwnerRequest) (resp *api.SetOwnerResponse, err error) {
	defer func() { s.n.audited(ctx, "setOwner", req.Path, "", nil, err) }()
	if err := validatePath("SetOwner", req.Path); err != nil {
		return nil, err
	}
	if req.Owner == "" && req.Group == "" {
		return nil, errs.New(errs.Invalid, "SetOwner", req.Path, "owner or group is required")
	}
	_, idx, err := s.n.propose(ctx, "SetOwner", fsm.CmdSetOwner, &api.SetOwnerCommand{
		Caller: s.n.caller(ctx), Path: req.Path, Owner: req.Owner, Group: req.Group,
	})
	if err != nil {
		return nil, err
	}
	return &api.SetOwnerResponse{Header: s.n.writeHeader(idx)}, nil
}

func (s *clientService) SetQuota(ctx context.Context, req *api.SetQuotaRequest) (resp *api.SetQuotaResponse, err error) {
	defer func() { s.n.audited(ctx, "setQuota", req.Path, "", nil, err) }()
	if err := validatePath("SetQuota", req.Path); err != nil {
		return nil, err
	}
	_, idx, err := s.n.propose(ctx, "SetQuota", fsm.CmdSetQuota, &api.SetQuotaCommand{
		Caller: s.n.caller(ctx), Path: req.Path, NamespaceQuota: req.NamespaceQuota, SpaceQuota: req.SpaceQuota,
	})
	if err != nil {
		return nil, err
	}
	return &api.SetQuotaResponse{Header: s.n.writeHeader(idx)}, nil
}

func (s *clientService) GetContentSummary(ctx context.Context, req *api.GetContentSummaryRequest) (resp *api.GetContentSummaryResponse, err error) {
	defer func() { s.n.audited(ctx, "contentSummary", req.Path, "", nil, err) }()
	resp = &api.GetContentSummaryResponse{}
	if err = s.n.readBarrier(ctx, "GetContentSummary", req.Read); err == nil {
		resp.Summary, err = s.n.fsm.ContentSummary(s.n.readCaller(ctx), "GetContentSummary", req.Path)
	}
	resp.Header = s.n.header()
	return resp, err
}

func (s *clientService) GetQuotaUsage(ctx context.Context, req *api.GetQuotaUsageRequest) (resp *api.GetQuotaUsageResponse, err error) {
	defer func() { s.n.audited(ctx, "quotaUsage", req.Path, "", nil, err) }()
	resp = &api.GetQuotaUsageResponse{}
	if err = s.n.readBarrier(ctx, "GetQuotaUsage", req.Read); err == nil {
		resp.Usage, err = s.n.fsm.QuotaUsage(s.n.readCaller(ctx), "GetQuotaUsage", req.Path)
	}
	resp.Header = s.n.header()
	return resp, err
}

func (s *clientService) ReportBadBlocks(ctx context.Context, req *api.ReportBadBlocksRequest) (*api.ReportBadBlocksResponse, error) {
	return s.n.reportBadBlocks(ctx, req) // blockmap.go: trusted only from the datanode itself
}

func (s *clientService) ClusterStatus(ctx context.Context, req *api.ClusterStatusRequest) (*api.ClusterStatusResponse, error) {
	return s.n.clusterStatus(ctx)
}

// statLocal stats a path from local state as caller c for op (used to
// size a pipeline; the FSM re-checks everything when the command applies).
func (s *clientService) statLocal(c *api.Caller, op string, p namespace.Path) (fi namespace.FileInfo, err error) {
	s.n.fsm.View(func(r fsm.Reader) {
		var ns fsm.ReadSession
		if ns, err = r.As(c, op, p.String()); err == nil {
			fi, err = ns.Stat(p)
		}
	})
	return fi, err
}

// isWriter reports whether c holds p (inode id) open for writing, as this
// namenode sees it.
func (s *clientService) isWriter(c *api.Caller, op string, p namespace.Path, id uint64) bool {
	info, err := s.statLocal(c, op, p)
	if err != nil || uint64(info.ID) != id || info.State != namespace.UnderConstruction {
		return false
	}
	w := info.Writer
	return w.User == c.User && (w.Client == "" || w.Client == c.ClientId)
}

func (n *Namenode) writeHeader(idx uint64) *api.ResponseHeader {
	h := &api.ResponseHeader{AppliedIndex: idx, ServedBy: n.cfg.ID}
	if n.raft.State() != raft.Leader {
		h.Leader = n.leaderGRPC() // the write was forwarded there
	}
	return h
}

// parsePath parses p, a request's path, for op: the one validation a path
// gets on its way in (the FSM parses a command's path again when it
// applies it: the log is input too). Its errors name op.
func parsePath(op, p string) (namespace.Path, error) {
	pp, err := namespace.ParsePath(p)
	if err != nil {
		return namespace.Path{}, errs.WithOp(err, op)
	}
	return pp, nil
}

// validatePath is parsePath for a handler that only forwards the path (in
// a command the FSM parses when it applies it).
func validatePath(op, p string) error {
	_, err := parsePath(op, p)
	return err
}

func permOrDefault(op, p string, mode, def uint32) (uint32, error) {
	if mode == 0 {
		return def, nil
	}
	if mode&^0o1777 != 0 {
		return 0, errs.Newf(errs.Invalid, op, p, "mode %#o has bits outside 01777", mode)
	}
	return mode, nil
}
