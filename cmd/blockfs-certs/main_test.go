package main

import (
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/blockfs/blockfs/security"
)

// TestCertsMakeAWorkingMTLSPair: the files blockfs-certs writes load as a
// server and client mTLS pair that completes a handshake, the CA is reused
// on a second run, and the keys are private to the owner.
func TestCertsMakeAWorkingMTLSPair(t *testing.T) {
	dir := t.TempDir()
	if err := run([]string{"--dir", dir, "--namenodes", "nn1", "--datanodes", "dn1", "--users", "alice"}); err != nil {
		t.Fatal(err)
	}
	ca1, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"--dir", dir, "--users", "bob"}); err != nil {
		t.Fatal(err)
	}
	if ca2, _ := os.ReadFile(filepath.Join(dir, "ca.pem")); string(ca1) != string(ca2) {
		t.Fatal("a second run replaced the CA")
	}
	// A rerun keeps existing certificates; --force reissues them.
	alice1, _ := os.ReadFile(filepath.Join(dir, "user-alice.pem"))
	if err := run([]string{"--dir", dir, "--users", "alice"}); err != nil {
		t.Fatal(err)
	}
	if alice2, _ := os.ReadFile(filepath.Join(dir, "user-alice.pem")); string(alice1) != string(alice2) {
		t.Fatal("a rerun reissued an existing certificate")
	}
	if err := run([]string{"--dir", dir, "--users", "alice", "--force"}); err != nil {
		t.Fatal(err)
	}
	if alice3, _ := os.ReadFile(filepath.Join(dir, "user-alice.pem")); string(alice1) == string(alice3) {
		t.Fatal("--force kept the old certificate")
	}
	for _, f := range []string{"ca-key.pem", "namenode-nn1-key.pem", "datanode-dn1-key.pem", "user-alice-key.pem", "user-bob-key.pem"} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Fatalf("%s has mode %v, want 0600", f, st.Mode().Perm())
		}
	}
	server, _, err := security.TLSFromFiles(filepath.Join(dir, "ca.pem"), filepath.Join(dir, "namenode-nn1.pem"), filepath.Join(dir, "namenode-nn1-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	_, client, err := security.TLSFromFiles(filepath.Join(dir, "ca.pem"), filepath.Join(dir, "user-bob.pem"), filepath.Join(dir, "user-bob-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	client.ServerName = "127.0.0.1"
	a, b := net.Pipe()
	done := make(chan error, 1)
	var user security.Identity
	go func() {
		s := tls.Server(a, server)
		err := s.Handshake()
		if err == nil {
			user, err = security.IdentityFromTLS(s.ConnectionState(), security.DefaultTrustDomain)
		}
		done <- err
		s.Close()
	}()
	c := tls.Client(b, client)
	if err := c.Handshake(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	c.Close()
	if want := (security.Identity{Role: security.RoleUser, Name: "bob"}); user != want {
		t.Fatalf("server saw %v, want %v", user, want)
	}
	if err := run([]string{"--dir", dir}); err == nil {
		t.Fatal("no servers and no users should be an error")
	}
}

// TestFingerprint: `blockfs-certs fingerprint` reads the certificates it
// wrote and refuses a file that holds none.
func TestFingerprint(t *testing.T) {
	dir := t.TempDir()
	if err := run([]string{"--dir", dir, "--users", "alice"}); err != nil {
		t.Fatal(err)
	}
	notPEM := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(notPEM, []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		ok   bool
	}{
		{"a certificate", []string{"fingerprint", filepath.Join(dir, "user-alice.pem")}, true},
		{"no file named", []string{"fingerprint"}, false},
		{"missing file", []string{"fingerprint", filepath.Join(dir, "nope.pem")}, false},
		{"not PEM", []string{"fingerprint", notPEM}, false},
		{"a key, not a certificate", []string{"fingerprint", filepath.Join(dir, "user-alice-key.pem")}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := run(c.args); (err == nil) != c.ok {
				t.Fatalf("err %v, want ok %v", err, c.ok)
			}
		})
	}
}
