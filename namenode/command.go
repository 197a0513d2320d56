package namenode

import (
	"google.golang.org/protobuf/proto"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
)

// cmdType is the leading byte of every Raft log entry. Values are part of
// the on-disk log format: never renumber, only append.
type cmdType byte

const (
	cmdMkdirs        cmdType = 1
	cmdCreate        cmdType = 2
	cmdAddBlock      cmdType = 3
	cmdComplete      cmdType = 4
	cmdAbandonBlock  cmdType = 5
	cmdDelete        cmdType = 6
	cmdRename        cmdType = 7
	cmdSetMember     cmdType = 8
	cmdRemoveMember  cmdType = 9
	cmdBatch         cmdType = 10
	cmdSetPermission cmdType = 11
	cmdSetOwner      cmdType = 12
	cmdRegisterKey   cmdType = 13
	cmdPruneKeys     cmdType = 14
	cmdAppend        cmdType = 15

	cmdRenewLease             cmdType = 16
	cmdRecoverLease           cmdType = 17
	cmdCommitBlockSync        cmdType = 18
	cmdFsync                  cmdType = 19
	cmdUpdateBlockForPipeline cmdType = 20
	cmdUpdatePipeline         cmdType = 21
)

// encodeCommand frames msg as one log entry: type byte, then protobuf.
func encodeCommand(t cmdType, msg proto.Message) ([]byte, error) {
	b := make([]byte, 1, 1+proto.Size(msg))
	b[0] = byte(t)
	return proto.MarshalOptions{Deterministic: true}.MarshalAppend(b, msg)
}

// newCommandMessage returns an empty message for type t, or nil if t is unknown.
func newCommandMessage(t cmdType) proto.Message {
	switch t {
	case cmdMkdirs:
		return &api.MkdirsCommand{}
	case cmdCreate:
		return &api.CreateCommand{}
	case cmdAddBlock:
		return &api.AddBlockCommand{}
	case cmdComplete:
		return &api.CompleteCommand{}
	case cmdAbandonBlock:
		return &api.AbandonBlockCommand{}
	case cmdDelete:
		return &api.DeleteCommand{}
	case cmdRename:
		return &api.RenameCommand{}
	case cmdSetMember:
		return &api.SetMemberCommand{}
	case cmdRemoveMember:
		return &api.RemoveMemberCommand{}
	case cmdBatch:
		return &api.BatchCommand{}
	case cmdSetPermission:
		return &api.SetPermissionCommand{}
	case cmdSetOwner:
		return &api.SetOwnerCommand{}
	case cmdRegisterKey:
		return &api.RegisterKeyCommand{}
	case cmdPruneKeys:
		return &api.PruneKeysCommand{}
	case cmdAppend:
		return &api.AppendCommand{}
	case cmdRenewLease:
		return &api.RenewLeaseCommand{}
	case cmdRecoverLease:
		return &api.RecoverLeaseCommand{}
	case cmdCommitBlockSync:
		return &api.CommitBlockSyncCommand{}
	case cmdFsync:
		return &api.FsyncCommand{}
	case cmdUpdateBlockForPipeline:
		return &api.UpdateBlockForPipelineCommand{}
	case cmdUpdatePipeline:
		return &api.UpdatePipelineCommand{}
	}
	return nil
}

// decodeCommand parses a log entry.
func decodeCommand(data []byte) (cmdType, proto.Message, error) {
	if len(data) < 1 {
		return 0, nil, errs.New(errs.Invalid, "fsm", "", "empty command")
	}
	t := cmdType(data[0])
	msg := newCommandMessage(t)
	if msg == nil {
		return t, nil, errs.Newf(errs.Invalid, "fsm", "", "unknown command type %d", t)
	}
	if err := proto.Unmarshal(data[1:], msg); err != nil {
		return t, nil, errs.Wrap(errs.Invalid, "fsm", "", err)
	}
	return t, msg, nil
}

// resultError builds a CommandResult carrying err.
func resultError(err error) *api.CommandResult {
	r := &api.CommandResult{ErrorKind: uint32(errs.KindOf(err)), ErrorMsg: err.Error()}
	if r.ErrorKind == uint32(errs.Other) {
		r.ErrorKind = uint32(errs.Internal)
	}
	return r
}

// resultErr returns the error a CommandResult carries, or nil.
func resultErr(r *api.CommandResult) error {
	if r == nil || (r.ErrorKind == 0 && r.ErrorMsg == "") {
		return nil
	}
	return &errs.Error{Kind: errs.Kind(r.ErrorKind), Msg: r.ErrorMsg}
}
