package namenode

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/blocks"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/leases"
	"github.com/blockfs/blockfs/namenode/fsm"
	"github.com/blockfs/blockfs/namenode/locreply"
	"github.com/blockfs/blockfs/namespace"
	"github.com/blockfs/blockfs/security"
)

// The leader's side of leases: the client calls (renew, recover, fsync,
// pipeline updates), the datanode's report of a finished recovery, the
// recovery commands handed to primaries in heartbeat replies, and the
// monitor that recovers files whose holder passed the hard limit.

// recoveryQueue remembers which recovery (by its id) the leader already
// sent to its primary, so each goes out once per leader term; a recovery
// that stalls is restarted by the monitor with a new id.
type recoveryQueue struct {
	mu   sync.Mutex
	sent map[namespace.ID]uint64
}

func (s *clientService) RenewLease(ctx context.Context, req *api.RenewLeaseRequest) (*api.RenewLeaseResponse, error) {
	res, idx, err := s.n.propose(ctx, "RenewLease", fsm.CmdRenewLease, &api.RenewLeaseCommand{Caller: s.n.caller(ctx), NowUnixMs: s.n.nowMs()})
	if err != nil {
		return nil, err
	}
	return &api.RenewLeaseResponse{Header: s.n.writeHeader(idx), Files: res.GetFiles()}, nil
}

func (s *clientService) RecoverLease(ctx context.Context, req *api.RecoverLeaseRequest) (resp *api.RecoverLeaseResponse, err error) {
	defer func() { s.n.audited(ctx, "recoverLease", req.Path, "", nil, err) }()
	p, err := parsePath("RecoverLease", req.Path)
	if err != nil {
		return nil, err
	}
	c := s.n.caller(ctx)
	res, idx, err := s.n.startRecovery(ctx, "RecoverLease", c, p, 0)
	if err != nil {
		return nil, err
	}
	if res.GetRecoveryId() != 0 {
		s.n.met.recoveries.WithLabelValues("client").Inc()
	}
	return &api.RecoverLeaseResponse{Header: s.n.writeHeader(idx), Closed: res.GetClosed(), RecoveryId: res.GetRecoveryId()}, nil
}

// startRecovery proposes recovery of file p (or, for the system, inode
// id), choosing the primary among the last block's expected locations: the
// datanodes of its recorded pipeline (AddBlock, UpdatePipeline), in
// pipeline order, never a datanode that merely reported the block (HDFS
// chooses among the expected locations too). The primary is the one after
// the previous primary, so a restarted recovery moves on. Only when this
// namenode knows no pipeline for the block (it was written before the
// snapshot this namenode restored) does it fall back to every datanode
// that may hold it; the FSM's floor at the durable length still holds
// then. op names the operation that asked: RecoverLease, or the Create or
// Append that took the file over.
func (n *Namenode) startRecovery(ctx context.Context, op string, c *api.Caller, p namespace.Path, id namespace.ID) (*api.CommandResult, uint64, error) {
	cmd := &api.RecoverLeaseCommand{Caller: c, Path: p.String(), InodeId: uint64(id), NowUnixMs: n.nowMs(),
		SoftLimitMs: n.cfg.Leases.SoftLimit.Milliseconds(), System: c == nil}
	var last *namespace.Block
	prev := ""
	n.fsm.View(func(r fsm.Reader) {
		if c != nil {
			if fi, err := r.Stat(p); err == nil && !fi.IsDir {
				id = fi.ID
			}
		}
		if _, bs, ok := r.FileByID(id); ok && len(bs) > 0 {
			b := bs[len(bs)-1]
			last = &b
		}
		if rec, ok := r.Recovering(id); ok {
			prev = rec.Primary
			if rec.CopyFrom.ID != 0 {
				last = &rec.CopyFrom // the copy's replicas come from its source's
			}
		}
	})
	if last != nil {
		cmd.Replicas = n.recoveryCandidates(last.ID)
		if k := len(cmd.Replicas); k > 0 {
			i := slices.Index(cmd.Replicas, prev) + 1 // 0 when prev is none of them
			cmd.Primary = cmd.Replicas[i%k]
		}
	}
	return n.propose(ctx, op, fsm.CmdRecoverLease, cmd)
}

