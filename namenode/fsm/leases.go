package fsm

import (
	"errors"
	"fmt"
	"time"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/leases"
	"github.com/blockfs/blockfs/namespace"
)

// The FSM's side of leases (package leases holds the table). Every time
// here is the leader's clock, carried in the command, so every namenode
// decides the same.
//
// Errors name HDFS's exceptions at the start of their message, all as
// errs.Precondition (gRPC FailedPrecondition):
//   - AlreadyBeingCreated: another client holds the file's lease;
//   - RecoveryInProgress: the file's lease is being recovered; retry later;
//   - LeaseExpired: the caller holds no lease on the file (it was
//     recovered, or never held).

// The exceptions' names, as HDFS spells them.
const (
	ExcAlreadyBeingCreated = "AlreadyBeingCreated"
	ExcRecoveryInProgress  = "RecoveryInProgress"
	ExcLeaseExpired        = "LeaseExpired"
)

// SoftLimitPassed ends the AlreadyBeingCreated refusal of a file whose
// holder's soft limit passed: the namenode that hears it starts the
// file's recovery and proposes the command again (HDFS's create takes
// such a file over). Being an invitation to change the state, that
// refusal is the one answer the retry cache does not keep.
const SoftLimitPassed = "whose soft limit passed; its lease is recovered on the next create or append"

// writerOf is the lease holder a command's caller writes as.
func writerOf(c *api.Caller) namespace.Writer {
	if c == nil {
		return namespace.Writer{}
	}
	return namespace.Writer{Client: c.ClientId, User: c.User}
}

// checkTakeover refuses op by caller c on path p (inode id, under
// construction by w) unless c is its writer. The refusal names the
// writer's user, never its client id: a client id is its holder's, and
// another caller who learned it could renew or speak for that lease. softMs is the leader's soft
// limit: past it the message says how to take the file over.
func (f *FSM) checkTakeover(c *api.Caller, op, p string, id namespace.ID, w namespace.Writer, nowMs, softMs int64) error {
	if leases.Key(w) == leases.Key(writerOf(c)) && w.User == c.GetUser() {
		return nil
	}
	// HDFS's wording: "Failed to CREATE_FILE /a for <caller> because ...".
	failed := fmt.Sprintf("Failed to %s %s for user %s because", leaseOp(op), p, c.GetUser())
	if _, ok := f.st.leases.Recovering(id); ok {
		return errs.Newf(errs.Precondition, op, p, "%s: %s lease recovery is in progress. Try again later.", ExcRecoveryInProgress, failed)
	}
	if softMs > 0 && f.st.leases.Expired(id, nowMs, softMs) {
		return errs.Newf(errs.Precondition, op, p, "%s: %s this file lease is currently owned by user %s on another client, %s",
			ExcAlreadyBeingCreated, failed, w.User, SoftLimitPassed)
	}
	return errs.Newf(errs.Precondition, op, p, "%s: %s this file lease is currently owned by user %s on another client, whose lease is current",
		ExcAlreadyBeingCreated, failed, w.User)
}

// leaseOp is HDFS's name of the lease operation of op (errs/hadoop.LeaseOp
// for the FSM's ops, which may not import it).
func leaseOp(op string) string {
	switch op {
	case "Create":
		return "CREATE_FILE"
	case "Append":
		return "APPEND_FILE"
	case "Truncate":
		return "TRUNCATE_FILE"
	}
	return op
}

// notRecovering refuses a writer's call on file id while its lease is
// being recovered: the recovery owns the last block now (HDFS hands the
// lease to the namenode), and a Complete or AddBlock racing it would
// commit a stamp the recovered replicas no longer have.
func (f *FSM) notRecovering(op, p string, id uint64) error {
	if r, ok := f.st.leases.Recovering(namespace.ID(id)); ok {
		return errs.Newf(errs.Precondition, op, p, "%s: the lease is being recovered (recovery %d); the writer no longer holds it", ExcRecoveryInProgress, r.ID)
	}
	return nil
}

