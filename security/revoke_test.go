package security

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
)

func leafFor(t *testing.T, ca *CA, id Identity) *x509.Certificate {
	t.Helper()
	certPEM, _, err := IssueCert(ca, DefaultTrustDomain, id, nil)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(certPEM)
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestNormalizeRevoked: the accepted spellings of each kind of entry and
// their one key; everything else is Invalid.
func TestNormalizeRevoked(t *testing.T) {
	fp := strings.Repeat("Ab", 32)
	cases := []struct {
		name string
		e    *api.RevokedEntry
		key  string // "": refused
	}{
		{"serial hex", &api.RevokedEntry{Serial: "0A1b"}, "serial:a1b"},
		{"serial 0x and colons", &api.RevokedEntry{Serial: "0x00:0a:1B"}, "serial:a1b"},
		{"serial zero", &api.RevokedEntry{Serial: "00"}, "serial:0"},
		{"serial not hex", &api.RevokedEntry{Serial: "12g"}, ""},
		{"fingerprint", &api.RevokedEntry{Fingerprint: fp}, "sha256:" + strings.ToLower(fp)},
		{"fingerprint short", &api.RevokedEntry{Fingerprint: fp[:62]}, ""},
		{"identity", &api.RevokedEntry{Role: "namenode", Name: "nn2"}, "identity:namenode/nn2"},
		{"identity without name", &api.RevokedEntry{Role: "user"}, ""},
		{"identity unknown role", &api.RevokedEntry{Role: "root", Name: "x"}, ""},
		{"nothing", &api.RevokedEntry{Reason: "why"}, ""},
		{"two kinds", &api.RevokedEntry{Serial: "1", Role: "user", Name: "a"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, key, err := NormalizeRevoked(c.e)
			if c.key == "" {
				if !errs.Is(err, errs.Invalid) {
					t.Fatalf("got %q, %v; want Invalid", key, err)
				}
				return
			}
			if err != nil || key != c.key {
				t.Fatalf("got %q, %v; want %q", key, err, c.key)
			}
		})
	}
}

// TestDenyListCheck: a serial or fingerprint revokes that certificate
// only, so a reissued certificate of the same name passes; an identity
// revokes every certificate naming it; other callers pass.
func TestDenyListCheck(t *testing.T) {
	ca, err := GenerateCA("test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	alice, bob, nn2 := Identity{RoleUser, "alice"}, Identity{RoleUser, "bob"}, Identity{RoleNamenode, "nn2"}
	stolen, reissued := leafFor(t, ca, alice), leafFor(t, ca, alice)
	bobs, nn2s := leafFor(t, ca, bob), leafFor(t, ca, nn2)
	entry := func(e *api.RevokedEntry) *api.RevokedEntry {
		n, _, err := NormalizeRevoked(e)
		if err != nil {
			t.Fatal(err)
		}
		n.RevokedBy, n.RevokedUnixMs = "user/root", 1
		return n
	}
	cases := []struct {
		name    string
		entries []*api.RevokedEntry
		leaf    *x509.Certificate
		id      Identity
		revoked bool
	}{
		{"empty list", nil, stolen, alice, false},
		{"serial: the stolen certificate", []*api.RevokedEntry{entry(&api.RevokedEntry{Serial: SerialHex(stolen)})}, stolen, alice, true},
		{"serial: a reissued certificate passes", []*api.RevokedEntry{entry(&api.RevokedEntry{Serial: SerialHex(stolen)})}, reissued, alice, false},
		{"fingerprint: the stolen certificate", []*api.RevokedEntry{entry(&api.RevokedEntry{Fingerprint: Fingerprint(stolen)})}, stolen, alice, true},
		{"fingerprint: a reissued certificate passes", []*api.RevokedEntry{entry(&api.RevokedEntry{Fingerprint: Fingerprint(stolen)})}, reissued, alice, false},
		{"fingerprint: another user passes", []*api.RevokedEntry{entry(&api.RevokedEntry{Fingerprint: Fingerprint(stolen)})}, bobs, bob, false},
		{"identity: every certificate", []*api.RevokedEntry{entry(&api.RevokedEntry{Role: "user", Name: "alice"})}, reissued, alice, true},
		{"identity: simple auth (no certificate)", []*api.RevokedEntry{entry(&api.RevokedEntry{Role: "user", Name: "alice"})}, nil, alice, true},
		{"identity: same name, other role", []*api.RevokedEntry{entry(&api.RevokedEntry{Role: "namenode", Name: "alice"})}, stolen, alice, false},
		{"namenode identity", []*api.RevokedEntry{entry(&api.RevokedEntry{Role: "namenode", Name: "nn2"})}, nn2s, nn2, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var r Revocations
			r.Store(NewDenyList(c.entries))
			err := r.Check(c.leaf, c.id)
			if !c.revoked {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrRevoked) || !errs.Is(err, errs.Unauthenticated) || !strings.Contains(err.Error(), "user/root") {
				t.Fatalf("got %v; want Unauthenticated, ErrRevoked, naming who revoked", err)
			}
		})
	}
	var none *Revocations
	if err := none.Check(stolen, alice); err != nil {
		t.Fatal("a nil Revocations refused", err)
	}
}

// TestAuthorizerRefusesRevoked: under mTLS a revoked certificate is
// Unauthenticated on an RPC (even an Open one) and 401 on HTTP, counted
// by role in blockfs_security_revoked_refused_total; the same user's other
// certificate and other users pass.
func TestAuthorizerRefusesRevoked(t *testing.T) {
	ca, err := GenerateCA("test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	alice := Identity{RoleUser, "alice"}
	stolen, reissued, bob := leafFor(t, ca, alice), leafFor(t, ca, alice), leafFor(t, ca, Identity{RoleUser, "bob"})
	var revs Revocations
	e, _, _ := NormalizeRevoked(&api.RevokedEntry{Fingerprint: Fingerprint(stolen)})
	e.RevokedBy, e.RevokedUnixMs = "user/root", 1
	revs.Store(NewDenyList([]*api.RevokedEntry{e}))
	reg := prometheus.NewRegistry()
	a := NewAuthorizer(AuthConfig{Env: fakeEnv{super: "root"}, Registry: reg, Revoked: &revs})
	state := func(c *x509.Certificate) tls.ConnectionState {
		return tls.ConnectionState{HandshakeComplete: true, VerifiedChains: [][]*x509.Certificate{{c}}}
	}
	cases := []struct {
		name    string
		cert    *x509.Certificate
		method  string
		revoked bool
	}{
		{"stolen, Mkdirs", stolen, api.ClientService_Mkdirs_FullMethodName, true},
		{"stolen, ClusterStatus (open)", stolen, api.ClientService_ClusterStatus_FullMethodName, true},
		{"stolen, health (open)", stolen, "/grpc.health.v1.Health/Check", true},
		{"reissued, Mkdirs", reissued, api.ClientService_Mkdirs_FullMethodName, false},
		{"bob, Mkdirs", bob, api.ClientService_Mkdirs_FullMethodName, false},
	}
	want := 0.0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := peer.NewContext(context.Background(), &peer.Peer{AuthInfo: credentials.TLSInfo{State: state(c.cert)}})
			_, err := a.Authorize(ctx, c.method, nil)
			if c.revoked != (err != nil) || c.revoked && (!errs.Is(err, errs.Unauthenticated) || !errors.Is(err, ErrRevoked)) {
				t.Fatalf("revoked %v, got %v", c.revoked, err)
			}
			h := a.HTTP("GET /{$}", http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
			req := httptest.NewRequest("GET", "/", nil)
			st := state(c.cert)
			req.TLS = &st
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if wantCode := map[bool]int{true: 401, false: 200}[c.revoked]; rec.Code != wantCode {
				t.Fatalf("HTTP %d, want %d", rec.Code, wantCode)
			}
		})
		if c.revoked {
			want += 2
		}
	}
	if got := testutil.ToFloat64(a.revoked.WithLabelValues("user")); got != want {
		t.Fatalf("blockfs_security_revoked_refused_total{role=user} = %v, want %v", got, want)
	}
	if got := testutil.ToFloat64(a.denied.WithLabelValues(api.ClientService_Mkdirs_FullMethodName, "revoked")); got != 1 {
		t.Fatalf("denied{reason=revoked} = %v, want 1", got)
	}
}

// BenchmarkDenyListCheck: the cost the deny list adds to every call of a
// caller that is not on it, with none, identity-only, and serial and
// fingerprint entries (the serial text and the SHA-256 of the leaf).
func BenchmarkDenyListCheck(b *testing.B) {
	ca, err := GenerateCA("bench CA", time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	certPEM, _, err := IssueCert(ca, DefaultTrustDomain, Identity{RoleUser, "alice"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	blk, _ := pem.Decode(certPEM)
	leaf, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		b.Fatal(err)
	}
	id := Identity{RoleUser, "alice"}
	for _, c := range []struct {
		name    string
		entries []*api.RevokedEntry
	}{
		{"empty", nil},
		{"identities", []*api.RevokedEntry{{Role: "user", Name: "mallory"}}},
		{"serial+fingerprint", []*api.RevokedEntry{{Serial: "abc"}, {Fingerprint: strings.Repeat("ab", 32)}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var r Revocations
			r.Store(NewDenyList(c.entries))
			b.ReportAllocs()
			for b.Loop() {
				if r.Check(leaf, id) != nil {
					b.Fatal("refused")
				}
			}
		})
	}
}
