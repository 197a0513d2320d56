package serve

import (
	"crypto/tls"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/blockfs/blockfs/internal/testutil/leaktest"
	"github.com/blockfs/blockfs/security"
)

func TestMain(m *testing.M) { leaktest.VerifyTestMain(m) }

// TestStartHTTPTLS: under mTLS the HTTP port serves TLS; /metrics and
// /healthz answer a client without a certificate, a route with a rule
// answers only one with a verified certificate, as its holder.
func TestStartHTTPTLS(t *testing.T) {
	ca, err := security.GenerateCA("test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair := func(id security.Identity, hosts []string) ([]byte, []byte) {
		c, k, err := security.IssueCert(ca, security.DefaultTrustDomain, id, hosts)
		if err != nil {
			t.Fatal(err)
		}
		return c, k
	}
	srvCert, srvKey := pair(security.Identity{Role: security.RoleNamenode, Name: "nn1"}, []string{"127.0.0.1"})
	serverTLS, err := security.ServerTLSConfig(ca.CertPEM, srvCert, srvKey)
	if err != nil {
		t.Fatal(err)
	}
	authz := security.NewAuthorizer(security.AuthConfig{Registry: prometheus.NewRegistry()})
	var wg sync.WaitGroup
	srv, lis, err := StartHTTP(HTTPConfig{
		Addr: "127.0.0.1:0", Registry: prometheus.NewRegistry(), Authz: authz, TLS: serverTLS,
		Routes: map[string]Route{"GET /{$}": {Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id, _ := security.IdentityFromContext(r.Context())
			io.WriteString(w, id.String())
		})}},
	}, &wg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Close(); wg.Wait() }()

	anonTLS, err := security.ClientTLSConfig(ca.CertPEM, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	userCert, userKey := pair(security.Identity{Role: security.RoleUser, Name: "alice"}, nil)
	aliceTLS, err := security.ClientTLSConfig(ca.CertPEM, userCert, userKey, "")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		tls    *tls.Config
		path   string
		status int
		body   string
	}{
		{"metrics without a certificate", anonTLS, "/metrics", 200, ""},
		{"healthz without a certificate", anonTLS, "/healthz", 200, "ok\n"},
		{"page without a certificate", anonTLS, "/", 401, ""},
		{"page as alice", aliceTLS, "/", 200, "user/alice"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := &http.Transport{TLSClientConfig: c.tls}
			defer tr.CloseIdleConnections()
			resp, err := (&http.Client{Transport: tr}).Get("https://" + lis.Addr().String() + c.path)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.status, b)
			}
			if c.body != "" && string(b) != c.body {
				t.Fatalf("body %q, want %q", b, c.body)
			}
		})
	}
}
