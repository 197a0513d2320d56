package webhdfs

import (
	"context"
	"io"
	"net/http"
	"strconv"

	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/security"
)

// webReadChunk is how much of the file one ReadAt fetches while OPEN
// streams it: big enough that a read crosses few replica RPCs, small
// enough that a slow HTTP client holds little memory.
const webReadChunk = 4 << 20

// open streams [offset, offset+length) of the token's file (the range
// admit checked against the token); the file must still be the inode the
// namenode checked.
func (d *DatanodeDoor) open(ctx context.Context, w http.ResponseWriter, r *http.Request, c *client.Client, red security.Redirect) {
	// admit checked that the URL's range is the signed one.
	off, length, hasLength := red.Offset, red.Length, red.HasLength
	rd, inode, size, err := openSigned(ctx, c, red)
	if err != nil {
		WriteError(w, err)
		return
	}
	if inode != red.Inode {
		WriteError(w, errs.New(errs.NotFound, "OPEN", red.Path, "the file was replaced after the namenode redirected here"))
		return
	}
	if off > size {
		WriteError(w, Errorf(EOF, "Cannot seek after EOF: offset "+strconv.FormatUint(off, 10)+" is past the end of "+red.Path))
		return
	}
	n := size - off
	if hasLength {
		n = min(n, length)
	}
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Length", strconv.FormatUint(n, 10))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	buf := make([]byte, min(n, webReadChunk))
	for n > 0 {
		k := min(n, uint64(len(buf)))
		if _, err := rd.ReadAt(buf[:k], int64(off)); err != nil {
			// The status is sent: cut the connection so that the client
			// sees a short body, never a wrong one.
			d.log.Warn("webhdfs open: read failed mid-stream", "path", red.Path, "offset", off, "err", err)
			panic(http.ErrAbortHandler)
		}
		if _, err := w.Write(buf[:k]); err != nil {
			return // the client went away
		}
		off += k
		n -= k
	}
}

// openSigned opens the token's file for its signed range only, since the
// token admits those blocks' locations alone, and returns the reader, the
// file's inode and size. An OPEN of length 0 reads no block: it stats the
// file and returns no reader.
func openSigned(ctx context.Context, c *client.Client, red security.Redirect) (*client.Reader, uint64, uint64, error) {
	if red.HasLength && red.Length == 0 {
		fi, err := c.Stat(ctx, red.Path)
		return nil, fi.GetInodeId(), fi.GetLength(), err
	}
	var n uint64 // 0: to the end
	if red.HasLength {
		n = red.Length
	}
	rd, err := c.OpenRange(ctx, red.Path, red.Offset, n)
	if err != nil {
		return nil, 0, 0, err
	}
	return rd, rd.Locations().InodeId, uint64(rd.Size()), nil
}

// create makes the file with the parameters the namenode signed and
// writes the request body into it through the write pipeline. Create
// decides, before a byte is stored, whether the file may be made; its
// refusal changes nothing. A body that
// fails midway leaves the file under construction (not completed), as an
// interrupted HDFS write does.
func (d *DatanodeDoor) create(ctx context.Context, w http.ResponseWriter, r *http.Request, c *client.Client, red security.Redirect) {
	cp := red.Create
	wr, err := c.Create(ctx, red.Path, client.CreateOptions{Perm: cp.Perm, Overwrite: cp.Overwrite,
		NonRecursive: !cp.CreateParent, Replication: cp.Replication, BlockSize: cp.BlockSize})
	if err != nil {
		WriteError(w, err)
		return
	}
	if _, err := io.Copy(wr, r.Body); err != nil {
		// The file stays under construction, its lease no longer renewed
		// (the shared client of mTLS would renew it for as long as the
		// datanode runs): past the soft limit a new create takes it over.
		wr.Abort()
		if errs.KindOf(err) == errs.Other {
			err = errs.Wrap(errs.IO, "Create", red.Path, err) // the body, not the cluster
		}
		WriteError(w, err)
		return
	}
	if err := wr.Close(); err != nil {
		WriteError(w, err)
		return
	}
	w.Header().Set("Location", "webhdfs://"+r.Host+red.Path)
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(http.StatusCreated)
}

// append reopens the token's file as its user and writes the request
// body after the file's bytes (HDFS's NEW_BLOCK append: a new block after
// the last). With an APPEND token the file must still be the inode the
// namenode redirected for; a CREATE token (the appends of the write it
// started) names no inode. Append decides, before a byte is stored,
// whether the file may be appended to; its refusal changes nothing. A
// body that fails midway leaves the file under construction, as an
// interrupted HDFS write does.
func (d *DatanodeDoor) append(ctx context.Context, w http.ResponseWriter, r *http.Request, c *client.Client, red security.Redirect) {
	if red.Op == security.RedirectAppend {
		st, err := c.Stat(ctx, red.Path)
		if err != nil {
			WriteError(w, err)
			return
		}
		if st.InodeId != red.Inode {
			WriteError(w, errs.New(errs.NotFound, "Append", red.Path, "the file was replaced after the namenode redirected here"))
			return
		}
	}
	wr, err := c.Append(ctx, red.Path)
	if err != nil {
		WriteError(w, err)
		return
	}
	if _, err := io.Copy(wr, r.Body); err != nil {
		wr.Abort() // as for create
		if errs.KindOf(err) == errs.Other {
			err = errs.Wrap(errs.IO, "Append", red.Path, err) // the body, not the cluster
		}
		WriteError(w, err)
		return
	}
	if err := wr.Close(); err != nil {
		WriteError(w, err)
		return
	}
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(http.StatusOK)
}

// signedRange checks that an OPEN URL asks for the range its redirect
// token was signed for.
func signedRange(q Query, red security.Redirect) error {
	off, err := q.Uint("offset", 0)
	if err != nil {
		return err
	}
	length, err := q.Uint("length", 0)
	if err != nil {
		return err
	}
	if off != red.Offset || (q.String("length") != "") != red.HasLength || length != red.Length {
		return errs.New(errs.Permission, "OPEN", red.Path, "offset or length differ from the token's")
	}
	return nil
}
