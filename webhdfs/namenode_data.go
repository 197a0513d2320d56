package webhdfs

import (
	"context"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/namespace"
	"github.com/blockfs/blockfs/security"
)

// The first step of CREATE, APPEND and OPEN: read the parameters, read
// through the client service what choosing a datanode and signing the
// token needs, choose a datanode, and answer 307 to its HTTP port with a
// redirect token that lets that datanode, once, run the operation as the
// caller (security/redirect.go, docs/SECURITY.md "WebHDFS"). This step
// decides no rule of the core: the datanode's step calls Create, Append or
// reads as the caller, and the core refuses there, before a byte moves,
// as Hadoop's NamenodeWebHdfsMethods leaves it to the datanode's call.

// open reads the block at the offset, checks that the range starts
// within the file, and redirects to a datanode holding that block (any
// live one for an empty file or an offset at its end).
func (d *NamenodeDoor) open(ctx context.Context, req *request) (answer, error) {
	off, length, whole, err := rangeParams(req.q)
	if err != nil {
		return answer{}, err
	}
	if _, err := req.q.Int("buffersize", 4096, 1, 1<<30); err != nil {
		return answer{}, err
	}
	r, err := d.svc.GetBlockLocations(ctx, &api.GetBlockLocationsRequest{Path: req.path, Offset: 0, Length: 1})
	if err != nil {
		return answer{}, err
	}
	if off > r.FileLength {
		return answer{}, Errorf(EOF, "Cannot seek after EOF: offset "+strconv.FormatUint(off, 10)+" is past the end of "+req.path+" ("+strconv.FormatUint(r.FileLength, 10)+" bytes)")
	}
	if off > 0 && off < r.FileLength {
		if r, err = d.svc.GetBlockLocations(ctx, &api.GetBlockLocationsRequest{Path: req.path, Offset: off, Length: 1}); err != nil {
			return answer{}, err
		}
	}
	var holders []string
	if len(r.ReplicaCounts) > 0 && r.ReplicaCounts[0] > 0 {
		for _, x := range r.ReplicaIndexes[:r.ReplicaCounts[0]] {
			if int(x) < len(r.Datanodes) {
				holders = append(holders, r.Datanodes[x].Id)
			}
		}
	}
	dn, err := d.dns.ReadDatanode(holders)
	if err != nil {
		return answer{}, err
	}
	red := security.Redirect{User: req.user, Op: security.RedirectOpen, Path: req.path, Datanode: dn.ID,
		Inode: r.InodeId, Offset: off, Length: length, HasLength: !whole}
	q := url.Values{"op": {"OPEN"}, "offset": {strconv.FormatUint(off, 10)}}
	if !whole {
		q.Set("length", strconv.FormatUint(length, 10))
	}
	return d.redirectTo(dn, red, q)
}

// create reads CREATE's parameters and redirects to a datanode with room
// for a block. Whether the file may be created (it exists, overwrite, a
// directory of that name, the parent, permissions, the block size) is
// Create's to say: the datanode calls it before it stores a byte.
func (d *NamenodeDoor) create(_ context.Context, req *request) (answer, error) {
	cp, err := createParams(req.q, d.cfg.DefaultReplication, d.cfg.DefaultBlockSize)
	if err != nil {
		return answer{}, err
	}
	dn, err := d.dns.WriteDatanode(cp.BlockSize)
	if err != nil {
		return answer{}, err
	}
	red := security.Redirect{User: req.user, Op: security.RedirectCreate, Path: req.path, Datanode: dn.ID, Create: cp}
	return d.redirectTo(dn, red, url.Values{"op": {"CREATE"}})
}

// createParams reads CREATE's parameters, with the namenode's defaults
// for an absent replication or block size; whether the values are ones a
// file may have is Create's to say.
func createParams(q Query, defRepl uint32, defBlock uint64) (security.CreateParams, error) {
	var cp security.CreateParams
	var err error
	if cp.Overwrite, err = q.Bool("overwrite", false); err != nil {
		return cp, err
	}
	if cp.CreateParent, err = q.Bool("createparent", true); err != nil {
		return cp, err
	}
	if cp.Perm, err = q.Permission("permission", 0o644); err != nil {
		return cp, err
	}
	repl, err := q.Int("replication", int64(defRepl), namespace.MinReplication, namespace.MaxReplication)
	if err != nil {
		return cp, err
	}
	cp.Replication = uint32(repl)
	bs, err := q.Int("blocksize", int64(min(defBlock, math.MaxInt64)), 1, math.MaxInt64)
	if err != nil {
		return cp, err
	}
	cp.BlockSize = uint64(bs)
	if _, err := q.Int("buffersize", 4096, 1, 1<<30); err != nil {
		return cp, err
	}
	return cp, nil
}

// append reads the file's status (its inode, which the token names, and
// its block size, to choose a datanode with room for a block) and
// redirects to that datanode. Whether the file may be appended to (it is
// a file, nobody is writing it, the caller has w on it) is Append's to
// say: the datanode calls it before it stores a byte. Appends have HDFS's
// NEW_BLOCK semantics.
func (d *NamenodeDoor) append(ctx context.Context, req *request) (answer, error) {
	if _, err := req.q.Int("buffersize", 4096, 1, 1<<30); err != nil {
		return answer{}, err
	}
	st, err := d.svc.GetFileInfo(ctx, &api.GetFileInfoRequest{Path: req.path})
	if errs.KindOf(err) == errs.NotFound {
		return answer{}, errs.New(errs.NotFound, "Append", req.path, "failed to append to non-existent file "+req.path)
	}
	if err != nil {
		return answer{}, err
	}
	dn, err := d.dns.WriteDatanode(st.Status.BlockSize)
	if err != nil {
		return answer{}, err
	}
	red := security.Redirect{User: req.user, Op: security.RedirectAppend, Path: req.path, Datanode: dn.ID, Inode: st.Status.InodeId}
	return d.redirectTo(dn, red, url.Values{"op": {"APPEND"}})
}

// redirectTo signs red and answers 307 to dn's WebHDFS URL for red's path
// with the query q, the token, and (simple auth) the user.
func (d *NamenodeDoor) redirectTo(dn Target, red security.Redirect, q url.Values) (answer, error) {
	tok, _, err := d.toks.RedirectToken(red)
	if err != nil {
		return answer{}, err
	}
	q.Set(TokenParam, string(tok))
	if d.cfg.SimpleAuth {
		q.Set(security.HTTPUserParam, red.User)
	}
	u := url.URL{Scheme: "http", Host: webHost(dn), Path: Prefix + red.Path, RawQuery: q.Encode()}
	if d.cfg.TLS {
		u.Scheme = "https"
	}
	return answer{status: http.StatusTemporaryRedirect, location: u.String()}, nil
}

// webHost is the host:port clients reach dn's HTTP port at: its HTTP
// address, with the host of its data address when it listens on every
// interface.
func webHost(dn Target) string {
	h, p, err := net.SplitHostPort(dn.HTTPAddr)
	if err != nil {
		return dn.HTTPAddr
	}
	if ip := net.ParseIP(h); h == "" || (ip != nil && ip.IsUnspecified()) {
		if dh, _, err := net.SplitHostPort(dn.DataAddr); err == nil {
			h = dh
		}
	}
	return net.JoinHostPort(h, p)
}
