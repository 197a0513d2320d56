package webhdfs

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/node/serve"
	"github.com/blockfs/blockfs/security"
)

// The datanode half: the second step of CREATE, APPEND and OPEN, to which
// a namenode redirected the client with a redirect token. The door checks
// the token (signature, kind, times, this datanode, the op and path of
// the request, its user is the caller's, never used before here), then
// acts as the token's user through the Go client library: the same
// pipeline, block tokens and checksums as a gRPC client, and the core's
// own checks (Create, Append, GetBlockLocations as that user). Under mTLS
// it calls namenodes with the datanode's own certificate and the token in
// security.DelegationKey metadata (the namenode runs those calls as the
// user); under simple auth it states the user, as any simple-auth client
// does.

// RedirectVerifier checks the redirect tokens a datanode is presented.
type RedirectVerifier interface {
	// VerifyRedirect checks token's signature, kind and times and returns
	// what it grants. A token signed by a key the datanode has not heard
	// of may wait, until ctx ends, for the datanode to learn the
	// namenodes' keys. It does not check the datanode, op, path or user
	// the token names (the door does). It must be safe for concurrent
	// use.
	VerifyRedirect(ctx context.Context, token []byte) (security.Redirect, error)
}

// DatanodeConfig is what a DatanodeDoor is built from.
type DatanodeConfig struct {
	// ID is the datanode's ID: the door admits only tokens naming it, and
	// under mTLS it is the user its shared client names itself as.
	ID       string
	Verifier RedirectVerifier
	// Client reaches the namenodes (its User is set by the door).
	Client client.Config
	// SimpleAuth makes the door's clients state the token's user; under
	// mTLS one client with the datanode's certificate serves every user.
	SimpleAuth bool
	// ClockSkew is how long past its expiry a used token is remembered.
	ClockSkew time.Duration
	Log       *slog.Logger // nil: slog.Default()
}

// DatanodeDoor serves the WebHDFS data steps on a datanode's HTTP port.
// It is safe for concurrent use; Close releases its client.
type DatanodeDoor struct {
	cfg    DatanodeConfig
	log    *slog.Logger
	nonces *nonceCache

	mu     sync.Mutex
	shared *client.Client // mTLS: one client for every user (the token names the user)
	closed bool
}

// datanodeHandler runs one data step with c acting as red's user.
type datanodeHandler func(d *DatanodeDoor, ctx context.Context, w http.ResponseWriter, r *http.Request, c *client.Client, red security.Redirect)

// NewDatanodeDoor returns the door cfg describes.
func NewDatanodeDoor(cfg DatanodeConfig) *DatanodeDoor {
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	return &DatanodeDoor{cfg: cfg, log: log, nonces: newNonceCache(maxNonces)}
}

// Routes returns the door's endpoints: one per HTTP method of the ops
// with a data step (GET for OPEN, PUT for CREATE, POST for APPEND).
func (d *DatanodeDoor) Routes() map[string]serve.Route {
	return routes(http.HandlerFunc(d.serve), func(o Op) bool { return o.datanode != nil })
}

// Close closes the door's shared client; later requests are refused as
// unavailable.
func (d *DatanodeDoor) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	if d.shared != nil {
		d.shared.Close()
		d.shared = nil
	}
}

// client returns a client acting as red's user and the context to use it
// with, and a release function. Under mTLS the client is shared and the
// context carries the token; under simple auth it is the user's own and
// is closed by release.
func (d *DatanodeDoor) client(ctx context.Context, red security.Redirect, token string) (*client.Client, context.Context, func(), error) {
	cfg := d.cfg.Client
	if d.cfg.SimpleAuth {
		cfg.User = red.User
		c, err := client.New(cfg)
		if err != nil {
			return nil, nil, nil, err
		}
		return c, ctx, func() { c.Close() }, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, nil, nil, errs.New(errs.Unavailable, "webhdfs.DatanodeDoor", "", "datanode is stopping")
	}
	if d.shared == nil {
		cfg.User = d.cfg.ID
		c, err := client.New(cfg)
		if err != nil {
			return nil, nil, nil, err
		}
		d.shared = c
	}
	return d.shared, metadata.AppendToOutgoingContext(ctx, security.DelegationKey, token), func() {}, nil
}

