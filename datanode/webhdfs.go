package datanode

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/serve"
	"github.com/blockfs/blockfs/security"
	"github.com/blockfs/blockfs/webhdfs"
)

// WebHDFS data steps: the second step of CREATE, APPEND and OPEN, to which a
// namenode redirected the client with a redirect token. The datanode
// checks the token (signature, kind, times, this datanode, the op and path
// of the request, its user is the caller's, never used before here), then
// acts as the token's user through the Go client library: the same
// pipeline, block tokens and checksums as a gRPC client. Under mTLS it
// calls namenodes with its own certificate and the token in
// security.DelegationKey metadata (the namenode runs those calls as the
// user); under simple auth it states the user, as any simple-auth client
// does.

// webServer is a datanode's WebHDFS state.
type webServer struct {
	d      *Datanode
	verify *security.RedirectVerifier
	nonces *nonceCache

	mu     sync.Mutex
	shared *client.Client // mTLS: one client for every user (the token names the user)
	closed bool
}

func newWebHDFS(d *Datanode) *webServer {
	return &webServer{d: d, verify: security.NewRedirectVerifier(d.cfg.Security, d.tokens.keys), nonces: newNonceCache(maxNonces)}
}

// webhdfsRoutes returns the datanode's WebHDFS endpoints (GET for OPEN,
// PUT for CREATE, POST for APPEND) and starts the goroutine that closes
// their client when the datanode stops.
func (d *Datanode) webhdfsRoutes() map[string]serve.Route {
	wh := newWebHDFS(d)
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		<-d.ctx.Done()
		wh.close()
	}()
	h := http.HandlerFunc(wh.serve)
	return map[string]serve.Route{
		"GET " + webhdfs.Prefix + "/":  {Handler: h, Denied: webDenied},
		"PUT " + webhdfs.Prefix + "/":  {Handler: h, Denied: webDenied},
		"POST " + webhdfs.Prefix + "/": {Handler: h, Denied: webDenied},
	}
}

// webDenied answers the authorizer's refusals as RemoteExceptions.
func webDenied(w http.ResponseWriter, _ *http.Request, status int, err error) {
	ex := webhdfs.AccessControl
	if status == http.StatusUnauthorized {
		ex = webhdfs.Security
	}
	webhdfs.WriteError(w, &webhdfs.Error{Ex: ex, Msg: "refused", Err: err})
}

func (wh *webServer) close() {
	wh.mu.Lock()
	defer wh.mu.Unlock()
	wh.closed = true
	if wh.shared != nil {
		wh.shared.Close()
		wh.shared = nil
	}
}

// client returns a client acting as red's user and the context to use it
// with, and a release function. Under mTLS the client is shared and the
// context carries the token; under simple auth it is the user's own and
// is closed by release.
func (wh *webServer) client(ctx context.Context, red security.Redirect, token string) (*client.Client, context.Context, func(), error) {
	d := wh.d
	cfg := client.DefaultConfig(d.cfg.Namenodes...)
	cfg.DialOptions = d.cfg.DialOptions
	cfg.ChunkSize = d.cfg.ChunkSize
	if d.cfg.Auth == AuthSimple {
		cfg.User = red.User
		c, err := client.New(cfg)
		if err != nil {
			return nil, nil, nil, err
		}
		return c, ctx, func() { c.Close() }, nil
	}
	wh.mu.Lock()
	defer wh.mu.Unlock()
	if wh.closed {
		return nil, nil, nil, errs.New(errs.Unavailable, "webhdfs", "", "datanode is stopping")
	}
	if wh.shared == nil {
		cfg.User = d.id
		c, err := client.New(cfg)
		if err != nil {
			return nil, nil, nil, err
		}
		wh.shared = c
	}
	return wh.shared, metadata.AppendToOutgoingContext(ctx, security.DelegationKey, token), func() {}, nil
}

func (wh *webServer) serve(w http.ResponseWriter, r *http.Request) {
	q, err := webhdfs.ParseQuery(r.URL.RawQuery)
	if err != nil {
		webhdfs.WriteError(w, err)
		return
	}
	op := strings.ToUpper(q.String("op"))
	switch {
	case op == security.RedirectOpen && (r.Method == http.MethodGet || r.Method == http.MethodHead):
	case op == security.RedirectCreate && r.Method == http.MethodPut:
	case op == security.RedirectAppend && r.Method == http.MethodPost:
	default:
		// Unknown and unsupported ops get the namenode's answer; the rest
		// are served by namenodes only.
		if _, err := webhdfs.LookupOp(r.Method, op); err != nil {
			webhdfs.WriteError(w, err)
			return
		}
		webhdfs.WriteError(w, webhdfs.Errorf(webhdfs.IllegalArgument, `Invalid value for webhdfs parameter "op": a datanode serves only OPEN (GET), CREATE (PUT) and APPEND (POST) redirected by a namenode`))
		return
	}
	p, err := webhdfs.Path(r.URL.Path)
	if err != nil {
		webhdfs.WriteError(w, err)
		return
	}
	token := q.String(webhdfs.TokenParam)
	red, err := wh.admit(r, q, token, op, p)
	if err != nil {
		webhdfs.WriteError(w, err)
		return
	}
	c, ctx, release, err := wh.client(r.Context(), red, token)
	if err != nil {
		webhdfs.WriteError(w, err)
		return
	}
	defer release()
	switch op {
	case security.RedirectOpen:
		wh.open(ctx, w, r, c, red, q)
	case security.RedirectCreate:
		wh.create(ctx, w, r, c, red)
	default:
		wh.append(ctx, w, r, c, red)
	}
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
func (wh *webServer) admit(r *http.Request, q webhdfs.Query, token, op, path string) (security.Redirect, error) {
	bad := func(err error) (security.Redirect, error) {
		return security.Redirect{}, &webhdfs.Error{Ex: webhdfs.InvalidToken, Msg: "redirect token refused", Err: err}
	}
	if token == "" {
		return bad(errs.New(errs.Unauthenticated, "webhdfs", path, "no "+webhdfs.TokenParam+" parameter: start "+op+" at a namenode"))
	}
	red, err := wh.verifyToken(r.Context(), []byte(token))
	if err != nil {
		return bad(err)
	}
	want := op
	if op == security.RedirectAppend && red.Op == security.RedirectCreate {
		want = security.RedirectCreate // the appends of the write it started
	}
	if err := red.Check(wh.d.id, want, path); err != nil {
		return bad(err)
	}
	if id, ok := security.IdentityFromContext(r.Context()); !ok || id.Role != security.RoleUser || id.Name != red.User {
		return bad(errs.Newf(errs.Permission, "webhdfs", path, "token is for user %q, the caller is %v", red.User, id))
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
	if err := wh.nonces.use(red.Nonce, red.ExpiresAt.Add(wh.d.cfg.Security.ClockSkew), time.Now()); err != nil {
		if errs.KindOf(err) == errs.Unavailable {
			return security.Redirect{}, err
		}
		return bad(err)
	}
	return red, nil
}

// verifyToken verifies a redirect token; one signed by a key this
// datanode has not heard of waits for a key refresh, as block tokens do.
func (wh *webServer) verifyToken(ctx context.Context, token []byte) (security.Redirect, error) {
	var red security.Redirect
	var err error
	wh.d.tokens.awaitKeys(ctx, func() bool {
		red, err = wh.verify.Verify(token)
		return errors.Is(err, security.ErrUnknownRedirectKey)
	})
	return red, err
}
