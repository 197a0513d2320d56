package security

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestAuthorizeHTTP: HTTP endpoints through their rules, under simple auth
// (user.name) and mTLS (the verified client certificate): public rules
// serve anyone, other rules refuse an unnamed caller with 401 and a wrong
// role with 403, and the handler sees the caller's identity.
func TestAuthorizeHTTP(t *testing.T) {
	ca, err := GenerateCA("test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certState := func(id Identity) *tls.ConnectionState {
		certPEM, _, err := IssueCert(ca, DefaultTrustDomain, id, nil)
		if err != nil {
			t.Fatal(err)
		}
		blk, _ := pem.Decode(certPEM)
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		return &tls.ConnectionState{HandshakeComplete: true, VerifiedChains: [][]*x509.Certificate{{c}}}
	}
	alice := certState(Identity{Role: RoleUser, Name: "alice"})
	dn1 := certState(Identity{Role: RoleDatanode, Name: "dn1"})
	presented := &tls.ConnectionState{HandshakeComplete: true} // a certificate that was not verified
	cases := []struct {
		name    string
		simple  bool
		pattern string
		target  string
		tls     *tls.ConnectionState
		status  int
		body    string // the identity the handler saw
	}{
		{"public, simple, nobody", true, "GET /metrics", "/metrics", nil, 200, "-"},
		{"public, mtls, no certificate", false, "GET /healthz", "/healthz", &tls.ConnectionState{HandshakeComplete: true}, 200, "-"},
		{"browse, simple, no user.name", true, "GET /browse/{path...}", "/browse/", nil, 401, ""},
		{"browse, simple, bad name", true, "GET /browse/{path...}", "/browse/?user.name=a%2Fb", nil, 401, ""},
		{"browse, simple, alice", true, "GET /browse/{path...}", "/browse/?user.name=alice", nil, 200, "user/alice"},
		{"browse, mtls, plain HTTP", false, "GET /browse/{path...}", "/browse/?user.name=alice", nil, 401, ""},
		{"browse, mtls, unverified certificate", false, "GET /browse/{path...}", "/browse/", presented, 401, ""},
		{"browse, mtls, alice", false, "GET /browse/{path...}", "/browse/?user.name=root", alice, 200, "user/alice"},
		{"browse, mtls, datanode", false, "GET /browse/{path...}", "/browse/", dn1, 403, ""},
		{"overview, mtls, datanode", false, "GET /{$}", "/", dn1, 200, "datanode/dn1"},
		{"no rule", true, "GET /nowhere", "/nowhere?user.name=root", nil, 403, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := NewAuthorizer(AuthConfig{Simple: c.simple, Env: fakeEnv{super: "root"}, Registry: prometheus.NewRegistry()})
			h := a.HTTP(c.pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				id, ok := IdentityFromContext(r.Context())
				if !ok {
					io.WriteString(w, "-")
					return
				}
				io.WriteString(w, id.String())
			}))
			req := httptest.NewRequest("GET", c.target, nil)
			req.TLS = c.tls
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != c.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, c.status, rec.Body)
			}
			if c.status == 200 && rec.Body.String() != c.body {
				t.Fatalf("handler saw %q, want %q", rec.Body, c.body)
			}
		})
	}
}

// TestHTTPStaticUser: under simple auth a request that names no user is
// the static web user on the web UI's rules (StaticUser) and nowhere
// else; under mTLS the static user is never used.
func TestHTTPStaticUser(t *testing.T) {
	cases := []struct {
		name    string
		simple  bool
		static  string
		pattern string
		target  string
		status  int
		body    string
	}{
		{"overview, nobody", true, "dr.who", "GET /{$}", "/", 200, "user/dr.who"},
		{"datanodes, nobody", true, "dr.who", "GET /datanodes", "/datanodes", 200, "user/dr.who"},
		{"browse, nobody", true, "dr.who", "GET /browse/{path...}", "/browse/", 200, "user/dr.who"},
		{"browse, another static user", true, "web", "GET /browse/{path...}", "/browse/x", 200, "user/web"},
		{"browse, alice names herself", true, "dr.who", "GET /browse/{path...}", "/browse/?user.name=alice", 200, "user/alice"},
		{"browse, an empty user.name", true, "dr.who", "GET /browse/{path...}", "/browse/?user.name=", 401, ""},
		{"browse, no static user", true, "", "GET /browse/{path...}", "/browse/", 401, ""},
		{"webhdfs is no web page", true, "dr.who", "GET /webhdfs/v1/", "/webhdfs/v1/?op=LISTSTATUS", 401, ""},
		{"mtls, no certificate", false, "dr.who", "GET /browse/{path...}", "/browse/", 401, ""},
		{"mtls overview, no certificate", false, "dr.who", "GET /{$}", "/", 401, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := NewAuthorizer(AuthConfig{Simple: c.simple, HTTPStaticUser: c.static, Env: fakeEnv{super: "root"}, Registry: prometheus.NewRegistry()})
			h := a.HTTP(c.pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				id, _ := IdentityFromContext(r.Context())
				io.WriteString(w, id.String())
			}))
			req := httptest.NewRequest("GET", c.target, nil)
			if !c.simple {
				req.TLS = &tls.ConnectionState{HandshakeComplete: true}
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != c.status || (c.status == 200 && rec.Body.String() != c.body) {
				t.Fatalf("got %d %q, want %d %q", rec.Code, rec.Body, c.status, c.body)
			}
		})
	}
}
