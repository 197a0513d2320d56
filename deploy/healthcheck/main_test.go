package main

import (
	"context"
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/security"
)

type fakeNamenode struct {
	api.UnimplementedClientServiceServer
	status *api.ClusterStatusResponse
}

func (f *fakeNamenode) ClusterStatus(context.Context, *api.ClusterStatusRequest) (*api.ClusterStatusResponse, error) {
	return f.status, nil
}

// serve starts a gRPC server with the health service in state st and, if
// status is not nil, a ClientService answering ClusterStatus with it.
func serve(t *testing.T, st healthpb.HealthCheckResponse_ServingStatus, status *api.ClusterStatusResponse) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	hs := health.NewServer()
	hs.SetServingStatus("", st)
	healthpb.RegisterHealthServer(s, hs)
	if status != nil {
		api.RegisterClientServiceServer(s, &fakeNamenode{status: status})
	}
	go s.Serve(lis)
	t.Cleanup(s.Stop)
	return lis.Addr().String()
}

func TestHealthcheck(t *testing.T) {
	serving := healthpb.HealthCheckResponse_SERVING
	dns := []*api.DatanodeInfo{
		{Id: "dn1", Addr: "127.0.0.1:9201", State: "live"},
		{Id: "dn2", Addr: "127.0.0.1:9202", State: "dead"},
	}
	nn := serve(t, serving, &api.ClusterStatusResponse{LeaderId: "nn1", Term: 2, Datanodes: dns})
	noLeader := serve(t, serving, &api.ClusterStatusResponse{Term: 3, Datanodes: dns})
	notServing := serve(t, healthpb.HealthCheckResponse_NOT_SERVING, nil)
	dn := serve(t, serving, nil)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := lis.Addr().String()
	lis.Close()

	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"serving", []string{"-q", nn}, 0},
		{"not serving", []string{"-q", notServing}, 1},
		{"nothing listening", []string{"-q", "--timeout", "300ms", closed}, 1},
		{"no address", []string{"-q"}, 2},
		{"bad flag", []string{"--nope", nn}, 2},
		{"leader known", []string{"-q", "--leader", nn}, 0},
		{"no leader", []string{"-q", "--leader", noLeader}, 1},
		{"enough live datanodes", []string{"-q", "--min-datanodes", "1", nn}, 0},
		{"too few live datanodes", []string{"-q", "--min-datanodes", "2", nn}, 1},
		{"datanode live by id", []string{"-q", "--namenodes", nn, "--live-datanode", "dn1", dn}, 0},
		{"datanode live by address", []string{"-q", "--namenodes", nn, "--live-datanode", "127.0.0.1:9201", dn}, 0},
		{"datanode dead", []string{"-q", "--namenodes", nn, "--live-datanode", "dn2", dn}, 1},
		{"one namenode suffices", []string{"-q", "--namenodes", closed + "," + noLeader + "," + nn, "--leader", dn}, 0},
		{"no namenode suffices", []string{"-q", "--timeout", "300ms", "--namenodes", closed + "," + noLeader, "--leader", dn}, 1},
		{"every address must serve", []string{"-q", nn, notServing}, 1},
		{"wait gives up", []string{"-q", "--wait", "600ms", "--leader", noLeader}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := run(tc.args); got != tc.want {
				t.Errorf("healthcheck %v = %d, want %d", tc.args, got, tc.want)
			}
		})
	}
}

// authServe starts a namenode-like server (health + ClusterStatus with a
// leader) whose every call goes through the real authorizer: under mTLS when
// tlsCfg is set, else under simple auth.
func authServe(t *testing.T, tlsCfg *tls.Config) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	az := security.NewAuthorizer(security.AuthConfig{Simple: tlsCfg == nil})
	opts := []grpc.ServerOption{grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		ctx, err := az.Authorize(ctx, info.FullMethod, req)
		if err != nil {
			return nil, err
		}
		return h(ctx, req)
	})}
	if tlsCfg != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(tlsCfg)))
	}
	s := grpc.NewServer(opts...)
	hs := health.NewServer()
	healthpb.RegisterHealthServer(s, hs)
	api.RegisterClientServiceServer(s, &fakeNamenode{status: &api.ClusterStatusResponse{LeaderId: "nn1", Term: 1}})
	go s.Serve(lis)
	t.Cleanup(s.Stop)
	return lis.Addr().String()
}

func TestHealthcheckIdentity(t *testing.T) {
	dir := t.TempDir()
	ca, err := security.GenerateCA("test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"ca": filepath.Join(dir, "ca.pem")}
	if err := os.WriteFile(files["ca"], ca.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	var srvCert, srvKey []byte
	for _, id := range []security.Identity{{Role: security.RoleNamenode, Name: "nn1"}, {Role: security.RoleDatanode, Name: "dn1"}} {
		cert, key, err := security.IssueCert(ca, security.DefaultTrustDomain, id, []string{"127.0.0.1"})
		if err != nil {
			t.Fatal(err)
		}
		if id.Role == security.RoleNamenode {
			srvCert, srvKey = cert, key
		}
		c, k := filepath.Join(dir, id.Name+".pem"), filepath.Join(dir, id.Name+"-key.pem")
		if err := security.WritePEMFiles(c, k, cert, key); err != nil {
			t.Fatal(err)
		}
		files[id.Name], files[id.Name+"-key"] = c, k
	}
	srvTLS, err := security.ServerTLSConfig(ca.CertPEM, srvCert, srvKey)
	if err != nil {
		t.Fatal(err)
	}
	mtls := authServe(t, srvTLS)
	simple := authServe(t, nil)
	withCert := func(name string) []string {
		return []string{"--tls-ca", files["ca"], "--tls-cert", files[name], "--tls-key", files[name+"-key"]}
	}
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want int
	}{
		{"mtls, a datanode's certificate", append(withCert("dn1"), "-q", "--leader", mtls), nil, 0},
		{"mtls, files from the environment", []string{"-q", "--leader", mtls},
			map[string]string{"BLOCKFS_HEALTHCHECK_TLS_CA": files["ca"], "BLOCKFS_HEALTHCHECK_TLS_CERT": files["nn1"], "BLOCKFS_HEALTHCHECK_TLS_KEY": files["nn1-key"]}, 0},
		{"mtls, no certificate", []string{"-q", "--timeout", "500ms", mtls}, nil, 1},
		{"simple auth, default name", []string{"-q", "--leader", simple}, nil, 0},
		{"simple auth, a datanode's name", []string{"-q", "--leader", simple}, map[string]string{"BLOCKFS_HEALTHCHECK_USER": "dn1", "BLOCKFS_HEALTHCHECK_ROLE": "datanode"}, 0},
		{"simple auth, bad role", []string{"-q", "--role", "admin", simple}, nil, 2},
		{"missing key file", []string{"-q", "--tls-ca", files["ca"], "--tls-cert", files["dn1"], "--tls-key", filepath.Join(dir, "nope"), mtls}, nil, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			if got := run(tc.args); got != tc.want {
				t.Errorf("healthcheck %v (env %v) = %d, want %d", tc.args, tc.env, got, tc.want)
			}
		})
	}
}
