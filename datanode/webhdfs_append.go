package datanode

import (
	"context"
	"io"
	"net/http"

	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/security"
	"github.com/blockfs/blockfs/webhdfs"
)

// append reopens the token's file as its user and writes the request
// body after the file's bytes (HDFS's NEW_BLOCK append: a new block after
// the last). With an APPEND token the file must still be the inode the
// namenode checked; a CREATE token (the appends of the write it started)
// names no inode. A refused Append changes nothing; a body that fails
// midway leaves the file under construction, as an interrupted HDFS write
// does.
func (wh *webServer) append(ctx context.Context, w http.ResponseWriter, r *http.Request, c *client.Client, red security.Redirect) {
	if red.Op == security.RedirectAppend {
		st, err := c.Stat(ctx, red.Path)
		if err != nil {
			webhdfs.WriteError(w, err)
			return
		}
		if st.InodeId != red.Inode {
			webhdfs.WriteError(w, errs.New(errs.NotFound, "append", red.Path, "the file was replaced after the namenode redirected here"))
			return
		}
	}
	wr, err := c.Append(ctx, red.Path)
	if err != nil {
		webhdfs.WriteError(w, webhdfs.AppendError(err))
		return
	}
	if _, err := io.Copy(wr, r.Body); err != nil {
		if errs.KindOf(err) == errs.Other {
			err = errs.Wrap(errs.IO, "append", red.Path, err) // the body, not the cluster
		}
		webhdfs.WriteError(w, err)
		return
	}
	if err := wr.Close(); err != nil {
		webhdfs.WriteError(w, err)
		return
	}
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(http.StatusOK)
}
