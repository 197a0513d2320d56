// Package hsnapshot is the namenode's door for HDFS snapshots, namespace
// snapshots of snapshottable directories (namespace/hsnap.go), not the
// Raft snapshots of namenode/fsm/snapshot.go: the ClientService methods
// AllowSnapshot, DisallowSnapshot, CreateSnapshot, DeleteSnapshot,
// RenameSnapshot and GetSnapshottableDirListing. Each write becomes one
// FSM command proposed through the namenode's own entrance (safe mode,
// forwarding, the retry cache), and the FSM runs it as the caller, so who
// may do what is decided in one place; reads pass the namenode's read
// barrier first. The namenode embeds a *Service in its ClientService
// implementation, so these methods are its own.
package hsnapshot

import (
	"context"
	"path"

	"google.golang.org/protobuf/proto"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/namenode/fsm"
	"github.com/blockfs/blockfs/namespace"
)

// Core is what the door needs of the namenode.
type Core interface {
	// Propose replicates command t for op and returns the FSM's result
	// and the header of the applied write.
	Propose(ctx context.Context, op string, t fsm.CmdType, msg proto.Message) (*api.CommandResult, *api.ResponseHeader, error)
	// Caller is the caller of ctx, with its retry-cache identity.
	Caller(ctx context.Context) *api.Caller
	// Read passes the read barrier for op and returns the reading caller
	// and the header of the read.
	Read(ctx context.Context, op string, opts *api.ReadOptions) (*api.Caller, *api.ResponseHeader, error)
	// Audited records the call in the audit log.
	Audited(ctx context.Context, cmd, src, dst string, err error)
	// NowMs is the namenode's clock, Unix milliseconds.
	NowMs() int64
	// FSM is the node's state machine.
	FSM() *fsm.FSM
}

// Service implements the HDFS snapshot methods of api.ClientServiceServer
// (the others answer Unimplemented until the embedding type defines them).
type Service struct {
	core Core
}

// New returns the door over core.
func New(core Core) *Service { return &Service{core: core} }

func (s *Service) checkPath(op, p string) error {
	if _, err := namespace.ParsePath(p); err != nil {
		return errs.WithOp(err, op)
	}
	return nil
}

// write proposes a command for op on path p.
func (s *Service) write(ctx context.Context, op, p string, t fsm.CmdType, msg proto.Message) (*api.CommandResult, *api.ResponseHeader, error) {
	if err := s.checkPath(op, p); err != nil {
		return nil, nil, err
	}
	return s.core.Propose(ctx, op, t, msg)
}

// AllowSnapshot makes a directory snapshottable (a superuser only).
func (s *Service) AllowSnapshot(ctx context.Context, req *api.AllowSnapshotRequest) (_ *api.AllowSnapshotResponse, err error) {
	defer func() { s.core.Audited(ctx, "allowSnapshot", req.Path, "", err) }()
	_, h, err := s.write(ctx, "AllowSnapshot", req.Path, fsm.CmdAllowSnapshot, &api.AllowSnapshotCommand{Caller: s.core.Caller(ctx), Path: req.Path})
	if err != nil {
		return nil, err
	}
	return &api.AllowSnapshotResponse{Header: h}, nil
}

// DisallowSnapshot makes a directory without snapshots not snapshottable
// (a superuser only).
func (s *Service) DisallowSnapshot(ctx context.Context, req *api.DisallowSnapshotRequest) (_ *api.DisallowSnapshotResponse, err error) {
	defer func() { s.core.Audited(ctx, "disallowSnapshot", req.Path, "", err) }()
	_, h, err := s.write(ctx, "DisallowSnapshot", req.Path, fsm.CmdDisallowSnapshot, &api.DisallowSnapshotCommand{Caller: s.core.Caller(ctx), Path: req.Path})
	if err != nil {
		return nil, err
	}
	return &api.DisallowSnapshotResponse{Header: h}, nil
}

// CreateSnapshot takes a snapshot (the directory's owner or a superuser).
func (s *Service) CreateSnapshot(ctx context.Context, req *api.CreateSnapshotRequest) (_ *api.CreateSnapshotResponse, err error) {
	defer func() { s.core.Audited(ctx, "createSnapshot", req.Path, req.Name, err) }()
	r, h, err := s.write(ctx, "CreateSnapshot", req.Path, fsm.CmdCreateSnapshot, &api.CreateSnapshotCommand{
		Caller: s.core.Caller(ctx), Path: req.Path, Name: req.Name, MtimeUnixMs: s.core.NowMs(),
	})
	if err != nil {
		return nil, err
	}
	return &api.CreateSnapshotResponse{Header: h, SnapshotPath: r.GetStatus().GetPath()}, nil
}

// DeleteSnapshot deletes a snapshot (the directory's owner or a
// superuser); the blocks only it held are released.
func (s *Service) DeleteSnapshot(ctx context.Context, req *api.DeleteSnapshotRequest) (_ *api.DeleteSnapshotResponse, err error) {
	defer func() { s.core.Audited(ctx, "deleteSnapshot", req.Path, req.Name, err) }()
	_, h, err := s.write(ctx, "DeleteSnapshot", req.Path, fsm.CmdDeleteSnapshot, &api.DeleteSnapshotCommand{Caller: s.core.Caller(ctx), Path: req.Path, Name: req.Name})
	if err != nil {
		return nil, err
	}
	return &api.DeleteSnapshotResponse{Header: h}, nil
}

// RenameSnapshot renames a snapshot (the directory's owner or a superuser).
func (s *Service) RenameSnapshot(ctx context.Context, req *api.RenameSnapshotRequest) (_ *api.RenameSnapshotResponse, err error) {
	defer func() { s.core.Audited(ctx, "renameSnapshot", req.Path, req.NewName, err) }()
	_, h, err := s.write(ctx, "RenameSnapshot", req.Path, fsm.CmdRenameSnapshot, &api.RenameSnapshotCommand{
		Caller: s.core.Caller(ctx), Path: req.Path, OldName: req.OldName, NewName: req.NewName,
	})
	if err != nil {
		return nil, err
	}
	return &api.RenameSnapshotResponse{Header: h}, nil
}

// GetSnapshottableDirListing lists the snapshottable directories the
// caller owns (a superuser: all), by path.
func (s *Service) GetSnapshottableDirListing(ctx context.Context, req *api.GetSnapshottableDirListingRequest) (_ *api.GetSnapshottableDirListingResponse, err error) {
	const op = "GetSnapshottableDirListing"
	defer func() { s.core.Audited(ctx, "lsSnapshottableDir", "", "", err) }()
	c, h, err := s.core.Read(ctx, op, req.Read)
	if err != nil {
		return nil, err
	}
	dirs, err := s.core.FSM().SnapshottableDirs(c, op)
	if err != nil {
		return nil, err
	}
	out := &api.GetSnapshottableDirListingResponse{Header: h, Dirs: make([]*api.SnapshottableDirectory, len(dirs))}
	for i, d := range dirs {
		out.Dirs[i] = &api.SnapshottableDirectory{
			Status: fsm.ToFileStatus(d.Dir), SnapshotCount: uint32(d.Snapshots), SnapshotLimit: uint32(d.Limit),
			ParentPath: path.Dir(d.Dir.Path),
		}
	}
	return out, nil
}
