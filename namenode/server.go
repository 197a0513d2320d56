package namenode

import (
	"context"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/security"
)

// UserKey is the request metadata key carrying the caller's user name under
// simple authentication, as HDFS simple auth takes the client's login name.
const UserKey = "blockfs-user"

// GroupsKey carries the caller's groups (repeatable) under simple auth.
const GroupsKey = "blockfs-groups"

func (n *Namenode) startGRPC() {
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(n.cfg.MaxRequestSize),
		grpc.ChainUnaryInterceptor(n.unaryInterceptor),
	}
	if n.cfg.TLS != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(n.cfg.TLS)))
	}
	n.grpcSrv = grpc.NewServer(opts...)
	api.RegisterClientServiceServer(n.grpcSrv, &clientService{n: n})
	api.RegisterDatanodeProtocolServer(n.grpcSrv, &datanodeService{n: n})
	api.RegisterAdminServer(n.grpcSrv, &adminService{n: n})
	api.RegisterNamenodeInternalServer(n.grpcSrv, &internalService{n: n})
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	for name := range n.grpcSrv.GetServiceInfo() {
		hs.SetServingStatus(name, healthpb.HealthCheckResponse_SERVING)
	}
	healthpb.RegisterHealthServer(n.grpcSrv, hs)
	reflection.Register(n.grpcSrv)
	lis := n.grpcLis
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := n.grpcSrv.Serve(lis); err != nil {
			n.log.Error("grpc serve", "err", err)
		}
	}()
}

func (n *Namenode) startHTTP() error {
	if n.cfg.HTTPAddr == "" {
		return nil
	}
	lis, err := net.Listen("tcp", n.cfg.HTTPAddr)
	if err != nil {
		return errs.Wrap(errs.Unavailable, "metrics listen", n.cfg.HTTPAddr, err)
	}
	n.httpLis = lis
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(n.reg, promhttp.HandlerOpts{Registry: n.reg}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) })
	n.httpSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := n.httpSrv.Serve(lis); err != nil && err != http.ErrServerClosed {
			n.log.Error("http serve", "err", err)
		}
	}()
	return nil
}

// unaryInterceptor times every RPC and turns errors into gRPC statuses with
// the Kind (and leader hint) in the trailer.
func (n *Namenode) unaryInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	start := time.Now()
	resp, err := h(ctx, req)
	if err != nil {
		if md := errs.Trailer(err); md != nil {
			grpc.SetTrailer(ctx, md)
		}
		err = errs.ToStatus(err)
	}
	n.met.rpc.WithLabelValues(info.FullMethod, status.Code(err).String()).Observe(time.Since(start).Seconds())
	return resp, err
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
		return &api.Caller{User: user}
	}
	return callerFrom(ctx)
}

// callerFrom reads simple-auth identity from request metadata.
// (ValueFromIncomingContext reads single keys without copying the whole
// metadata map, which FromIncomingContext does on every call.)
func callerFrom(ctx context.Context) *api.Caller {
	user := "nobody"
	if v := metadata.ValueFromIncomingContext(ctx, UserKey); len(v) > 0 && v[0] != "" {
		user = v[0]
	}
	return &api.Caller{User: user, Groups: metadata.ValueFromIncomingContext(ctx, GroupsKey)}
}

func (n *Namenode) header() *api.ResponseHeader {
	return &api.ResponseHeader{AppliedIndex: n.fsm.appliedIndex(), ServedBy: n.cfg.ID}
}

func nowMs() int64 { return time.Now().UnixMilli() }
