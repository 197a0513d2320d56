package namenode

import (
	"context"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/blocks"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/namespace"
	"github.com/blockfs/blockfs/security"
	"github.com/blockfs/blockfs/webhdfs"
)

// The first step of CREATE and OPEN: check the caller and the operation
// as far as can be done without changing anything, choose a datanode, and
// answer 307 to its HTTP port with a redirect token that lets that
// datanode, once, run the operation as the caller (security/redirect.go,
// docs/SECURITY.md "WebHDFS").

// webOpen checks that the caller may read the file and that the range
// starts within it, and redirects to a datanode holding the block at the
// offset (any live one for an empty file or an offset at its end).
func (s *clientService) webOpen(ctx context.Context, req *webReq) (webAnswer, error) {
	off, length, whole, err := rangeParams(req.q)
	if err != nil {
		return webAnswer{}, err
	}
	if _, err := req.q.Int("buffersize", 4096, 1, 1<<30); err != nil {
		return webAnswer{}, err
	}
	r, err := s.GetBlockLocations(ctx, &api.GetBlockLocationsRequest{Path: req.path, Offset: 0, Length: 1})
	if err != nil {
		return webAnswer{}, err
	}
	if off > r.FileLength {
		return webAnswer{}, webhdfs.Errorf(webhdfs.EOF, "Cannot seek after EOF: offset "+strconv.FormatUint(off, 10)+" is past the end of "+req.path+" ("+strconv.FormatUint(r.FileLength, 10)+" bytes)")
	}
	if off > 0 && off < r.FileLength {
		if r, err = s.GetBlockLocations(ctx, &api.GetBlockLocationsRequest{Path: req.path, Offset: off, Length: 1}); err != nil {
			return webAnswer{}, err
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
	dn, err := s.n.webDatanode(holders, 0)
	if err != nil {
		return webAnswer{}, err
	}
	red := security.Redirect{User: req.user, Op: security.RedirectOpen, Path: req.path, Datanode: dn.ID,
		Inode: r.InodeId, Offset: off, Length: length, HasLength: !whole}
	q := url.Values{"op": {"OPEN"}, "offset": {strconv.FormatUint(off, 10)}}
	if !whole {
		q.Set("length", strconv.FormatUint(length, 10))
	}
	return s.n.redirectTo(dn, red, q)
}

// webCreate checks the parameters and what the namespace can tell
// without a change (the path is not a directory; it does not exist unless
// overwrite; its walk is permitted; the parent exists unless createparent),
// and redirects to a datanode with room for a block. The write permission
// on the parent is checked by Create itself, which the datanode calls
// before it stores a byte.
func (s *clientService) webCreate(ctx context.Context, req *webReq) (webAnswer, error) {
	cp, err := s.n.createParams(req)
	if err != nil {
		return webAnswer{}, err
	}
	st, err := s.GetFileInfo(ctx, &api.GetFileInfoRequest{Path: req.path})
	switch {
	case err == nil && st.Status.IsDir:
		return webAnswer{}, errs.New(errs.Exist, "create", req.path, "a directory of that name exists")
	case err == nil && !cp.Overwrite:
		return webAnswer{}, errs.New(errs.Exist, "create", req.path, "the file exists and overwrite is false")
	case err != nil && errs.KindOf(err) != errs.NotFound:
		return webAnswer{}, err
	case err != nil && !cp.CreateParent:
		parent := req.path[:max(1, len(req.path)-len(webhdfs.BaseName(req.path))-1)]
		pst, perr := s.GetFileInfo(ctx, &api.GetFileInfoRequest{Path: parent})
		if perr != nil {
			return webAnswer{}, perr
		}
		if !pst.Status.IsDir {
			return webAnswer{}, errs.New(errs.NotDir, "create", req.path, "the parent is not a directory")
		}
	}
	dn, err := s.n.webDatanode(nil, cp.BlockSize)
	if err != nil {
		return webAnswer{}, err
	}
	red := security.Redirect{User: req.user, Op: security.RedirectCreate, Path: req.path, Datanode: dn.ID, Create: cp}
	return s.n.redirectTo(dn, red, url.Values{"op": {"CREATE"}})
}

// createParams reads CREATE's parameters, with the namenode's defaults,
// and checks them as Create would.
func (n *Namenode) createParams(req *webReq) (security.CreateParams, error) {
	q := req.q
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
	repl, err := q.Int("replication", int64(n.cfg.DefaultRepl), namespace.MinReplication, namespace.MaxReplication)
	if err != nil {
		return cp, err
	}
	cp.Replication = uint32(repl)
	if cp.BlockSize, err = q.Uint("blocksize", n.cfg.DefaultBlock); err != nil {
		return cp, err
	}
	if msg := n.cfg.blockSizeProblem(cp.BlockSize); msg != "" {
		return cp, webhdfs.Errorf(webhdfs.IllegalArgument, `Invalid value for webhdfs parameter "blocksize": `+strconv.FormatUint(cp.BlockSize, 10)+" is "+msg)
	}
	if _, err := q.Int("buffersize", 4096, 1, 1<<30); err != nil {
		return cp, err
	}
	return cp, nil
}

// webDatanode picks the datanode a data step goes to: a live one among
// prefer that serves HTTP, else any live one that does (with room for a
// block of blockSize when it is not 0).
func (n *Namenode) webDatanode(prefer []string, blockSize uint64) (blocks.Datanode, error) {
	var live []blocks.Datanode
	for _, d := range n.blocks.Datanodes() {
		if d.State == blocks.Live && d.HTTPAddr != "" {
			live = append(live, d)
		}
	}
	for _, id := range prefer {
		for _, d := range live {
			if d.ID == id {
				return d, nil
			}
		}
	}
	if blockSize > 0 {
		if ts, err := n.blocks.ChooseTargets(1, blockSize, nil); err == nil && ts[0].HTTPAddr != "" {
			return ts[0], nil
		}
	}
	if len(live) == 0 {
		return blocks.Datanode{}, errs.New(errs.Unavailable, "webhdfs", "", "no live datanode serves HTTP")
	}
	return live[rand.IntN(len(live))], nil
}

// redirectTo signs red and answers 307 to dn's WebHDFS URL for red's path
// with the query q, the token, and (simple auth) the user.
func (n *Namenode) redirectTo(dn blocks.Datanode, red security.Redirect, q url.Values) (webAnswer, error) {
	tok, _, err := n.issuer.RedirectToken(red)
	if err != nil {
		return webAnswer{}, err
	}
	q.Set(webhdfs.TokenParam, string(tok))
	if n.cfg.Auth == AuthSimple {
		q.Set(security.HTTPUserParam, red.User)
	}
	u := url.URL{Scheme: "http", Host: webHost(dn), Path: webhdfs.Prefix + red.Path, RawQuery: q.Encode()}
	if n.cfg.TLS != nil {
		u.Scheme = "https"
	}
	return webAnswer{status: http.StatusTemporaryRedirect, location: u.String()}, nil
}

// webHost is the host:port clients reach dn's HTTP port at: its HTTP
// address, with the host of its data address when it listens on every
// interface.
func webHost(dn blocks.Datanode) string {
	h, p, err := net.SplitHostPort(dn.HTTPAddr)
	if err != nil {
		return dn.HTTPAddr
	}
	if ip := net.ParseIP(h); h == "" || (ip != nil && ip.IsUnspecified()) {
		if dh, _, err := net.SplitHostPort(dn.Addr); err == nil {
			h = dh
		}
	}
	return net.JoinHostPort(h, p)
}
