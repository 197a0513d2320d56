package namenode

import (
	"context"
	"path"
	"time"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/security"
	"github.com/blockfs/blockfs/trash"
)

// trashLoop is the leader's trash emptier: every checkpoint interval,
// outside safe mode, it expunges the checkpoints older than the trash
// interval and checkpoints every user's Current (package trash). It
// calls this node's own ClientService handlers as the superuser, so each
// call is checked, replicated and audited like any other.
func (n *Namenode) trashLoop() {
	every := n.cfg.TrashCheckpoint
	if every == 0 {
		every = n.cfg.TrashInterval
	}
	n.every(every, func() {
		if !n.isReadyLeader() || n.safe.On() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), every)
		defer cancel()
		ctx = security.WithIdentity(ctx, security.Identity{Role: security.RoleUser, Name: n.cfg.Namespace.Superuser})
		expired, err := trash.EmptyAll(ctx, serviceFS{n.ClientServer()}, n.cfg.TrashInterval, time.Now())
		if err != nil {
			n.log.Warn("trash emptier", "expired_checkpoints", expired, "err", err)
		} else if expired > 0 {
			n.log.Info("trash emptier", "expired_checkpoints", expired)
		}
	})
}

// serviceFS is trash.FS over the ClientService handlers, as the caller
// ctx names.
type serviceFS struct{ s api.ClientServiceServer }

func (f serviceFS) Stat(ctx context.Context, p string) (*api.FileStatus, error) {
	r, err := f.s.GetFileInfo(ctx, &api.GetFileInfoRequest{Path: p})
	return r.GetStatus(), err
}

func (f serviceFS) Mkdirs(ctx context.Context, p string, perm uint32, parents bool) error {
	_, err := f.s.Mkdirs(ctx, &api.MkdirsRequest{Path: p, Mode: perm, Parents: parents})
	return err
}

func (f serviceFS) Rename(ctx context.Context, src, dst string) error {
	_, err := f.s.Rename(ctx, &api.RenameRequest{Src: src, Dst: dst})
	return err
}

func (f serviceFS) Delete(ctx context.Context, p string, recursive bool) error {
	_, err := f.s.Delete(ctx, &api.DeleteRequest{Path: p, Recursive: recursive})
	return err
}

func (f serviceFS) List(ctx context.Context, p string) ([]*api.FileStatus, error) {
	var out []*api.FileStatus
	for after := ""; ; {
		r, err := f.s.ListStatus(ctx, &api.ListStatusRequest{Path: p, StartAfter: after})
		if err != nil {
			return nil, err
		}
		out = append(out, r.Entries...)
		if !r.HasMore || len(r.Entries) == 0 {
			return out, nil
		}
		after = path.Base(r.Entries[len(r.Entries)-1].Path)
	}
}