// recoveryCandidates returns the datanodes block recovery of block id
// asks: its pipeline in pipeline order, or, when no pipeline is recorded
// here, every live datanode that may hold it, sorted by id.
func (n *Namenode) recoveryCandidates(id uint64) []string {
	ds, known := n.blocks.Pipeline(id)
	if !known {
		ds = n.blocks.WriteTargets(id)
	}
	ids := make([]string, 0, len(ds))
	for _, d := range ds {
		ids = append(ids, d.ID)
	}
	if !known {
		slices.Sort(ids)
	}
	return ids
}

func (s *clientService) Fsync(ctx context.Context, req *api.FsyncRequest) (*api.FsyncResponse, error) {
	if err := validatePath("Fsync", req.Path); err != nil {
		return nil, err
	}
	if req.InodeId == 0 || req.Block == nil {
		return nil, errs.New(errs.Invalid, "Fsync", req.Path, "inode_id and block are required")
	}
	_, idx, err := s.n.propose(ctx, "Fsync", fsm.CmdFsync, &api.FsyncCommand{Caller: s.n.caller(ctx), Path: req.Path, InodeId: req.InodeId, Block: req.Block})
	if err != nil {
		return nil, err
	}
	return &api.FsyncResponse{Header: s.n.writeHeader(idx)}, nil
}

func (s *clientService) UpdateBlockForPipeline(ctx context.Context, req *api.UpdateBlockForPipelineRequest) (*api.UpdateBlockForPipelineResponse, error) {
	const op = "UpdateBlockForPipeline"
	if err := validatePath(op, req.Path); err != nil {
		return nil, err
	}
	if req.InodeId == 0 || req.Block == nil {
		return nil, errs.New(errs.Invalid, op, req.Path, "inode_id and block are required")
	}
	c := s.n.caller(ctx)
	res, idx, err := s.n.propose(ctx, op, fsm.CmdUpdateBlockForPipeline, &api.UpdateBlockForPipelineCommand{Caller: c, Path: req.Path, InodeId: req.InodeId, Block: req.Block})
	if err != nil {
		return nil, err
	}
	// The FSM gave the stamp only to the file's writer.
	tok, err := s.n.issuer.WriteToken(c.User, req.InodeId, res.Block.Id, res.Block.GenStamp)
	if err != nil {
		return nil, err
	}
	return &api.UpdateBlockForPipelineResponse{Header: s.n.writeHeader(idx), Block: res.Block, Token: tok}, nil
}

func (s *clientService) UpdatePipeline(ctx context.Context, req *api.UpdatePipelineRequest) (*api.UpdatePipelineResponse, error) {
	const op = "UpdatePipeline"
	if err := validatePath(op, req.Path); err != nil {
		return nil, err
	}
	if req.InodeId == 0 || req.OldBlock == nil || req.NewBlock == nil {
		return nil, errs.New(errs.Invalid, op, req.Path, "inode_id, old_block and new_block are required")
	}
	if len(req.Datanodes) == 0 || len(req.Datanodes) > namespace.MaxReplication {
		return nil, errs.Newf(errs.Invalid, op, req.Path, "%d datanodes: want 1..%d", len(req.Datanodes), namespace.MaxReplication)
	}
	_, idx, err := s.n.propose(ctx, op, fsm.CmdUpdatePipeline, &api.UpdatePipelineCommand{Caller: s.n.caller(ctx), Path: req.Path, InodeId: req.InodeId,
		OldBlock: req.OldBlock, NewBlock: req.NewBlock, Datanodes: req.Datanodes})
	if err != nil {
		return nil, err
	}
	return &api.UpdatePipelineResponse{Header: s.n.writeHeader(idx)}, nil
}

