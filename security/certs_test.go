package security

import (
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/blockfs/blockfs/errs"
)

// TestTLSHandshake: a client certificate from the cluster CA is accepted and
// names the caller; one from another CA, or none, fails the handshake.
func TestTLSHandshake(t *testing.T) {
	ca, err := GenerateCA("blockfs-ca", 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other, err := GenerateCA("rogue-ca", 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	srvCert, srvKey, err := IssueCert(ca, DefaultTrustDomain, Identity{RoleNamenode, "nn1"}, []string{"127.0.0.1", "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := WritePEMFiles(filepath.Join(dir, "nn1.crt"), filepath.Join(dir, "nn1.key"), srvCert, srvKey); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "nn1.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, %v", fi.Mode(), err)
	}
	srvCfg, err := ServerTLSConfig(ca.CertPEM, srvCert, srvKey)
	if err != nil {
		t.Fatal(err)
	}
	aliceCert, aliceKey, err := IssueCert(ca, DefaultTrustDomain, Identity{RoleUser, "alice"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	malCert, malKey, err := IssueCert(other, DefaultTrustDomain, Identity{RoleUser, "alice"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if loaded, err := LoadCA(ca.CertPEM, ca.KeyPEM); err != nil || !loaded.Cert.Equal(ca.Cert) {
		t.Fatalf("LoadCA: %v", err)
	}

	cases := []struct {
		name      string
		cert, key []byte
		ok        bool
	}{
		{"cert from cluster CA", aliceCert, aliceKey, true},
		{"cert from another CA", malCert, malKey, false},
		{"no cert", nil, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cliCfg, err := ClientTLSConfig(ca.CertPEM, c.cert, c.key, "127.0.0.1")
			if err != nil {
				t.Fatal(err)
			}
			a, b := net.Pipe()
			type result struct {
				user string
				err  error
			}
			done := make(chan result, 1)
			go func() {
				s := tls.Server(a, srvCfg)
				defer s.Close()
				if err := s.Handshake(); err != nil {
					done <- result{err: err}
					return
				}
				id, err := IdentityFromTLS(s.ConnectionState(), DefaultTrustDomain)
				done <- result{id.Name, err}
			}()
			cl := tls.Client(b, cliCfg)
			herr := cl.Handshake()
			if herr == nil {
				// In TLS 1.3 the client may finish before the server has
				// checked its certificate; a read surfaces the verdict.
				_ = cl.SetReadDeadline(time.Now().Add(5 * time.Second))
				_, _ = cl.Read(make([]byte, 1))
			}
			cl.Close()
			r := <-done
			if c.ok {
				if r.err != nil || r.user != "alice" {
					t.Fatalf("user %q err %v (client %v)", r.user, r.err, herr)
				}
			} else if r.err == nil {
				t.Fatalf("server accepted; identity %q", r.user)
			}
		})
	}
}

func TestIdentityFromTLSRequiresVerifiedChain(t *testing.T) {
	_, err := IdentityFromTLS(tls.ConnectionState{}, DefaultTrustDomain)
	wantErr(t, err, errs.Unauthenticated, "handshake not complete")
	_, err = IdentityFromTLS(tls.ConnectionState{HandshakeComplete: true}, DefaultTrustDomain)
	wantErr(t, err, errs.Unauthenticated, "no verified peer certificate")
}

func TestTLSConfigRejectsBadPEM(t *testing.T) {
	if _, err := ServerTLSConfig([]byte("junk"), nil, nil); !errs.Is(err, errs.Invalid) {
		t.Fatal(err)
	}
	if _, err := ClientTLSConfig([]byte("junk"), nil, nil, ""); !errs.Is(err, errs.Invalid) {
		t.Fatal(err)
	}
}
