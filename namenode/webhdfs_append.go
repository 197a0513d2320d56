package namenode

import (
	"context"
	"net/url"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/security"
	"github.com/blockfs/blockfs/webhdfs"
)

// webAppend is APPEND's first step: it checks what a stat as the caller
// can tell (the walk is permitted, the path is a file, and nobody is
// writing it) and redirects to a datanode with room for a block, with a
// redirect token for APPEND naming the file's inode. The w check on the
// file runs when the datanode calls Append as the caller, before it
// stores a byte. Appends have HDFS's NEW_BLOCK semantics.
func (s *clientService) webAppend(ctx context.Context, req *webReq) (webAnswer, error) {
	if _, err := req.q.Int("buffersize", 4096, 1, 1<<30); err != nil {
		return webAnswer{}, err
	}
	st, err := s.GetFileInfo(ctx, &api.GetFileInfoRequest{Path: req.path})
	switch {
	case errs.KindOf(err) == errs.NotFound:
		return webAnswer{}, errs.New(errs.NotFound, "append", req.path, "failed to append to non-existent file "+req.path)
	case err != nil:
		return webAnswer{}, err
	case st.Status.IsDir:
		return webAnswer{}, errs.New(errs.IsDir, "append", req.path, "path is not a file: "+req.path+" is a directory")
	case st.Status.UnderConstruction:
		return webAnswer{}, webhdfs.AppendError(errs.New(errs.Precondition, "append", req.path,
			"failed to append to "+req.path+": the file is already being written; it must be closed first"))
	}
	dn, err := s.n.webDatanode(nil, st.Status.BlockSize)
	if err != nil {
		return webAnswer{}, err
	}
	red := security.Redirect{User: req.user, Op: security.RedirectAppend, Path: req.path, Datanode: dn.ID, Inode: st.Status.InodeId}
	return s.n.redirectTo(dn, red, url.Values{"op": {"APPEND"}})
}