// guardUnderConstruction applies checkTakeover when p names a file under
// construction that the caller could write (else the namespace refuses it
// for what it is: a Permission error). Append's; Create asks the same
// through namespace.CreateOpts.UnderConstruction, within its own walk.
func (f *FSM) guardUnderConstruction(c *api.Caller, s namespace.Session, p namespace.Path, nowMs, softMs int64) error {
	fi, err := f.st.tree.As(nil, s.Op()).Stat(p)
	if err != nil || fi.IsDir || fi.State != namespace.UnderConstruction {
		return nil
	}
	if s.CheckWrite(p) != nil {
		return nil
	}
	return f.checkTakeover(c, s.Op(), p.String(), fi.ID, fi.Writer, nowMs, softMs)
}

// pruneLeases drops leases of files no longer under construction by
// their holder (deleted, overwritten, renamed away and closed).
func (f *FSM) pruneLeases() {
	tree := f.st.tree
	f.st.leases.Prune(func(id namespace.ID, holder string) bool {
		w, ok := tree.UnderConstructionBy(id)
		return ok && leases.Key(w) == holder
	})
}

func (f *FSM) applyRenewLease(c *api.RenewLeaseCommand) (*api.CommandResult, error) {
	w := writerOf(c.Caller)
	if w.User == "" {
		return nil, errs.New(errs.Unauthenticated, "RenewLease", "", "the caller has no user name")
	}
	n := f.st.leases.Renew(w, c.NowUnixMs)
	if n == 0 {
		return nil, errs.Newf(errs.Precondition, "RenewLease", "", "%s: client %q (user %s) holds no lease", ExcLeaseExpired, w.Client, w.User)
	}
	return &api.CommandResult{Files: uint32(n)}, nil
}

// applyRecoverLease starts (or restarts) recovery of the file. A file
// whose last block holds nothing is closed at once.
func (f *FSM) applyRecoverLease(c *api.RecoverLeaseCommand) (*api.CommandResult, error) {
	const op = "RecoverLease"
	tree := f.st.tree
	var fi namespace.FileInfo
	if c.System {
		info, _, ok := tree.FileByID(namespace.ID(c.InodeId))
		if !ok {
			return nil, errs.Newf(errs.NotFound, op, c.Path, "inode %d not found", c.InodeId)
		}
		fi = info
	} else {
		s, p, err := f.asPath(c.Caller, op, c.Path)
		if err != nil {
			return nil, err
		}
		// Write access is needed, as for append: recovery closes the file.
		if fi, err = s.Stat(p); err != nil {
			return nil, err
		}
		if fi.IsDir {
			return nil, errs.New(errs.IsDir, op, c.Path, "path is a directory, not a file")
		}
		if err := s.CheckWrite(p); err != nil {
			return nil, err
		}
	}
	if fi.State != namespace.UnderConstruction {
		return nil, errs.Newf(errs.Precondition, op, c.Path, "%s is not under construction: it is closed, there is no lease to recover", c.Path)
	}
	id := fi.ID
	if !c.System && !f.mayRecoverNow(c.Caller, id, fi.Writer) {
		if r, ok := f.st.leases.Recovering(id); ok {
			return &api.CommandResult{RecoveryId: r.ID}, nil
		}
		if !f.st.leases.Expired(id, c.NowUnixMs, c.SoftLimitMs) {
			left := time.Duration(c.SoftLimitMs-(c.NowUnixMs-f.st.leases.RenewedMs(id))) * time.Millisecond
			return nil, errs.Newf(errs.Precondition, op, c.Path, "%s: %s is open for writing by another client (user %s), whose soft limit ends in %v",
				ExcAlreadyBeingCreated, c.Path, fi.Writer.User, left.Round(time.Millisecond))
		}
	}
	_, bs, _ := tree.FileByID(id)
	if len(bs) == 0 || (bs[len(bs)-1].Length == 0 && !bs[len(bs)-1].HasCRC && len(c.Replicas) == 0) {
		// Nothing was written to the last block anywhere we know of.
		closed, dropped, err := tree.CloseEmpty(op, id, c.NowUnixMs)
		if err != nil {
			return nil, err
		}
		if dropped != nil {
			f.forget([]namespace.Block{*dropped})
		}
		f.st.leases.Remove(id)
		_, rest, _ := tree.FileByID(id)
		f.expectAll(closed, rest)
		return &api.CommandResult{Closed: true}, nil
	}
	last := bs[len(bs)-1]
	if last.HasCRC {
		// The writer committed every block but never closed the file.
		p, err := namespace.ParsePath(fi.Path) // the tree's own path of the file
		if err != nil {
			return nil, errs.WithOp(err, op)
		}
		fi2, err := tree.As(nil, op).Complete(p, id, bs, c.NowUnixMs)
		if err != nil {
			return nil, err
		}
		f.st.leases.Remove(id)
		f.expectAll(fi2, bs)
		return &api.CommandResult{Closed: true}, nil
	}
	if c.Primary == "" {
		return nil, errs.Newf(errs.Unavailable, op, c.Path, "no datanode to recover %v on", last)
	}
	// A restarted truncate's recovery stays one: the block's length is
	// its target, and a copy-on-truncate still copies.
	old, _ := f.st.leases.Recovering(id)
	rid := tree.AllocGenStamp()
	f.st.leases.StartRecovery(id, leases.Recovery{ID: rid, Block: last, Primary: c.Primary, Replicas: c.Replicas, StartedMs: c.NowUnixMs, Truncate: old.Truncate, CopyFrom: old.CopyFrom})
	return &api.CommandResult{RecoveryId: rid}, nil
}

