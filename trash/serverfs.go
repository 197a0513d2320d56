package trash

import (
	"context"
	"path"

	"github.com/blockfs/blockfs/api"
)

// ServerFS is FS over ClientService handlers called in process (a
// namenode's own, for its trash emptier), as the caller ctx names.
type ServerFS struct{ S api.ClientServiceServer }

func (f ServerFS) Stat(ctx context.Context, p string) (*api.FileStatus, error) {
	r, err := f.S.GetFileInfo(ctx, &api.GetFileInfoRequest{Path: p})
	return r.GetStatus(), err
}

func (f ServerFS) Mkdirs(ctx context.Context, p string, perm uint32, parents bool) error {
	_, err := f.S.Mkdirs(ctx, &api.MkdirsRequest{Path: p, Mode: perm, Parents: parents})
	return err
}

func (f ServerFS) Rename(ctx context.Context, src, dst string) error {
	_, err := f.S.Rename(ctx, &api.RenameRequest{Src: src, Dst: dst})
	return err
}

func (f ServerFS) Delete(ctx context.Context, p string, recursive bool) error {
	_, err := f.S.Delete(ctx, &api.DeleteRequest{Path: p, Recursive: recursive})
	return err
}

func (f ServerFS) List(ctx context.Context, p string) ([]*api.FileStatus, error) {
	var out []*api.FileStatus
	for after := ""; ; {
		r, err := f.S.ListStatus(ctx, &api.ListStatusRequest{Path: p, StartAfter: after})
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
