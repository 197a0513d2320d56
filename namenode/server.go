package namenode

import (
	"context"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/internal/serve"
	"github.com/blockfs/blockfs/security"
)

// UserKey is the request metadata key carrying the caller's user name under
// simple authentication, as HDFS simple auth takes the client's login name.
const UserKey = "blockfs-user"

// GroupsKey carries the caller's groups (repeatable) under simple auth.
const GroupsKey = "blockfs-groups"

// ClientIDKey and CallIDKey name one logical call of one client; a client
// sends the same pair on every retry of the call (see retrycache.go).
const (
	ClientIDKey = "blockfs-client-id"
	CallIDKey   = "blockfs-call-id"
)

func (n *Namenode) startGRPC() {
	n.grpcSrv = serve.NewGRPC(n.cfg.TLS, func(method, code string, d time.Duration) {
		n.met.rpc.WithLabelValues(method, code).Observe(d.Seconds())
	}, grpc.MaxRecvMsgSize(n.cfg.MaxRequestSize))
	api.RegisterClientServiceServer(n.grpcSrv, &clientService{n: n})
	api.RegisterDatanodeProtocolServer(n.grpcSrv, &datanodeService{n: n})
	api.RegisterAdminServer(n.grpcSrv, &adminService{n: n})
	api.RegisterNamenodeInternalServer(n.grpcSrv, &internalService{n: n})
	serve.GRPC(n.grpcSrv, n.grpcLis, &n.wg, n.log)
}

func (n *Namenode) startHTTP() (err error) {
	n.httpSrv, n.httpLis, err = serve.HTTP(n.cfg.HTTPAddr, n.reg, &n.wg, n.log)
	return err
}

// caller returns the identity a request runs as: under mTLS the verified
// client certificate's CN, under simple auth the blockfs-user metadata.
func (n *Namenode) caller(ctx context.Context) *api.Caller {
	if n.cfg.Auth == AuthMTLS {
		user := "nobody"
		if p, ok := peer.FromContext(ctx); ok {
			if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok {
				if cn, err := security.IdentityFromTLS(ti.State); err == nil {
					user = cn
				}
			}
		}
		c := &api.Caller{User: user}
		c.ClientId, c.CallId = callIDs(ctx)
		return c
	}
	return callerFrom(ctx)
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

// callerFrom reads simple-auth identity from request metadata.
// (ValueFromIncomingContext reads single keys without copying the whole
// metadata map, which FromIncomingContext does on every call.)
func callerFrom(ctx context.Context) *api.Caller {
	user := "nobody"
	if v := metadata.ValueFromIncomingContext(ctx, UserKey); len(v) > 0 && v[0] != "" {
		user = v[0]
	}
	c := &api.Caller{User: user, Groups: metadata.ValueFromIncomingContext(ctx, GroupsKey)}
	c.ClientId, c.CallId = callIDs(ctx)
	return c
}

func (n *Namenode) header() *api.ResponseHeader {
	return &api.ResponseHeader{AppliedIndex: n.fsm.appliedIndex(), ServedBy: n.cfg.ID}
}

func nowMs() int64 { return time.Now().UnixMilli() }
