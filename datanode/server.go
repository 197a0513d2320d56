package datanode

import (
	"crypto/x509"
	"path"
	"time"

	"google.golang.org/grpc"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/node/serve"
	"github.com/blockfs/blockfs/security"
)

// maxRecvMsg bounds one incoming message: a chunk plus framing.
const maxRecvMsg = 8 << 20

func (d *Datanode) startGRPC() {
	d.grpcSrv = serve.NewGRPC(d.cfg.TLS, func(method, code string, dur time.Duration) {
		d.met.rpc.WithLabelValues(path.Base(method), code).Observe(dur.Seconds())
	}, d.authz, d.cfg.Serve, d.reg, grpc.MaxRecvMsgSize(maxRecvMsg))
	api.RegisterDataServiceServer(d.grpcSrv, &dataService{d: d})
	serve.GRPC(d.grpcSrv, d.grpcLis, &d.wg, d.log)
}

// startHTTP serves /metrics, /healthz and the WebHDFS data steps
// (webhdfs_door.go) on the HTTP port: HTTPS with the datanode's certificate
// when it has TLS (always under mTLS), where, as on the namenode, only
// WebHDFS needs a client certificate.
func (d *Datanode) startHTTP() (err error) {
	cfg := serve.HTTPConfig{Addr: d.cfg.HTTPAddr, Registry: d.reg, Authz: d.authz, TLS: d.cfg.TLS, Routes: d.webhdfsRoutes(), Limits: d.cfg.Serve}
	d.httpSrv, d.httpLis, err = serve.StartHTTP(cfg, &d.wg, d.log)
	return err
}

// authEnv is the datanode's view for the authorizer: it has no superuser
// and takes any namenode certificate of the cluster as a namenode.
type authEnv struct{}

func (authEnv) IsSuperuser(string) bool { return false }
func (authEnv) IsMember(string) bool    { return true }

// certIdentity names the datanode by its own certificate under mTLS: it
// must be a datanode certificate of the cluster's trust domain.
func certIdentity(cfg Config) (security.Identity, error) {
	const op = "datanode.Start"
	if cfg.Auth != AuthMTLS {
		return security.Identity{}, nil
	}
	leaf := cfg.TLS.Certificates[0].Leaf
	if leaf == nil {
		var err error
		if leaf, err = x509.ParseCertificate(cfg.TLS.Certificates[0].Certificate[0]); err != nil {
			return security.Identity{}, errs.Wrap(errs.Invalid, op, "", err)
		}
	}
	id, err := security.IdentityFromCert(leaf, cfg.TrustDomain)
	if err != nil {
		return id, errs.Wrap(errs.Invalid, op, "", err)
	}
	if id.Role != security.RoleDatanode {
		return id, errs.Newf(errs.Invalid, op, "", "certificate names %s, not a datanode", id)
	}
	if cfg.ID != "" && cfg.ID != id.Name {
		return id, errs.Newf(errs.Invalid, op, "", "--id %q differs from the certificate's datanode name %q", cfg.ID, id.Name)
	}
	return id, nil
}
