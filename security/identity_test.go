package security

import (
	"crypto/x509"
	"encoding/pem"
	"net/url"
	"testing"
	"time"

	"github.com/blockfs/blockfs/errs"
)

// TestIdentityFromCert: a certificate names its holder only through exactly
// one spiffe URI SAN in this cluster's trust domain with a known role; the
// Common Name is never read.
func TestIdentityFromCert(t *testing.T) {
	ca, err := GenerateCA("ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	parse := func(t *testing.T, certPEM []byte) *x509.Certificate {
		t.Helper()
		b, _ := pem.Decode(certPEM)
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	issued := func(t *testing.T, td string, id Identity) *x509.Certificate {
		t.Helper()
		c, _, err := IssueCert(ca, td, id, []string{"127.0.0.1"})
		if err != nil {
			t.Fatal(err)
		}
		return parse(t, c)
	}
	withURIs := func(t *testing.T, uris ...string) *x509.Certificate {
		c := issued(t, "blockfs", Identity{RoleUser, "alice"})
		c.URIs = nil
		for _, s := range uris {
			u, err := url.Parse(s)
			if err != nil {
				t.Fatal(err)
			}
			c.URIs = append(c.URIs, u)
		}
		return c
	}
	cases := []struct {
		name string
		cert func(t *testing.T) *x509.Certificate
		want Identity
		kind errs.Kind // 0: success
	}{
		{"namenode", func(t *testing.T) *x509.Certificate { return issued(t, "blockfs", Identity{RoleNamenode, "nn1"}) }, Identity{RoleNamenode, "nn1"}, 0},
		{"datanode", func(t *testing.T) *x509.Certificate { return issued(t, "blockfs", Identity{RoleDatanode, "dn-7"}) }, Identity{RoleDatanode, "dn-7"}, 0},
		{"user", func(t *testing.T) *x509.Certificate { return issued(t, "blockfs", Identity{RoleUser, "alice"}) }, Identity{RoleUser, "alice"}, 0},
		{"foreign trust domain", func(t *testing.T) *x509.Certificate { return issued(t, "other", Identity{RoleNamenode, "nn1"}) }, Identity{}, errs.Unauthenticated},
		{"no SAN, only a CN", func(t *testing.T) *x509.Certificate { return withURIs(t) }, Identity{}, errs.Unauthenticated},
		{"two SANs", func(t *testing.T) *x509.Certificate {
			return withURIs(t, "spiffe://blockfs/user/alice", "spiffe://blockfs/namenode/nn1")
		}, Identity{}, errs.Unauthenticated},
		{"unknown role", func(t *testing.T) *x509.Certificate { return withURIs(t, "spiffe://blockfs/admin/alice") }, Identity{}, errs.Unauthenticated},
		{"extra segment", func(t *testing.T) *x509.Certificate { return withURIs(t, "spiffe://blockfs/user/alice/x") }, Identity{}, errs.Unauthenticated},
		{"not spiffe", func(t *testing.T) *x509.Certificate { return withURIs(t, "https://blockfs/user/alice") }, Identity{}, errs.Unauthenticated},
		{"empty name", func(t *testing.T) *x509.Certificate { return withURIs(t, "spiffe://blockfs/user/") }, Identity{}, errs.Unauthenticated},
		{"port", func(t *testing.T) *x509.Certificate { return withURIs(t, "spiffe://blockfs:1/user/alice") }, Identity{}, errs.Unauthenticated},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := IdentityFromCert(c.cert(t), "blockfs")
			if c.kind != 0 {
				if !errs.Is(err, c.kind) {
					t.Fatalf("got %v, %v; want %v", got, err, c.kind)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %v, %v; want %v", got, err, c.want)
			}
		})
	}
}

func TestIssueCertRefusesBadInput(t *testing.T) {
	ca, err := GenerateCA("ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		td string
		id Identity
	}{
		{"blockfs", Identity{RoleNone, "x"}},
		{"blockfs", Identity{RoleUser, ""}},
		{"blockfs", Identity{RoleUser, "a/b"}},
		{"Bad Domain", Identity{RoleUser, "alice"}},
	} {
		if _, _, err := IssueCert(ca, c.td, c.id, nil); !errs.Is(err, errs.Invalid) {
			t.Errorf("IssueCert(%q, %v): %v, want Invalid", c.td, c.id, err)
		}
	}
	if _, _, err := IssueCert(nil, "blockfs", Identity{RoleUser, "a"}, nil); !errs.Is(err, errs.Invalid) {
		t.Errorf("nil CA: %v", err)
	}
}

// TestUserCertIsClientOnly: a user certificate cannot serve TLS.
func TestUserCertIsClientOnly(t *testing.T) {
	ca, _ := GenerateCA("ca", time.Hour)
	c, _, err := IssueCert(ca, "blockfs", Identity{RoleUser, "alice"}, []string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(c)
	cert, _ := x509.ParseCertificate(b.Bytes)
	for _, u := range cert.ExtKeyUsage {
		if u == x509.ExtKeyUsageServerAuth {
			t.Fatal("user certificate has server auth")
		}
	}
	if len(cert.IPAddresses) != 0 {
		t.Fatal("user certificate carries host SANs")
	}
}