// mayRecoverNow: the holder itself and the superuser need not wait for
// the soft limit.
func (f *FSM) mayRecoverNow(c *api.Caller, id namespace.ID, w namespace.Writer) bool {
	if leases.Key(w) == leases.Key(writerOf(c)) && w.User == c.GetUser() {
		return true
	}
	return f.policy().Caller(c.User, c.Groups, c.ClientId).Super
}

func (f *FSM) expectAll(fi namespace.FileInfo, bs []namespace.Block) {
	if f.events == nil {
		return
	}
	for _, b := range bs {
		f.events.Expect(b, fi.ID, fi.Replication, true)
	}
}

// applyCommitBlockSync ends a recovery the primary datanode reports. Only
// the recovery in progress (same recovery id) is accepted.
func (f *FSM) applyCommitBlockSync(c *api.CommitBlockSyncCommand) (*api.CommandResult, error) {
	const op = "CommitBlockSynchronization"
	id := namespace.ID(c.InodeId)
	r, ok := f.st.leases.Recovering(id)
	if !ok || r.ID != c.RecoveryId || r.Block.ID != c.Block.GetId() {
		// A retry of a commit already applied is success.
		if _, bs, ok := f.st.tree.FileByID(id); ok && len(bs) > 0 {
			if last := bs[len(bs)-1]; last.ID == c.Block.GetId() && last.GenStamp == c.RecoveryId && last.Length == c.NewLength {
				return nil, nil
			}
		}
		return nil, errs.Newf(errs.Precondition, op, "", "no recovery %d of block %d of inode %d in progress", c.RecoveryId, c.Block.GetId(), c.InodeId)
	}
	if c.DatanodeId != r.Primary {
		return nil, errs.Newf(errs.Permission, op, "", "datanode %s is not the primary (%s) of recovery %d", c.DatanodeId, r.Primary, r.ID)
	}
	if r.Truncate && !c.DeleteBlock && c.NewLength != r.Block.Length {
		return nil, errs.Newf(errs.Precondition, op, "", "recovery %d is a truncate's to %d bytes, not %d", r.ID, r.Block.Length, c.NewLength)
	}
	rec := namespace.Recovery{Block: r.Block, RecoveryID: c.RecoveryId, Length: c.NewLength, Delete: c.DeleteBlock}
	if c.Crc32C != nil {
		rec.CRC, rec.HasCRC = *c.Crc32C, true
	}
	fi, _, err := f.st.tree.CommitRecovery(op, id, rec, c.MtimeUnixMs)
	if err != nil {
		return nil, err
	}
	f.st.leases.Remove(id)
	if c.DeleteBlock {
		f.forget([]namespace.Block{r.Block})
	}
	// The file is closed: every block of it is complete for the block map
	// (the earlier ones were committed by AddBlock, never by Complete).
	_, bs, _ := f.st.tree.FileByID(id)
	f.expectAll(fi, bs)
	return &api.CommandResult{Status: ToFileStatus(fi)}, nil
}

