package namenode

import (
	"context"
	"net/http"
	"time"

	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/serve"
	"github.com/blockfs/blockfs/security"
	"github.com/blockfs/blockfs/webhdfs"
)

// WebHDFS: Hadoop's REST API at /webhdfs/v1/<path>?op=... on the HTTP
// port. Every op runs in-process through the same clientService method
// its RPC runs (validation, read barrier, forwarding to the leader, and
// the FSM's permission checks as the caller), with the caller the
// authorizer named from the request (user.name under simple auth, the
// client certificate under mTLS). CREATE, APPEND and OPEN answer 307 to a
// datanode (webhdfs_data.go, webhdfs_append.go). docs/OPERATIONS.md has the table of ops.

// webhdfsTimeout bounds one metadata op (a GETCONTENTSUMMARY of a large
// tree walks it page by page).
const webhdfsTimeout = 2 * time.Minute

// webhdfsRoutes returns the WebHDFS endpoints, one per HTTP method, each
// served through its security.Policy row and refusing in Hadoop's error
// format.
func (n *Namenode) webhdfsRoutes() map[string]serve.Route {
	h := http.HandlerFunc(n.serveWebHDFS)
	out := map[string]serve.Route{}
	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete} {
		out[m+" "+webhdfs.Prefix+"/"] = serve.Route{Handler: h, Denied: webhdfsDenied}
	}
	return out
}

// webhdfsDenied answers the authorizer's refusals as RemoteExceptions:
// SecurityException (401) when the caller could not be named,
// AccessControlException (403) otherwise.
func webhdfsDenied(w http.ResponseWriter, _ *http.Request, status int, err error) {
	ex := webhdfs.AccessControl
	if status == http.StatusUnauthorized {
		ex = webhdfs.Security
	}
	webhdfs.WriteError(w, &webhdfs.Error{Ex: ex, Msg: "refused", Err: err})
}

// webReq is one parsed WebHDFS request.
type webReq struct {
	op   webhdfs.Op
	path string
	q    webhdfs.Query
	user string
	r    *http.Request
}

// webAnswer is what an op answers: a JSON document (body) with status,
// or a redirect (location).
type webAnswer struct {
	status   int
	body     []byte
	location string
}

func (n *Namenode) serveWebHDFS(w http.ResponseWriter, r *http.Request) {
	req, err := parseWebReq(r)
	if err != nil {
		webhdfs.WriteError(w, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), webhdfsTimeout)
	defer cancel()
	ans, err := n.runWebOp(ctx, req)
	if err != nil {
		if errs.KindOf(err) == errs.Internal || errs.KindOf(err) == errs.Other {
			n.log.Warn("webhdfs", "op", req.op.Name, "path", req.path, "user", req.user, "err", err)
		}
		webhdfs.WriteError(w, err)
		return
	}
	if ans.location != "" {
		if noRedirect, err := req.q.Bool("noredirect", false); err != nil {
			webhdfs.WriteError(w, err)
			return
		} else if noRedirect {
			webhdfs.WriteJSON(w, http.StatusOK, webhdfs.LocationJSON{Location: ans.location})
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
	webhdfs.WriteRaw(w, ans.status, ans.body)
}

// parseWebReq checks what every op needs: a known op under this method,
// a path within the namespace rules, the caller, and no proxy user.
func parseWebReq(r *http.Request) (*webReq, error) {
	q, err := webhdfs.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, err
	}
	method := r.Method
	if method == http.MethodHead {
		method = http.MethodGet
	}
	op, err := webhdfs.LookupOp(method, q.String("op"))
	if err != nil {
		return nil, err
	}
	p, err := webhdfs.Path(r.URL.Path)
	if err != nil {
		return nil, err
	}
	id, ok := security.IdentityFromContext(r.Context())
	if !ok || id.Role != security.RoleUser {
		return nil, webhdfs.Errorf(webhdfs.Security, "no user: WebHDFS runs as a user")
	}
	if d := q.String("doas"); d != "" && d != id.Name {
		return nil, webhdfs.Errorf(webhdfs.AccessControl, "user "+id.Name+" may not act as "+d+": blockfs has no proxy users")
	}
	return &webReq{op: op, path: p, q: q, user: id.Name, r: r}, nil
}

// runWebOp dispatches one served op.
func (n *Namenode) runWebOp(ctx context.Context, req *webReq) (webAnswer, error) {
	s := &clientService{n: n}
	switch req.op.Name {
	case "GETFILESTATUS":
		return s.webGetFileStatus(ctx, req)
	case "LISTSTATUS":
		return s.webListStatus(ctx, req)
	case "LISTSTATUS_BATCH":
		return s.webListStatusBatch(ctx, req)
	case "GETCONTENTSUMMARY":
		return s.webContentSummary(ctx, req)
	case "GETFILEBLOCKLOCATIONS", "GET_BLOCK_LOCATIONS":
		return s.webBlockLocations(ctx, req)
	case "GETFILECHECKSUM":
		return s.webChecksum(ctx, req)
	case "GETHOMEDIRECTORY":
		return jsonAnswer(webhdfs.PathJSON{Path: "/user/" + req.user})
	case "MKDIRS":
		return s.webMkdirs(ctx, req)
	case "RENAME":
		return s.webRename(ctx, req)
	case "DELETE":
		return s.webDelete(ctx, req)
	case "SETPERMISSION":
		return s.webSetPermission(ctx, req)
	case "SETOWNER":
		return s.webSetOwner(ctx, req)
	case "OPEN":
		return s.webOpen(ctx, req)
	case "CREATE":
		return s.webCreate(ctx, req)
	case "APPEND":
		return s.webAppend(ctx, req)
	}
	return webAnswer{}, webhdfs.Errorf(webhdfs.Unsupported, req.op.Name+" is not supported")
}
