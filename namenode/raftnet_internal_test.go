package namenode

import (
	"bytes"
	"crypto/tls"
	"log/slog"
	"net"
	"strings"
	"testing"
)

// TestPlainRaftOnlyOnLoopback: without TLS the Raft port may bind loopback;
// anything else needs InsecureRaft, which then logs an error.
func TestPlainRaftOnlyOnLoopback(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ip       string
		insecure bool
		ok       bool
		loud     bool
	}{
		{"IPv4 loopback", "127.0.0.1", false, true, false},
		{"IPv6 loopback", "::1", false, true, false},
		{"wildcard", "0.0.0.0", false, false, false},
		{"private address", "10.1.2.3", false, false, false},
		{"private address with --insecure-raft", "10.1.2.3", true, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			n := &Namenode{cfg: Config{Raft: RaftConfig{Insecure: tc.insecure}}, log: slog.New(slog.NewTextHandler(&logs, nil))}
			err := n.allowPlainRaft(&net.TCPAddr{IP: net.ParseIP(tc.ip), Port: 7000})
			if (err == nil) != tc.ok {
				t.Fatalf("allowPlainRaft: %v, want ok=%v", err, tc.ok)
			}
			if err != nil && !strings.Contains(err.Error(), "--insecure-raft") {
				t.Errorf("error %q does not name the way out", err)
			}
			if loud := strings.Contains(logs.String(), "level=ERROR") && strings.Contains(logs.String(), "INSECURE RAFT"); loud != tc.loud {
				t.Errorf("logged %q, want an error log: %v", logs.String(), tc.loud)
			}
		})
	}
}

// TestRaftConfigValidate: mTLS needs the peer config Raft dials with, and
// --insecure-raft belongs to simple auth only.
func TestRaftConfigValidate(t *testing.T) {
	tlsCfg := &tls.Config{}
	for _, tc := range []struct {
		name   string
		adjust func(*Config)
		ok     bool
	}{
		{"mtls with both configs", func(c *Config) { c.Auth.TLS, c.Auth.PeerTLS = tlsCfg, tlsCfg }, true},
		{"mtls without the peer config", func(c *Config) { c.Auth.TLS = tlsCfg }, false},
		{"insecure raft under simple", func(c *Config) { c.Auth.Mode, c.Raft.Insecure = AuthSimple, true }, true},
		{"insecure raft under mtls", func(c *Config) { c.Auth.TLS, c.Auth.PeerTLS, c.Raft.Insecure = tlsCfg, tlsCfg, true }, false},
		{"no handshake timeout", func(c *Config) { c.Auth.Mode, c.Raft.HandshakeTimeout = AuthSimple, 0 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			c.ID, c.DataDir = "nn1", t.TempDir()
			tc.adjust(&c)
			if err := c.Validate(); (err == nil) != tc.ok {
				t.Fatalf("Validate: %v, want ok=%v", err, tc.ok)
			}
		})
	}
}