// dataOp finds the op a datanode request names: one with a data step,
// under its method (HEAD for GET).
func dataOp(r *http.Request, name string) (Op, error) {
	method := r.Method
	if method == http.MethodHead {
		method = http.MethodGet
	}
	if o, ok := ops[strings.ToUpper(name)]; ok && o.datanode != nil && o.Method == method {
		return o, nil
	}
	// Unknown and unsupported ops get the namenode's answer; the rest
	// are served by namenodes only.
	if _, err := LookupOp(r.Method, name); err != nil {
		return Op{}, err
	}
	var served []string
	for _, o := range Ops() {
		if o.datanode != nil {
			served = append(served, o.Name+" ("+o.Method+")")
		}
	}
	list := strings.Join(served[:len(served)-1], ", ") + " and " + served[len(served)-1]
	return Op{}, Errorf(IllegalArgument, `Invalid value for webhdfs parameter "op": a datanode serves only `+list+` redirected by a namenode`)
}

func (d *DatanodeDoor) serve(w http.ResponseWriter, r *http.Request) {
	q, err := ParseQuery(r.URL.RawQuery)
	if err != nil {
		WriteError(w, err)
		return
	}
	op, err := dataOp(r, q.String("op"))
	if err != nil {
		WriteError(w, err)
		return
	}
	p, err := Path(r.URL.Path)
	if err != nil {
		WriteError(w, err)
		return
	}
	token := q.String(TokenParam)
	red, err := d.admit(r, q, token, op.Name, p)
	if err != nil {
		WriteError(w, err)
		return
	}
	c, ctx, release, err := d.client(r.Context(), red, token)
	if err != nil {
		WriteError(w, err)
		return
	}
	defer release()
	op.datanode(d, ctx, w, r, c, red)
}

// admit checks the redirect token of a request for op on path: valid,
// issued for this datanode, this op and this path, to the caller the
// authorizer named, and never used here before (it is then used up).
//
// APPEND is the exception, because Hadoop's clients reuse the datanode
// URL of a write: fsspec sends every chunk of a file as a POST op=APPEND
// to the one URL, and after a CREATE to the CREATE's URL with CREATE
// replaced by APPEND. So an APPEND is admitted with an APPEND token or a
// CREATE token (same datanode, path and user), as often as the caller
// likes until the token expires; each is an Append as the token's user,
// who needs w on the file for it.
func (d *DatanodeDoor) admit(r *http.Request, q Query, token, op, path string) (security.Redirect, error) {
	bad := func(err error) (security.Redirect, error) {
		return security.Redirect{}, &Error{Ex: InvalidToken, Msg: "redirect token refused", Err: err}
	}
	if token == "" {
		return bad(errs.New(errs.Unauthenticated, op, path, "no "+TokenParam+" parameter: start "+op+" at a namenode"))
	}
	red, err := d.cfg.Verifier.VerifyRedirect(r.Context(), []byte(token))
	if err != nil {
		return bad(err)
	}
	want := op
	if op == security.RedirectAppend && red.Op == security.RedirectCreate {
		want = security.RedirectCreate // the appends of the write it started
	}
	if err := red.Check(d.cfg.ID, want, path); err != nil {
		return bad(err)
	}
	if id, ok := security.IdentityFromContext(r.Context()); !ok || id.Role != security.RoleUser || id.Name != red.User {
		return bad(errs.Newf(errs.Permission, op, path, "token is for user %q, the caller is %v", red.User, id))
	}
	if op == security.RedirectAppend {
		return red, nil
	}
	// Every check before the nonce is spent: a refused request leaves the
	// token good for the request it was signed for.
	if op == security.RedirectOpen {
		if err := signedRange(q, red); err != nil {
			if errs.KindOf(err) == errs.Permission {
				return bad(err)
			}
			return security.Redirect{}, err
		}
	}
	if err := d.nonces.use(red.Nonce, red.ExpiresAt.Add(d.cfg.ClockSkew), time.Now()); err != nil {
		err = errs.WithOp(err, op)
		if errs.KindOf(err) == errs.Unavailable {
			return security.Redirect{}, err
		}
		return bad(err)
	}
	return red, nil
}