// CommitBlockSynchronization takes a primary's report of a finished
// recovery; the FSM accepts it only from the primary of the recovery in
// progress.
func (s *datanodeService) CommitBlockSynchronization(ctx context.Context, req *api.CommitBlockSynchronizationRequest) (*api.CommitBlockSynchronizationResponse, error) {
	const op = "CommitBlockSynchronization"
	if req.DatanodeId == "" || req.Block == nil || req.InodeId == 0 {
		return nil, errs.New(errs.Invalid, op, "", "datanode_id, block and inode_id are required")
	}
	if err := s.n.checkDatanodeCaller(ctx, op, req.DatanodeId); err != nil {
		return nil, err
	}
	_, _, err := s.n.propose(ctx, op, fsm.CmdCommitBlockSync, &api.CommitBlockSyncCommand{
		DatanodeId: req.DatanodeId, InodeId: req.InodeId, Block: req.Block, RecoveryId: req.RecoveryId,
		NewLength: req.NewLength, Crc32C: req.Crc32C, DeleteBlock: req.DeleteBlock, MtimeUnixMs: s.n.nowMs(), StoredOn: req.StoredOn,
	})
	if err != nil {
		if k := errs.KindOf(err); k == errs.Permission || k == errs.Precondition {
			s.n.blocks.Refuse(blocks.RefusedRecovery)
		}
		return nil, err
	}
	s.n.log.Info("block recovery committed", "inode", req.InodeId, "block", req.Block.Id, "recovery", req.RecoveryId, "length", req.NewLength, "stored_on", req.StoredOn)
	return &api.CommitBlockSynchronizationResponse{}, nil
}

// recoveryCommands are the recoveries whose primary is datanode id and
// that this leader has not sent yet.
func (n *Namenode) recoveryCommands(id string) []*api.DatanodeCommand {
	var recs map[namespace.ID]leases.Recovery
	n.fsm.View(func(r fsm.Reader) { recs = r.Recoveries() })
	q := &n.recoveries
	var out []*api.DatanodeCommand
	for ino, r := range recs {
		if r.Primary != id {
			continue
		}
		q.mu.Lock()
		done := q.sent[ino] == r.ID
		if !done {
			if q.sent == nil {
				q.sent = map[namespace.ID]uint64{}
			}
			q.sent[ino] = r.ID
		}
		q.mu.Unlock()
		if done {
			continue
		}
		cmd, err := n.recoverCommand(ino, r)
		if err != nil {
			n.log.Warn("cannot issue a recovery token", "inode", ino, "err", err)
			continue
		}
		out = append(out, cmd)
	}
	return out
}

func (n *Namenode) recoverCommand(ino namespace.ID, r leases.Recovery) (*api.DatanodeCommand, error) {
	tok, err := n.issuer.BlockToken(security.RecoverySubject(r.Replicas), uint64(ino), r.Block.ID, r.ID, security.Write)
	if err != nil {
		return nil, err
	}
	rc := &api.RecoverBlockCommand{Block: fsm.ToAPIBlock(r.Block), InodeId: uint64(ino), RecoveryId: r.ID, Token: tok}
	if r.Truncate {
		rc.TruncateLength = &r.Block.Length
	}
	if r.CopyFrom.ID != 0 {
		rc.CopyFrom = fsm.ToAPIBlock(r.CopyFrom)
	}
	for _, id := range r.Replicas {
		if d, ok := n.blocks.Datanode(id); ok && d.State == blocks.Live {
			rc.Replicas = append(rc.Replicas, locreply.DatanodeInfo(d))
		}
	}
	return &api.DatanodeCommand{Command: &api.DatanodeCommand_Recover{Recover: rc}}, nil
}

