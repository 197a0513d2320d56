package datanode

import (
	"path"
	"time"

	"google.golang.org/grpc"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/internal/serve"
)

// maxRecvMsg bounds one incoming message: a chunk plus framing.
const maxRecvMsg = 8 << 20

func (d *Datanode) startGRPC() {
	d.grpcSrv = serve.NewGRPC(d.cfg.TLS, func(method, code string, dur time.Duration) {
		d.met.rpc.WithLabelValues(path.Base(method), code).Observe(dur.Seconds())
	}, grpc.MaxRecvMsgSize(maxRecvMsg))
	api.RegisterDataServiceServer(d.grpcSrv, &dataService{d: d})
	serve.GRPC(d.grpcSrv, d.grpcLis, &d.wg, d.log)
}

func (d *Datanode) startHTTP() (err error) {
	d.httpSrv, d.httpLis, err = serve.HTTP(d.cfg.HTTPAddr, d.reg, &d.wg, d.log)
	return err
}
