// Package attrs holds the namenode's client calls for extended
// attributes, times, truncate and the server's defaults and figures
// (HDFS's setXAttr, getXAttrs, listXAttrs, removeXAttr, setTimes,
// truncate, getServerDefaults, getFsStats). They run on the core's
// entrance like every other call: the namenode's clientService embeds
// Service, so the policy table, forwarding, the read barrier and the FSM's
// permission checks apply to them; Service reaches the namenode only
// through Core.
package attrs

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/namenode/fsm"
	"github.com/blockfs/blockfs/namespace"
)

// Core is what the calls need of the namenode.
type Core interface {
	// Propose proposes a command for op and waits until it is applied
	// here: its result and index.
	Propose(ctx context.Context, op string, t fsm.CmdType, msg proto.Message) (*api.CommandResult, uint64, error)
	// Caller is the caller of a write, ReadCaller of a read.
	Caller(ctx context.Context) *api.Caller
	ReadCaller(ctx context.Context) *api.Caller
	// ReadBarrier waits until this namenode may serve a read for op.
	ReadBarrier(ctx context.Context, op string, opts *api.ReadOptions) error
	// View runs fn under the FSM's read lock.
	View(fn func(fsm.Reader))
	// Header answers a read, WriteHeader a write applied at idx.
	Header() *api.ResponseHeader
	WriteHeader(idx uint64) *api.ResponseHeader
	// Audited logs a call to the audit log (cmd is HDFS's name for it).
	Audited(ctx context.Context, cmd, src, dst string, st *api.FileStatus, err error)
	// NowMs is the namenode's clock, in ms since the epoch.
	NowMs() int64
	// RecoveryCandidates are the datanodes a recovery of block id asks,
	// the one to make primary first.
	RecoveryCandidates(blockID uint64) []string
	// XAttrLimits are the namespace's limits on attributes.
	XAttrLimits() namespace.XAttrLimits
	// ServerDefaults and FsStats are this namenode's figures.
	ServerDefaults() *api.ServerDefaults
	FsStats() *api.GetFsStatsResponse
}

// Service implements the calls. Embedded in a server that implements the
// rest, it answers these; on its own, every other call is Unimplemented.
type Service struct {
	api.UnimplementedClientServiceServer
	core Core
}

// New returns the calls over core.
func New(core Core) *Service { return &Service{core: core} }

func parsePath(op, p string) (namespace.Path, error) {
	pp, err := namespace.ParsePath(p)
	if err != nil {
		return namespace.Path{}, errs.WithOp(err, op)
	}
	return pp, nil
}

// SetXAttr checks what needs no state (the path, the name, the size) and
// proposes the rest with the limits it checked.
func (s *Service) SetXAttr(ctx context.Context, req *api.SetXAttrRequest) (resp *api.SetXAttrResponse, err error) {
	const op = "SetXAttr"
	defer func() { s.core.Audited(ctx, "setXAttr", req.Path, "", nil, err) }()
	if _, err := parsePath(op, req.Path); err != nil {
		return nil, err
	}
	if req.Xattr == nil {
		return nil, errs.New(errs.Invalid, op, req.Path, "xattr is required")
	}
	name, err := namespace.NormalizeXAttrName(op, req.Path, req.Xattr.Name)
	if err != nil {
		return nil, err
	}
	lim := s.core.XAttrLimits()
	if err := namespace.CheckXAttrSize(op, req.Path, namespace.XAttr{Name: name, Value: req.Xattr.Value}, lim.MaxSize); err != nil {
		return nil, err
	}
	_, idx, err := s.core.Propose(ctx, op, fsm.CmdSetXAttr, &api.SetXAttrCommand{
		Caller: s.core.Caller(ctx), Path: req.Path, Xattr: &api.XAttr{Name: name, Value: req.Xattr.Value}, Flags: req.Flags,
		MaxXattrsPerInode: uint32(lim.MaxPerInode), MaxXattrSize: uint32(lim.MaxSize),
	})
	if err != nil {
		return nil, err
	}
	return &api.SetXAttrResponse{Header: s.core.WriteHeader(idx)}, nil
}

func (s *Service) RemoveXAttr(ctx context.Context, req *api.RemoveXAttrRequest) (resp *api.RemoveXAttrResponse, err error) {
	const op = "RemoveXAttr"
	defer func() { s.core.Audited(ctx, "removeXAttr", req.Path, "", nil, err) }()
	if _, err := parsePath(op, req.Path); err != nil {
		return nil, err
	}
	name, err := namespace.NormalizeXAttrName(op, req.Path, req.Name)
	if err != nil {
		return nil, err
	}
	_, idx, err := s.core.Propose(ctx, op, fsm.CmdRemoveXAttr, &api.RemoveXAttrCommand{Caller: s.core.Caller(ctx), Path: req.Path, Name: name})
	if err != nil {
		return nil, err
	}
	return &api.RemoveXAttrResponse{Header: s.core.WriteHeader(idx)}, nil
}