// leaseLoop is the leader's lease monitor: files whose holder passed the
// hard limit, and recoveries that stalled past the recovery timeout, are
// (re)started.
func (n *Namenode) leaseLoop() {
	n.every(n.cfg.Leases.CheckInterval, func() {
		if n.isReadyLeader() && !n.safe.On() {
			n.checkLeases()
		}
	})
}

func (n *Namenode) checkLeases() {
	now, mono := n.nowMs(), time.Now()
	hard, timeout := n.cfg.Leases.HardLimit.Milliseconds(), n.cfg.Leases.RecoveryTimeout.Milliseconds()
	var due []namespace.ID
	var expired int
	n.fsm.View(func(r fsm.Reader) {
		recs := r.Recoveries()
		holders := r.Holders()
		quiet := n.leaseWatch.Silences(n.raft.CurrentTerm(), holders, mono)
		for _, h := range holders {
			// Past the hard limit by the table's stamps and by this
			// leader's own watch (leases.Watch): a clock ahead of the
			// stamps' recovers nobody.
			if now-h.RenewedMs <= hard || quiet[leases.HolderKey(h)] <= n.cfg.Leases.HardLimit {
				continue
			}
			for _, id := range h.Files {
				if _, ok := recs[id]; !ok {
					due = append(due, id)
				}
			}
		}
		expired = len(due)
		for id, rec := range recs {
			if now-rec.StartedMs > timeout {
				due = append(due, id)
			}
		}
	})
	for i, id := range due {
		why := "hard-limit"
		if i >= expired {
			why = "restart"
		}
		ctx, cancel := context.WithTimeout(context.Background(), n.cfg.Leases.CheckInterval*4)
		res, _, err := n.startRecovery(ctx, "RecoverLease", nil, namespace.Path{}, id)
		cancel()
		if err != nil {
			n.log.Warn("lease recovery did not start", "inode", id, "err", err)
			continue
		}
		n.met.recoveries.WithLabelValues(why).Inc()
		n.log.Info("lease recovery started by the leader", "inode", id, "why", why, "recovery", res.GetRecoveryId(), "closed", res.GetClosed())
	}
}

// proposeTakingOver proposes a create or append (typ, cmd) for caller c
// on path. Refused because another holder's soft limit passed
// (fsm.SoftLimitPassed, a refusal the retry cache does not keep), it
// starts that file's recovery, as HDFS's recoverLeaseInternal does: when
// the recovery closed the file at once (no replica may hold a byte of
// its last block), the command is proposed again and goes on, as HDFS's
// create does; else the caller is told to try again later, and its next
// call, once the recovery closed the file, succeeds.
func (n *Namenode) proposeTakingOver(ctx context.Context, op string, typ fsm.CmdType, cmd proto.Message, c *api.Caller, path namespace.Path) (*api.CommandResult, uint64, error) {
	res, idx, err := n.propose(ctx, op, typ, cmd)
	var e *errs.Error
	if err == nil || !errors.As(err, &e) || e.Kind != errs.Precondition || !strings.HasSuffix(e.Msg, fsm.SoftLimitPassed) {
		return res, idx, err
	}
	rc := proto.Clone(c).(*api.Caller)
	rc.CallId = 0 // the recovery is not the call: the retry cache answers the call's retry
	rec, _, rerr := n.startRecovery(ctx, op, rc, path, 0)
	if rerr != nil {
		return nil, 0, err
	}
	n.met.recoveries.WithLabelValues("client").Inc()
	if rec.GetClosed() {
		return n.propose(ctx, op, typ, cmd)
	}
	return nil, 0, errs.Newf(errs.Precondition, op, path.String(), "%s: Failed to %s %s for user %s because lease recovery is in progress. Try again later. (recovery %d started: the previous writer's soft limit passed)",
		fsm.ExcRecoveryInProgress, strings.ToUpper(op)+"_FILE", path, c.GetUser(), rec.GetRecoveryId())
}