func (f *FSM) applyFsync(c *api.FsyncCommand) (*api.CommandResult, error) {
	s, p, err := f.asWriter("Fsync", c)
	if err != nil {
		return nil, err
	}
	fi, err := s.Fsync(p, namespace.ID(c.InodeId), FromAPIBlock(c.Block), 0)
	if err != nil {
		return nil, f.leaseError(err, c.Caller, namespace.ID(c.InodeId))
	}
	return &api.CommandResult{Status: ToFileStatus(fi)}, nil
}

func (f *FSM) applyUpdateBlockForPipeline(c *api.UpdateBlockForPipelineCommand) (*api.CommandResult, error) {
	s, p, err := f.asWriter("UpdateBlockForPipeline", c)
	if err != nil {
		return nil, err
	}
	b := FromAPIBlock(c.Block)
	gs, err := s.AllocPipelineStamp(p, namespace.ID(c.InodeId), b)
	if err != nil {
		return nil, f.leaseError(err, c.Caller, namespace.ID(c.InodeId))
	}
	b.GenStamp = gs
	return &api.CommandResult{Block: ToAPIBlock(b)}, nil
}

func (f *FSM) applyUpdatePipeline(c *api.UpdatePipelineCommand) (*api.CommandResult, error) {
	s, p, err := f.asWriter("UpdatePipeline", c)
	if err != nil {
		return nil, err
	}
	nb, err := s.UpdatePipeline(p, namespace.ID(c.InodeId), FromAPIBlock(c.OldBlock), FromAPIBlock(c.NewBlock))
	if err != nil {
		return nil, f.leaseError(err, c.Caller, namespace.ID(c.InodeId))
	}
	if f.events != nil {
		fi, _, _ := f.st.tree.FileByID(namespace.ID(c.InodeId))
		f.events.Expect(nb, fi.ID, fi.Replication, false)
		f.pipeline(nb, c.Datanodes)
	}
	return &api.CommandResult{Block: ToAPIBlock(nb)}, nil
}

// leaseError rewords the refusal of a writer's call on a file that is no
// longer under construction (recovered and closed, or closed by another
// means) as LeaseExpired; a file another client holds stays a Permission
// error naming that writer.
func (f *FSM) leaseError(err error, c *api.Caller, id namespace.ID) error {
	if errs.KindOf(err) != errs.Precondition {
		return err
	}
	if _, uc := f.st.tree.UnderConstructionBy(id); uc {
		return err
	}
	if _, _, ok := f.st.tree.FileByID(id); !ok {
		return err
	}
	var e *errs.Error
	if errors.As(err, &e) {
		return &errs.Error{Kind: errs.Precondition, Op: e.Op, Path: e.Path,
			Msg: fmt.Sprintf("%s: client %q holds no lease on inode %d: the file is closed (recovered, or completed)", ExcLeaseExpired, c.GetClientId(), id), Err: err}
	}
	return err
}
