package fsm

import (
	"errors"

	"google.golang.org/protobuf/proto"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
)

// CmdType is the leading byte of every Raft log entry. Values are part of
// the on-disk log format (docs/FORMATS.md): never renumber, only append.
type CmdType byte

// The commands. Each has one row in the commands table below.
const (
	CmdMkdirs        CmdType = 1
	CmdCreate        CmdType = 2
	CmdAddBlock      CmdType = 3
	CmdComplete      CmdType = 4
	CmdAbandonBlock  CmdType = 5
	CmdDelete        CmdType = 6
	CmdRename        CmdType = 7
	CmdSetMember     CmdType = 8
	CmdRemoveMember  CmdType = 9
	CmdBatch         CmdType = 10
	CmdSetPermission CmdType = 11
	CmdSetOwner      CmdType = 12
	CmdRegisterKey   CmdType = 13
	CmdPruneKeys     CmdType = 14
	CmdAppend        CmdType = 15

	CmdRenewLease             CmdType = 16
	CmdRecoverLease           CmdType = 17
	CmdCommitBlockSync        CmdType = 18
	CmdFsync                  CmdType = 19
	CmdUpdateBlockForPipeline CmdType = 20
	CmdUpdatePipeline         CmdType = 21
	CmdSetQuota               CmdType = 22

	// The replicated deny list (revoke.go).
	CmdRevoke   CmdType = 23
	CmdUnrevoke CmdType = 24

	// The replicated datanode admin states (admin.go).
	CmdSetAdminState CmdType = 25

	// HDFS snapshots, namespace snapshots (hsnap.go; not Raft's). 26..35
	// are left to other work in flight.
	CmdAllowSnapshot    CmdType = 36
	CmdDisallowSnapshot CmdType = 37
	CmdCreateSnapshot   CmdType = 38
	CmdDeleteSnapshot   CmdType = 39
	CmdRenameSnapshot   CmdType = 40

	// Extended attributes, times and truncate (attrs.go).
	CmdSetXAttr    CmdType = 26
	CmdRemoveXAttr CmdType = 27
	CmdSetTimes    CmdType = 28
	CmdTruncate    CmdType = 29

	// Small files in one entry (reserve.go).
	CmdReserveIds CmdType = 41
	CmdPutFile    CmdType = 42
)

// ChangesNamespace reports whether commands of type t change the
// namespace on a user's behalf: the ones safe mode refuses (HDFS refuses
// the same calls). Membership, keys, lease renewals and the commit of a
// recovery already under way pass.
func (t CmdType) ChangesNamespace() bool {
	switch t {
	case CmdMkdirs, CmdCreate, CmdAddBlock, CmdComplete, CmdAbandonBlock, CmdDelete, CmdRename,
		CmdSetPermission, CmdSetOwner, CmdAppend, CmdRecoverLease, CmdFsync,
		CmdUpdateBlockForPipeline, CmdUpdatePipeline, CmdSetQuota,
		CmdSetXAttr, CmdRemoveXAttr, CmdSetTimes, CmdTruncate,
		CmdAllowSnapshot, CmdDisallowSnapshot, CmdCreateSnapshot, CmdDeleteSnapshot, CmdRenameSnapshot,
		CmdReserveIds, CmdPutFile:
		return true
	}
	return false
}

// command is one row of the dispatch table: how to make an empty message
// of the type, and the handler that applies it (nil for CmdBatch, which
// applyEntry unpacks). Handlers run under the write lock, after the
// shared prologue (applyOne).
type command struct {
	msg   func() proto.Message
	apply func(f *FSM, m proto.Message) (*api.CommandResult, error)
}

// handle makes a table row from a handler typed by its message.
func handle[M proto.Message](newMsg func() M, apply func(*FSM, M) (*api.CommandResult, error)) command {
	return command{
		msg:   func() proto.Message { return newMsg() },
		apply: func(f *FSM, m proto.Message) (*api.CommandResult, error) { return apply(f, m.(M)) },
	}
}

