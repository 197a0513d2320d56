package namenode_test

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/localcluster"
	"github.com/blockfs/blockfs/namenode"
	"github.com/blockfs/blockfs/security"
)

func issue(t *testing.T, ca *security.CA, cn string, server bool) ([]byte, []byte) {
	t.Helper()
	cert, key, err := security.IssueCert(ca, cn, server, []string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// TestMTLS: with mTLS on, a client without a certificate or with one from
// another CA cannot call any RPC; a client with a good certificate acts as
// its certificate's CN, whatever user it claims in metadata.
func TestMTLS(t *testing.T) {
	ca, err := security.GenerateCA("test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other, err := security.GenerateCA("someone else's CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	srvCert, srvKey := issue(t, ca, "nn", true)
	serverTLS, err := security.ServerTLSConfig(ca.CertPEM, srvCert, srvKey)
	if err != nil {
		t.Fatal(err)
	}
	peerTLS, err := security.ClientTLSConfig(ca.CertPEM, srvCert, srvKey, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Config{Namenodes: 1, Dir: t.TempDir(), Namenode: func(i int, nc *namenode.Config) {
		nc.Auth, nc.TLS, nc.PeerTLS = namenode.AuthMTLS, serverTLS, peerTLS
		nc.Superuser = "root"
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.NamenodeAddrs()[0]

	dial := func(t *testing.T, cfg *tls.Config) api.ClientServiceClient {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return api.NewClientServiceClient(conn)
	}
	mk := func(cert, key []byte) *tls.Config {
		cfg, err := security.ClientTLSConfig(ca.CertPEM, cert, key, "")
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	short := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), 3*time.Second)
	}

	t.Run("no certificate", func(t *testing.T) {
		cctx, cancel := short()
		defer cancel()
		_, err := dial(t, mk(nil, nil)).ClusterStatus(cctx, &api.ClusterStatusRequest{})
		if err == nil {
			t.Fatal("a client without a certificate was served")
		}
	})
	t.Run("other CA", func(t *testing.T) {
		cert, key := issue(t, other, "mallory", false)
		cctx, cancel := short()
		defer cancel()
		_, err := dial(t, mk(cert, key)).ClusterStatus(cctx, &api.ClusterStatusRequest{})
		if err == nil {
			t.Fatal("a client with another CA's certificate was served")
		}
	})
	t.Run("good certificate", func(t *testing.T) {
		rootCert, rootKey := issue(t, ca, "root", false)
		aliceCert, aliceKey := issue(t, ca, "alice", false)
		rootC, alice := dial(t, mk(rootCert, rootKey)), dial(t, mk(aliceCert, aliceKey))
		cctx, cancel := short()
		defer cancel()
		if _, err := rootC.Mkdirs(cctx, &api.MkdirsRequest{Path: "/alice"}); err != nil {
			t.Fatal(err)
		}
		if _, err := rootC.SetOwner(cctx, &api.SetOwnerRequest{Path: "/alice", Owner: "alice"}); err != nil {
			t.Fatal(err)
		}
		// alice claims to be root in metadata; the certificate decides.
		actx := incomingClaim(cctx, "root")
		if _, err := alice.Mkdirs(actx, &api.MkdirsRequest{Path: "/alice/d"}); err != nil {
			t.Fatal(err)
		}
		st, err := alice.GetFileInfo(actx, &api.GetFileInfoRequest{Path: "/alice/d"})
		if err != nil || st.Status.Owner != "alice" {
			t.Fatalf("owner %q (%v), want alice", st.GetStatus().GetOwner(), err)
		}
		if _, err := alice.Mkdirs(actx, &api.MkdirsRequest{Path: "/root-only"}); statusCode(err) != codes.PermissionDenied {
			t.Fatalf("alice claiming root in metadata: %v", err)
		}
	})
}

// incomingClaim adds a simple-auth user claim to an outgoing context.
func incomingClaim(ctx context.Context, user string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, namenode.UserKey, user)
}
