package namenode

import (
	"context"
	"maps"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/internal/node/serve"
	"github.com/blockfs/blockfs/namenode/locreply"
	"github.com/blockfs/blockfs/security"
)

// UserKey is the request metadata key carrying the caller's user name under
// simple authentication, as HDFS simple auth takes the client's login name
// (security.UserKey; security.RoleKey names the role, user by default).
const UserKey = security.UserKey

// ClientIDKey and CallIDKey name one logical call of one client; a client
// sends the same pair on every retry of the call (see retrycache.go).
const (
	ClientIDKey = "blockfs-client-id"
	CallIDKey   = "blockfs-call-id"
)

func (n *Namenode) startGRPC() {
	n.grpcSrv = serve.NewGRPC(n.cfg.Auth.TLS, func(method, code string, d time.Duration) {
		n.met.rpc.WithLabelValues(method, code).Observe(d.Seconds())
	}, n.authz, n.cfg.Limits.Serve, n.reg, grpc.MaxRecvMsgSize(n.cfg.MaxRequestSize),
		grpc.ForceServerCodecV2(serve.Codec(locreply.Release))) // recycles GetBlockLocations replies (package locreply)
	api.RegisterClientServiceServer(n.grpcSrv, newClientService(n))
	api.RegisterDatanodeProtocolServer(n.grpcSrv, &datanodeService{n: n})
	api.RegisterAdminServer(n.grpcSrv, &adminService{n: n})
	api.RegisterNamenodeInternalServer(n.grpcSrv, &internalService{n: n})
	serve.GRPC(n.grpcSrv, n.grpcLis, &n.wg, n.log)
}

// startHTTP serves /metrics, /healthz and the web UI (webui_door.go) on
// the HTTP port: HTTPS when the node has TLS (always under mTLS), with its
// server certificate; under mTLS a client certificate is needed only for
// the UI's pages.
func (n *Namenode) startHTTP() (err error) {
	routes, err := n.uiRoutes()
	if err != nil {
		return err
	}
	maps.Copy(routes, n.webhdfsRoutes()) // WebHDFS REST API (webhdfs_door.go)
	cfg := serve.HTTPConfig{Addr: n.cfg.HTTPAddr, Registry: n.reg, Authz: n.authz, TLS: n.cfg.Auth.TLS, Routes: routes, Limits: n.cfg.Limits.Serve}
	n.httpSrv, n.httpLis, err = serve.StartHTTP(cfg, &n.wg, n.log)
	return err
}

// caller returns the identity a request runs as: the user the authorizer
// named (from the verified certificate under mTLS, the blockfs-user
// metadata under simple auth), with the groups of the namenode's own group
// mapping; what a client says about its groups is never read. A request
// that reached a handler without passing the authorizer is identified here
// the same way; if that fails the caller has no user, and the FSM refuses
// every operation of a caller without one.
func (n *Namenode) caller(ctx context.Context) *api.Caller {
	c := n.readCaller(ctx)
	c.ClientId, c.CallId = callIDs(ctx)
	return c
}

// readCaller is caller without the retry-cache call identity, for reads,
// which are never retried from the cache and check no writer: two
// metadata lookups fewer on the hottest path.
func (n *Namenode) readCaller(ctx context.Context) *api.Caller {
	user, groups := n.reader(ctx)
	return &api.Caller{User: user, Groups: groups}
}

// reader is readCaller's user and groups, without building an api.Caller
// (GetBlockLocations needs none): an empty user when the caller cannot be
// identified, which the FSM refuses.
func (n *Namenode) reader(ctx context.Context) (user string, groups []string) {
	id, ok := security.IdentityFromContext(ctx)
	if !ok {
		var err error
		if id, err = n.authz.Identify(ctx); err != nil {
			return "", nil
		}
	}
	return id.Name, n.groups.Groups(id.Name)
}

// callIDs reads the retry-cache call identity from request metadata.
func callIDs(ctx context.Context) (string, uint64) {
	cid := metadata.ValueFromIncomingContext(ctx, ClientIDKey)
	call := metadata.ValueFromIncomingContext(ctx, CallIDKey)
	if len(cid) == 0 || len(call) == 0 || len(cid[0]) > 64 {
		return "", 0
	}
	n, err := strconv.ParseUint(call[0], 10, 64)
	if err != nil {
		return "", 0
	}
	return cid[0], n
}

// header returns the header of a reply built now. Replies built at the same
// applied index share one header, so a read allocates none: a header, once
// in a reply, is never modified (replies are marshalled or read, and any
// code that wants another header sets a new one).
func (n *Namenode) header() *api.ResponseHeader {
	idx := n.fsm.AppliedIndex()
	if h := n.hdr.Load(); h != nil && h.AppliedIndex == idx {
		return h
	}
	h := &api.ResponseHeader{AppliedIndex: idx, ServedBy: n.cfg.ID}
	n.hdr.Store(h)
	return h
}

// now is this node's wall clock, Config.Now (time.Now unless a test or
// --test-clock-offset set it). Every time the namenode puts in a command
// (mtimes, lease renewals and checks) is read here.
func (n *Namenode) now() time.Time { return n.cfg.Now() }

func (n *Namenode) nowMs() int64 { return n.now().UnixMilli() }