// commands is the dispatch table, indexed by type; read only after
// package initialization.
var commands = [...]command{
	CmdMkdirs:        handle(func() *api.MkdirsCommand { return &api.MkdirsCommand{} }, (*FSM).applyMkdirs),
	CmdCreate:        handle(func() *api.CreateCommand { return &api.CreateCommand{} }, (*FSM).applyCreate),
	CmdAddBlock:      handle(func() *api.AddBlockCommand { return &api.AddBlockCommand{} }, (*FSM).applyAddBlock),
	CmdComplete:      handle(func() *api.CompleteCommand { return &api.CompleteCommand{} }, (*FSM).applyComplete),
	CmdAbandonBlock:  handle(func() *api.AbandonBlockCommand { return &api.AbandonBlockCommand{} }, (*FSM).applyAbandonBlock),
	CmdDelete:        handle(func() *api.DeleteCommand { return &api.DeleteCommand{} }, (*FSM).applyDelete),
	CmdRename:        handle(func() *api.RenameCommand { return &api.RenameCommand{} }, (*FSM).applyRename),
	CmdSetMember:     handle(func() *api.SetMemberCommand { return &api.SetMemberCommand{} }, (*FSM).applySetMember),
	CmdRemoveMember:  handle(func() *api.RemoveMemberCommand { return &api.RemoveMemberCommand{} }, (*FSM).applyRemoveMember),
	CmdBatch:         {msg: func() proto.Message { return &api.BatchCommand{} }},
	CmdSetPermission: handle(func() *api.SetPermissionCommand { return &api.SetPermissionCommand{} }, (*FSM).applySetPermission),
	CmdSetOwner:      handle(func() *api.SetOwnerCommand { return &api.SetOwnerCommand{} }, (*FSM).applySetOwner),
	CmdRegisterKey:   handle(func() *api.RegisterKeyCommand { return &api.RegisterKeyCommand{} }, (*FSM).applyRegisterKey),
	CmdPruneKeys:     handle(func() *api.PruneKeysCommand { return &api.PruneKeysCommand{} }, (*FSM).applyPruneKeys),
	CmdAppend:        handle(func() *api.AppendCommand { return &api.AppendCommand{} }, (*FSM).applyAppend),

	CmdRenewLease:             handle(func() *api.RenewLeaseCommand { return &api.RenewLeaseCommand{} }, (*FSM).applyRenewLease),
	CmdRecoverLease:           handle(func() *api.RecoverLeaseCommand { return &api.RecoverLeaseCommand{} }, (*FSM).applyRecoverLease),
	CmdCommitBlockSync:        handle(func() *api.CommitBlockSyncCommand { return &api.CommitBlockSyncCommand{} }, (*FSM).applyCommitBlockSync),
	CmdFsync:                  handle(func() *api.FsyncCommand { return &api.FsyncCommand{} }, (*FSM).applyFsync),
	CmdUpdateBlockForPipeline: handle(func() *api.UpdateBlockForPipelineCommand { return &api.UpdateBlockForPipelineCommand{} }, (*FSM).applyUpdateBlockForPipeline),

	CmdAllowSnapshot:    handle(func() *api.AllowSnapshotCommand { return &api.AllowSnapshotCommand{} }, (*FSM).applyAllowSnapshot),
	CmdDisallowSnapshot: handle(func() *api.DisallowSnapshotCommand { return &api.DisallowSnapshotCommand{} }, (*FSM).applyDisallowSnapshot),
	CmdCreateSnapshot:   handle(func() *api.CreateSnapshotCommand { return &api.CreateSnapshotCommand{} }, (*FSM).applyCreateSnapshot),
	CmdDeleteSnapshot:   handle(func() *api.DeleteSnapshotCommand { return &api.DeleteSnapshotCommand{} }, (*FSM).applyDeleteSnapshot),
	CmdRenameSnapshot:   handle(func() *api.RenameSnapshotCommand { return &api.RenameSnapshotCommand{} }, (*FSM).applyRenameSnapshot),
	CmdUpdatePipeline:   handle(func() *api.UpdatePipelineCommand { return &api.UpdatePipelineCommand{} }, (*FSM).applyUpdatePipeline),
	CmdSetQuota:         handle(func() *api.SetQuotaCommand { return &api.SetQuotaCommand{} }, (*FSM).applySetQuota),

	CmdRevoke:   handle(func() *api.RevokeCommand { return &api.RevokeCommand{} }, (*FSM).applyRevoke),
	CmdUnrevoke: handle(func() *api.UnrevokeCommand { return &api.UnrevokeCommand{} }, (*FSM).applyUnrevoke),

	CmdSetAdminState: handle(func() *api.SetAdminStateCommand { return &api.SetAdminStateCommand{} }, (*FSM).applySetAdminState),

	CmdSetXAttr:    handle(func() *api.SetXAttrCommand { return &api.SetXAttrCommand{} }, (*FSM).applySetXAttr),
	CmdRemoveXAttr: handle(func() *api.RemoveXAttrCommand { return &api.RemoveXAttrCommand{} }, (*FSM).applyRemoveXAttr),
	CmdSetTimes:    handle(func() *api.SetTimesCommand { return &api.SetTimesCommand{} }, (*FSM).applySetTimes),
	CmdTruncate:    handle(func() *api.TruncateCommand { return &api.TruncateCommand{} }, (*FSM).applyTruncate),

	CmdReserveIds: handle(func() *api.ReserveIdsCommand { return &api.ReserveIdsCommand{} }, (*FSM).applyReserveIds),
	CmdPutFile:    handle(func() *api.PutFileCommand { return &api.PutFileCommand{} }, (*FSM).applyPutFile),
}