// read runs fn on path p's read session for op, after the read barrier.
func (s *Service) read(ctx context.Context, op, path string, ro *api.ReadOptions, fn func(fsm.ReadSession, namespace.Path) error) error {
	p, err := parsePath(op, path)
	if err != nil {
		return err
	}
	if err := s.core.ReadBarrier(ctx, op, ro); err != nil {
		return err
	}
	s.core.View(func(r fsm.Reader) {
		var rs fsm.ReadSession
		if rs, err = r.As(s.core.ReadCaller(ctx), op, path); err == nil {
			err = fn(rs, p)
		}
	})
	return err
}

func (s *Service) GetXAttrs(ctx context.Context, req *api.GetXAttrsRequest) (resp *api.GetXAttrsResponse, err error) {
	defer func() { s.core.Audited(ctx, "getXAttrs", req.Path, "", nil, err) }()
	var xs []*api.XAttr
	err = s.read(ctx, "GetXAttrs", req.Path, req.Read, func(rs fsm.ReadSession, p namespace.Path) (err error) {
		xs, err = rs.GetXAttrs(p, req.Names)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &api.GetXAttrsResponse{Header: s.core.Header(), Xattrs: xs}, nil
}

func (s *Service) ListXAttrs(ctx context.Context, req *api.ListXAttrsRequest) (resp *api.ListXAttrsResponse, err error) {
	defer func() { s.core.Audited(ctx, "listXAttrs", req.Path, "", nil, err) }()
	var xs []*api.XAttr
	err = s.read(ctx, "ListXAttrs", req.Path, req.Read, func(rs fsm.ReadSession, p namespace.Path) (err error) {
		xs, err = rs.ListXAttrs(p)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &api.ListXAttrsResponse{Header: s.core.Header(), Xattrs: xs}, nil
}

func (s *Service) SetTimes(ctx context.Context, req *api.SetTimesRequest) (resp *api.SetTimesResponse, err error) {
	const op = "SetTimes"
	defer func() { s.core.Audited(ctx, "setTimes", req.Path, "", nil, err) }()
	if _, err := parsePath(op, req.Path); err != nil {
		return nil, err
	}
	if req.MtimeUnixMs < -1 || req.AtimeUnixMs < -1 {
		return nil, errs.Newf(errs.Invalid, op, req.Path, "times %d and %d: want -1 (unchanged) or ms since the epoch", req.MtimeUnixMs, req.AtimeUnixMs)
	}
	_, idx, err := s.core.Propose(ctx, op, fsm.CmdSetTimes, &api.SetTimesCommand{
		Caller: s.core.Caller(ctx), Path: req.Path, MtimeUnixMs: req.MtimeUnixMs, AtimeUnixMs: req.AtimeUnixMs,
	})
	if err != nil {
		return nil, err
	}
	return &api.SetTimesResponse{Header: s.core.WriteHeader(idx)}, nil
}

// Truncate proposes the cut with the primary and replicas for the block
// the new length falls in (when it falls inside one), chosen as lease
// recovery chooses them; the FSM checks everything again.
func (s *Service) Truncate(ctx context.Context, req *api.TruncateRequest) (resp *api.TruncateResponse, err error) {
	const op = "Truncate"
	defer func() { s.core.Audited(ctx, "truncate", req.Path, "", nil, err) }()
	p, err := parsePath(op, req.Path)
	if err != nil {
		return nil, err
	}
	if req.NewLength < 0 {
		return nil, errs.Newf(errs.Invalid, op, req.Path, "Cannot truncate to a negative file size: %d.", req.NewLength)
	}
	cmd := &api.TruncateCommand{Caller: s.core.Caller(ctx), Path: req.Path, NewLength: req.NewLength, MtimeUnixMs: s.core.NowMs()}
	var cut uint64 // the block the new length falls inside, if any
	s.core.View(func(r fsm.Reader) {
		fi, err := r.Stat(p)
		if err != nil || fi.IsDir {
			return
		}
		_, bs, _ := r.FileByID(fi.ID)
		var off uint64
		for _, b := range bs {
			if n := uint64(req.NewLength); off < n && n < off+b.Length {
				cut = b.ID
				return
			}
			off += b.Length
		}
	})
	if cut != 0 {
		cmd.Replicas = s.core.RecoveryCandidates(cut)
		if len(cmd.Replicas) > 0 {
			cmd.Primary = cmd.Replicas[0]
		}
	}
	res, idx, err := s.core.Propose(ctx, op, fsm.CmdTruncate, cmd)
	if err != nil {
		return nil, err
	}
	return &api.TruncateResponse{Header: s.core.WriteHeader(idx), Done: res.GetClosed()}, nil
}

func (s *Service) GetServerDefaults(ctx context.Context, req *api.GetServerDefaultsRequest) (*api.GetServerDefaultsResponse, error) {
	return &api.GetServerDefaultsResponse{Header: s.core.Header(), Defaults: s.core.ServerDefaults()}, nil
}

func (s *Service) GetFsStats(ctx context.Context, req *api.GetFsStatsRequest) (*api.GetFsStatsResponse, error) {
	out := s.core.FsStats()
	out.Header = s.core.Header()
	return out, nil
}
