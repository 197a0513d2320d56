// Package serve holds what every blockfs server does the same way: a gRPC
// server whose errors become statuses through the errs table (with the kind
// in the trailer), gRPC health checking and reflection, the /metrics and
// /healthz HTTP endpoint, and a bounded graceful stop.
package serve

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/blockfs/blockfs/internal/node/flow"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/security"
)

// Observe records one finished RPC: its full method name, status code name
// and duration.
type Observe func(method, code string, d time.Duration)

// NewGRPC returns a gRPC server with opts, TLS credentials when tlsConf is
// set, and interceptors that time every call (unary and streaming), pass it
// through authz (every method, including health and reflection, needs a
// rule in security.Policy) and turn returned errors into statuses. limits
// bounds each connection's streams, pings and refusals (penalty.go); reg
// counts the streams that reach the limit and the time connections are
// slowed.
func NewGRPC(tlsConf *tls.Config, observe Observe, authz *security.Authorizer, limits Limits, reg prometheus.Registerer, opts ...grpc.ServerOption) *Server {
	if limits == (Limits{}) {
		limits = DefaultLimits()
	}
	box := newPenaltyBox(limits, reg)
	opts = append(opts, limits.grpcOptions(reg, box)...)
	opts = append(opts, flow.ServerOptions()...)
	opts = append(opts,
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			start := time.Now()
			ctx, err := authz.Authorize(ctx, info.FullMethod, req)
			var resp any
			if err == nil {
				resp, err = h(ctx, req)
			}
			if err != nil {
				if md := errs.Trailer(err); md != nil {
					grpc.SetTrailer(ctx, md)
				}
				err = errs.ToStatus(err)
			}
			code := status.Code(err)
			observeRefusal(ctx, code)
			observe(info.FullMethod, code.String(), time.Since(start))
			return resp, err
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			start := time.Now()
			ctx, err := authz.Authorize(ss.Context(), info.FullMethod, nil)
			if err == nil {
				err = h(srv, &identifiedStream{ServerStream: ss, ctx: ctx})
			}
			if err != nil {
				if md := errs.Trailer(err); md != nil {
					ss.SetTrailer(md)
				}
				err = errs.ToStatus(err)
			}
			code := status.Code(err)
			observeRefusal(ctx, code)
			observe(info.FullMethod, code.String(), time.Since(start))
			return err
		}),
	)
	if tlsConf != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(tlsConf)))
	}
	return &Server{Server: grpc.NewServer(opts...), box: box}
}

// Server is a gRPC server made by NewGRPC, with the refusal budgets of its
// connections.
type Server struct {
	*grpc.Server
	box *penaltyBox
}

// identifiedStream is a server stream whose context carries the caller's
// identity.
type identifiedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *identifiedStream) Context() context.Context { return s.ctx }

// GRPC registers health checking (SERVING for every service registered so
// far) and reflection on srv, and serves lis (each connection read through
// its refusal budget) until srv stops. wg tracks the serving goroutine.
func GRPC(srv *Server, lis net.Listener, wg *sync.WaitGroup, log *slog.Logger) {
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	for name := range srv.GetServiceInfo() {
		hs.SetServingStatus(name, healthpb.HealthCheckResponse_SERVING)
	}
	healthpb.RegisterHealthServer(srv, hs)
	reflection.Register(srv)
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := srv.Serve(srv.box.listen(lis)); err != nil {
			log.Error("grpc serve", "err", err)
		}
	}()
}

// HTTPConfig is a server's HTTP endpoint: /metrics and /healthz, and more
// routes.
type HTTPConfig struct {
	// Addr is the listen address; "" serves nothing.
	Addr     string
	Registry *prometheus.Registry
	Authz    *security.Authorizer
	// TLS, if set, serves HTTPS. The client certificate is verified when
	// one is given but not required (tls.VerifyClientCertIfGiven), so that
	// public endpoints (/metrics, /healthz: scrapers and probes) need none,
	// while the authorizer names the caller of any other endpoint from it.
	TLS *tls.Config
	// Routes maps more "METHOD /path" patterns to their handlers, each
	// served through its rule in security.Policy.
	Routes map[string]Route
	// Limits gives the HTTP timeouts (its HTTP* fields).
	Limits Limits
}

// Route is one HTTP endpoint beyond /metrics and /healthz.
type Route struct {
	Handler http.Handler
	// Denied writes the authorizer's refusals (nil: plain text), so that an
	// HTML page refuses with a page and a REST API with its error body.
	Denied security.HTTPDenied
}

// StartHTTP serves cfg until the returned server is closed; wg tracks the
// serving goroutine. An empty cfg.Addr serves nothing and returns nil, nil.
func StartHTTP(cfg HTTPConfig, wg *sync.WaitGroup, log *slog.Logger) (*http.Server, net.Listener, error) {
	if cfg.Addr == "" {
		return nil, nil, nil
	}
	lis, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, nil, errs.Wrap(errs.Unavailable, "serve.StartHTTP", cfg.Addr, err)
	}
	if cfg.Limits == (Limits{}) {
		cfg.Limits = DefaultLimits()
	}
	mux := http.NewServeMux()
	handle := func(pattern string, r Route) { mux.Handle(pattern, cfg.Authz.HTTPWith(pattern, r.Handler, r.Denied)) }
	handle("GET /metrics", Route{Handler: promhttp.HandlerFor(cfg.Registry, promhttp.HandlerOpts{Registry: cfg.Registry})})
	handle("GET /healthz", Route{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) })})
	for pattern, r := range cfg.Routes {
		handle(pattern, r)
	}
	// No whole-request ReadTimeout or WriteTimeout: WebHDFS streams bodies
	// of any size; progress (progress.go) bounds a stall instead.
	// Every request, routed or not, gets fresh deadlines: without a
	// WriteTimeout the server never resets the one the last request left.
	h := progress(mux, cfg.Limits.HTTPProgressTimeout, newStallCounter(cfg.Registry))
	srv := &http.Server{Handler: h, ReadHeaderTimeout: cfg.Limits.HTTPReadHeaderTimeout, IdleTimeout: cfg.Limits.HTTPIdleTimeout}
	if cfg.TLS != nil {
		srv.TLSConfig = cfg.TLS.Clone()
		srv.TLSConfig.ClientAuth = tls.VerifyClientCertIfGiven
		srv.TLSConfig.NextProtos = nil // ServeTLS offers h2 and http/1.1
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		var err error
		if srv.TLSConfig != nil {
			err = srv.ServeTLS(lis, "", "")
		} else {
			err = srv.Serve(lis)
		}
		if err != nil && err != http.ErrServerClosed {
			log.Error("http serve", "err", err)
		}
	}()
	return srv, lis, nil
}

// Stop lets running RPCs finish for up to grace, then stops srv hard.
func Stop(srv *Server, grace time.Duration) {
	stopped := make(chan struct{})
	go func() { srv.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(grace):
		srv.Stop()
	}
}
