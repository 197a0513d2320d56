package datanode

import (
	"context"
	"net"
	"net/http"
	"path"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
)

// maxRecvMsg bounds one incoming message: a chunk plus framing.
const maxRecvMsg = 8 << 20

func (d *Datanode) startGRPC() {
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(maxRecvMsg),
		grpc.ChainUnaryInterceptor(d.unaryInterceptor),
		grpc.ChainStreamInterceptor(d.streamInterceptor),
	}
	if d.cfg.TLS != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(d.cfg.TLS)))
	}
	d.grpcSrv = grpc.NewServer(opts...)
	api.RegisterDataServiceServer(d.grpcSrv, &dataService{d: d})
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	for name := range d.grpcSrv.GetServiceInfo() {
		hs.SetServingStatus(name, healthpb.HealthCheckResponse_SERVING)
	}
	healthpb.RegisterHealthServer(d.grpcSrv, hs)
	reflection.Register(d.grpcSrv)
	lis := d.grpcLis
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		if err := d.grpcSrv.Serve(lis); err != nil {
			d.log.Error("grpc serve", "err", err)
		}
	}()
}

func (d *Datanode) startHTTP() error {
	if d.cfg.HTTPAddr == "" {
		return nil
	}
	lis, err := net.Listen("tcp", d.cfg.HTTPAddr)
	if err != nil {
		return errs.Wrap(errs.Unavailable, "metrics listen", d.cfg.HTTPAddr, err)
	}
	d.httpLis = lis
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(d.reg, promhttp.HandlerOpts{Registry: d.reg}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) })
	d.httpSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		if err := d.httpSrv.Serve(lis); err != nil && err != http.ErrServerClosed {
			d.log.Error("http serve", "err", err)
		}
	}()
	return nil
}

// unaryInterceptor times every RPC and turns errors into gRPC statuses with
// the Kind in the trailer, as the namenode does.
func (d *Datanode) unaryInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	start := time.Now()
	resp, err := h(ctx, req)
	if err != nil {
		if md := errs.Trailer(err); md != nil {
			grpc.SetTrailer(ctx, md)
		}
		err = errs.ToStatus(err)
	}
	d.met.rpc.WithLabelValues(path.Base(info.FullMethod), status.Code(err).String()).Observe(time.Since(start).Seconds())
	return resp, err
}

// streamInterceptor is unaryInterceptor for streaming RPCs.
func (d *Datanode) streamInterceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	start := time.Now()
	err := h(srv, ss)
	if err != nil {
		if md := errs.Trailer(err); md != nil {
			ss.SetTrailer(md)
		}
		err = errs.ToStatus(err)
	}
	d.met.rpc.WithLabelValues(path.Base(info.FullMethod), status.Code(err).String()).Observe(time.Since(start).Seconds())
	return err
}
