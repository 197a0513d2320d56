package webhdfs

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/node/serve"
	"github.com/blockfs/blockfs/security"
)

// The namenode half: every op runs in-process through the client service
// method its RPC runs, with the caller the authorizer named from the
// request (user.name under simple auth, the client certificate under
// mTLS). CREATE, APPEND and OPEN answer 307 to a datanode
// (namenode_data.go). docs/OPERATIONS.md has the table of ops.

// opTimeout bounds one namenode op (a GETCONTENTSUMMARY of a large tree
// walks it page by page).
const opTimeout = 2 * time.Minute

// A Target is a datanode a data step is redirected to.
type Target struct {
	ID       string // the datanode's ID, which the redirect token names
	HTTPAddr string // its HTTP listen address
	// DataAddr is its data (gRPC) address, whose host stands in for the
	// HTTP address's when that listens on every interface.
	DataAddr string
}

// DatanodePicker chooses the datanode of a data step. Its methods must
// be safe for concurrent use, and fail with errs.Unavailable when no live
// datanode serves HTTP.
type DatanodePicker interface {
	// ReadDatanode returns a live datanode that serves HTTP: the first of
	// holders (datanode IDs) that is one, else any.
	ReadDatanode(holders []string) (Target, error)
	// WriteDatanode returns a live datanode that serves HTTP, preferring
	// one with room for a block of blockSize (0: the namespace's default
	// block size).
	WriteDatanode(blockSize uint64) (Target, error)
}

// RedirectIssuer signs redirect tokens (security.Issuer is one).
type RedirectIssuer interface {
	// RedirectToken signs red, stamping its nonce and times, and returns
	// the token and the claims it carries. It must be safe for
	// concurrent use.
	RedirectToken(red security.Redirect) ([]byte, security.Redirect, error)
}

// NamenodeConfig is what a NamenodeDoor is built from.
type NamenodeConfig struct {
	// Service is the namenode's client service, through which every op
	// runs with the request's context (which carries the caller's
	// identity, security.IdentityFromContext).
	Service   api.ClientServiceServer
	Datanodes DatanodePicker
	Tokens    RedirectIssuer
	// TLS makes redirect URLs https (the datanodes serve HTTPS).
	TLS bool
	// SimpleAuth puts the user's name in redirect URLs
	// (security.HTTPUserParam), as simple-auth clients state it.
	SimpleAuth bool
	// DefaultReplication and DefaultBlockSize fill in CREATE's absent
	// replication and blocksize, so that the token fixes them.
	DefaultReplication uint32
	DefaultBlockSize   uint64
	// BlockPool is the block pool ID GET_BLOCK_LOCATIONS answers with.
	BlockPool string
	Log       *slog.Logger // nil: slog.Default()
}

// NamenodeDoor serves WebHDFS on a namenode's HTTP port. It is safe for
// concurrent use.
type NamenodeDoor struct {
	svc  api.ClientServiceServer
	dns  DatanodePicker
	toks RedirectIssuer
	cfg  NamenodeConfig
	log  *slog.Logger
}

// namenodeHandler runs one op on a namenode.
type namenodeHandler func(d *NamenodeDoor, ctx context.Context, req *request) (answer, error)

// NewNamenodeDoor returns the door cfg describes.
func NewNamenodeDoor(cfg NamenodeConfig) *NamenodeDoor {
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	return &NamenodeDoor{svc: cfg.Service, dns: cfg.Datanodes, toks: cfg.Tokens, cfg: cfg, log: log}
}

// Routes returns the door's endpoints, one per HTTP method of the op
// table, each served through its security.Policy row and refusing in
// Hadoop's error format.
func (d *NamenodeDoor) Routes() map[string]serve.Route {
	return routes(http.HandlerFunc(d.serve), func(Op) bool { return true })
}

// routes maps "METHOD /webhdfs/v1/" to h for the methods of the ops
// served reports true for.
func routes(h http.Handler, served func(Op) bool) map[string]serve.Route {
	out := map[string]serve.Route{}
	for _, m := range methods(served) {
		out[m+" "+Prefix+"/"] = serve.Route{Handler: h, Denied: denied}
	}
	return out
}

// denied answers the authorizer's refusals as RemoteExceptions:
// SecurityException (401) when the caller could not be named,
// AccessControlException (403) otherwise.
func denied(w http.ResponseWriter, _ *http.Request, status int, err error) {
	ex := AccessControl
	if status == http.StatusUnauthorized {
		ex = Security
	}
	WriteError(w, &Error{Ex: ex, Msg: "refused", Err: err})
}

// request is one parsed namenode request.
type request struct {
	op   Op
	path string
	q    Query
	user string
	r    *http.Request
}

// answer is what an op answers: a JSON document (body) with status, or a
// redirect (location).
type answer struct {
	status   int
	body     []byte
	location string
}

func (d *NamenodeDoor) serve(w http.ResponseWriter, r *http.Request) {
	req, err := parseRequest(r)
	if err != nil {
		WriteError(w, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), opTimeout)
	defer cancel()
	ans, err := req.op.namenode(d, ctx, req)
	if err != nil {
		if k := errs.KindOf(err); k == errs.Internal || k == errs.Other {
			d.log.Warn("webhdfs", "op", req.op.Name, "path", req.path, "user", req.user, "err", err)
		}
		WriteError(w, err)
		return
	}
	if ans.location != "" {
		if noRedirect, err := req.q.Bool("noredirect", false); err != nil {
			WriteError(w, err)
			return
		} else if noRedirect {
			WriteJSON(w, http.StatusOK, LocationJSON{Location: ans.location})
			return
		}
		w.Header().Set("Location", ans.location)
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(http.StatusTemporaryRedirect)
		return
	}
	if ans.body == nil {
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(ans.status)
		return
	}
	WriteRaw(w, ans.status, ans.body)
}

// parseRequest checks what every op needs: a known op under this method
// that a namenode serves, a path within the namespace rules, the caller,
// and no proxy user.
func parseRequest(r *http.Request) (*request, error) {
	q, err := ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, err
	}
	method := r.Method
	if method == http.MethodHead {
		method = http.MethodGet
	}
	op, err := LookupOp(method, q.String("op"))
	if err != nil {
		return nil, err
	}
	if op.namenode == nil {
		return nil, Errorf(Unsupported, op.Name+" is not supported")
	}
	p, err := Path(r.URL.Path)
	if err != nil {
		return nil, err
	}
	id, ok := security.IdentityFromContext(r.Context())
	if !ok || id.Role != security.RoleUser {
		return nil, Errorf(Security, "no user: WebHDFS runs as a user")
	}
	if as := q.String("doas"); as != "" && as != id.Name {
		return nil, Errorf(AccessControl, "user "+id.Name+" may not act as "+as+": blockfs has no proxy users")
	}
	return &request{op: op, path: p, q: q, user: id.Name, r: r}, nil
}