// Encode frames msg as one log entry: type byte, then the protobuf,
// marshalled deterministically.
func Encode(t CmdType, msg proto.Message) ([]byte, error) {
	b := make([]byte, 1, 1+proto.Size(msg))
	b[0] = byte(t)
	return proto.MarshalOptions{Deterministic: true}.MarshalAppend(b, msg)
}

// Decode parses a log entry. An unknown type or a malformed message is an
// Invalid error.
func Decode(data []byte) (CmdType, proto.Message, error) {
	const op = "fsm.Decode"
	if len(data) < 1 {
		return 0, nil, errs.New(errs.Invalid, op, "", "empty command")
	}
	t := CmdType(data[0])
	if int(t) >= len(commands) || commands[t].msg == nil {
		return t, nil, errs.Newf(errs.Invalid, op, "", "unknown command type %d", t)
	}
	msg := commands[t].msg()
	if err := proto.Unmarshal(data[1:], msg); err != nil {
		return t, nil, errs.Wrap(errs.Invalid, op, "", err)
	}
	return t, msg, nil
}

// resultError builds a CommandResult carrying err.
func resultError(err error) *api.CommandResult {
	r := &api.CommandResult{ErrorKind: uint32(errs.KindOf(err)), ErrorMsg: err.Error()}
	var e *errs.Error
	if errors.As(err, &e) {
		r.ErrorOp, r.ErrorPath = e.Op, e.Path
	}
	if r.ErrorKind == uint32(errs.Other) {
		r.ErrorKind = uint32(errs.Internal)
	}
	return r
}

// ResultErr returns the error a CommandResult carries, or nil.
func ResultErr(r *api.CommandResult) error {
	if r == nil || (r.ErrorKind == 0 && r.ErrorMsg == "") {
		return nil
	}
	return errs.Rebuild(errs.Kind(r.ErrorKind), r.ErrorOp, r.ErrorPath, r.ErrorMsg)
}
