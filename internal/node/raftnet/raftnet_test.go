package raftnet_test

import (
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/blockfs/blockfs/internal/node/raftnet"
	"github.com/blockfs/blockfs/internal/testutil/leaktest"
	"github.com/blockfs/blockfs/internal/testutil/raftnettest"
	"github.com/blockfs/blockfs/security"
)

func TestMain(m *testing.M) { leaktest.VerifyTestMain(m) }

// pki is a cluster CA plus a CA and a trust domain that are not the cluster's.
type pki struct {
	t     *testing.T
	ca    *security.CA
	other *security.CA
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	ca, err := security.GenerateCA("cluster CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other, err := security.GenerateCA("another CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return &pki{t: t, ca: ca, other: other}
}

// pair issues a certificate from ca for role/name in trust domain td.
func (p *pki) pair(ca *security.CA, td string, role security.Role, name string) (certPEM, keyPEM []byte) {
	p.t.Helper()
	c, k, err := security.IssueCert(ca, td, security.Identity{Role: role, Name: name}, []string{"127.0.0.1"})
	if err != nil {
		p.t.Fatal(err)
	}
	return c, k
}

// tlsCert is the same certificate as a tls.Certificate.
func (p *pki) tlsCert(ca *security.CA, td string, role security.Role, name string) *tls.Certificate {
	c, k := p.pair(ca, td, role, name)
	pair, err := tls.X509KeyPair(c, k)
	if err != nil {
		p.t.Fatal(err)
	}
	return &pair
}

// layer is a namenode's stream layer with its refusals.
type layer struct {
	*raftnet.StreamLayer
	refused chan string // "direction/reason"
}

func (p *pki) layer(name string, timeout time.Duration, peerName func(raft.ServerAddress) (string, bool), adjust ...func(*raftnet.Options)) *layer {
	p.t.Helper()
	c, k := p.pair(p.ca, security.DefaultTrustDomain, security.RoleNamenode, name)
	srv, err := security.ServerTLSConfig(p.ca.CertPEM, c, k)
	if err != nil {
		p.t.Fatal(err)
	}
	cli, err := security.ClientTLSConfig(p.ca.CertPEM, c, k, "")
	if err != nil {
		p.t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		p.t.Fatal(err)
	}
	l := &layer{refused: make(chan string, 16)}
	o := raftnet.Options{
		ServerTLS: srv, ClientTLS: cli, TrustDomain: security.DefaultTrustDomain,
		PeerName: peerName, HandshakeTimeout: timeout,
		Refused: func(dir, reason string, _ net.Addr, _ error) { l.refused <- dir + "/" + reason },
	}
	for _, f := range adjust {
		f(&o)
	}
	l.StreamLayer, err = raftnet.New(lis, o)
	if err != nil {
		p.t.Fatal(err)
	}
	return l
}

// server runs a Raft transport on l that answers every RPC and counts them.
func server(t *testing.T, l raft.StreamLayer) (*raft.NetworkTransport, *atomic.Int64) {
	t.Helper()
	trans := raft.NewNetworkTransport(l, 2, 5*time.Second, io.Discard)
	var got atomic.Int64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case rpc := <-trans.Consumer():
				got.Add(1)
				var resp any
				switch rpc.Command.(type) {
				case *raft.AppendEntriesRequest:
					resp = &raft.AppendEntriesResponse{Term: 1, Success: true}
				case *raft.RequestVoteRequest:
					resp = &raft.RequestVoteResponse{Term: 1}
				case *raft.InstallSnapshotRequest:
					io.Copy(io.Discard, rpc.Reader)
					resp = &raft.InstallSnapshotResponse{Term: 1, Success: true}
				}
				rpc.Respond(resp, nil)
			case <-stop:
				return
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done; trans.Close() })
	return trans, &got
}

// attack is one Raft RPC an outsider sends, each with a term far ahead.
type attack struct {
	name string
	send func(tr raft.Transport, target raft.ServerAddress) error
}

// attacks are sent as from, the sender id of their RPC headers.
func attacks(from string) []attack {
	hdr := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(from), Addr: []byte("127.0.0.1:1")}
	return []attack{
		{"AppendEntries", func(tr raft.Transport, target raft.ServerAddress) error {
			var resp raft.AppendEntriesResponse
			return tr.AppendEntries("victim", target, &raft.AppendEntriesRequest{
				RPCHeader: hdr, Term: 1000, PrevLogEntry: 0, PrevLogTerm: 0, LeaderCommitIndex: 1,
				Entries: []*raft.Log{{Index: 1, Term: 1000, Type: raft.LogCommand, Data: []byte{1, 2, 3}}},
			}, &resp)
		}},
		{"RequestVote", func(tr raft.Transport, target raft.ServerAddress) error {
			var resp raft.RequestVoteResponse
			return tr.RequestVote("victim", target, &raft.RequestVoteRequest{
				RPCHeader: hdr, Term: 1000, LastLogIndex: 1 << 40, LastLogTerm: 1000,
			}, &resp)
		}},
		{"InstallSnapshot", func(tr raft.Transport, target raft.ServerAddress) error {
			data := bytes.Repeat([]byte("x"), 64<<10)
			var resp raft.InstallSnapshotResponse
			return tr.InstallSnapshot("victim", target, &raft.InstallSnapshotRequest{
				RPCHeader: hdr, SnapshotVersion: raft.SnapshotVersionMax, Term: 1000,
				LastLogIndex: 1 << 40, LastLogTerm: 1000, Size: int64(len(data)),
			}, &resp, bytes.NewReader(data))
		}},
	}
}

// outsiders are the clients that must never get an RPC through, with the
// reason the server gives.
func (p *pki) outsiders() []struct {
	name   string
	cert   *tls.Certificate
	useTLS bool
	reason string
} {
	td := security.DefaultTrustDomain
	return []struct {
		name   string
		cert   *tls.Certificate
		useTLS bool
		reason string
	}{
		{"plain TCP", nil, false, raftnet.ReasonNotTLS},
		{"TLS without a certificate", nil, true, raftnet.ReasonNoCertificate},
		{"user certificate", p.tlsCert(p.ca, td, security.RoleUser, "root"), true, raftnet.ReasonRole},
		{"datanode certificate", p.tlsCert(p.ca, td, security.RoleDatanode, "dn1"), true, raftnet.ReasonRole},
		{"namenode certificate of another CA", p.tlsCert(p.other, td, security.RoleNamenode, "nn2"), true, raftnet.ReasonUntrusted},
		{"namenode certificate of another trust domain", p.tlsCert(p.ca, "elsewhere", security.RoleNamenode, "nn2"), true, raftnet.ReasonIdentity},
	}
}

// next waits for the next refusal the layer reports.
func (l *layer) next(t *testing.T) string {
	t.Helper()
	select {
	case r := <-l.refused:
		return r
	case <-t.Context().Done():
		t.Fatal("test ended before a refusal was reported")
		return ""
	}
}

// TestOutsidersRefused: every outsider's AppendEntries, RequestVote and
// InstallSnapshot fails, is reported with its reason, and never reaches
// Raft; a namenode of the cluster then gets through on the same port.
func TestOutsidersRefused(t *testing.T) {
	p := newPKI(t)
	srv := p.layer("nn1", 0, nil)
	_, got := server(t, srv)
	target := raft.ServerAddress(srv.Addr().String())
	for _, o := range p.outsiders() {
		for _, a := range attacks("mallory") {
			t.Run(o.name+"/"+a.name, func(t *testing.T) {
				tr, err := raftnettest.Transport(o.cert, o.useTLS)
				if err != nil {
					t.Fatal(err)
				}
				defer tr.Close()
				if err := a.send(tr, target); err == nil {
					t.Fatal("outsider's RPC succeeded")
				}
				if r := srv.next(t); r != raftnet.Inbound+"/"+o.reason {
					t.Fatalf("refusal %q, want %s/%s", r, raftnet.Inbound, o.reason)
				}
			})
		}
	}
	if n := got.Load(); n != 0 {
		t.Fatalf("%d outsider RPCs reached Raft", n)
	}

	member := p.layer("nn2", 0, nil)
	tr := raft.NewNetworkTransport(member, 1, 5*time.Second, io.Discard)
	defer tr.Close()
	for _, a := range attacks("nn2") {
		if err := a.send(tr, target); err != nil {
			t.Fatalf("%s from a cluster namenode: %v", a.name, err)
		}
	}
	if n := got.Load(); n != 3 {
		t.Fatalf("%d RPCs reached Raft, want the member's 3", n)
	}
}

// tlsServer accepts TLS connections presenting cert (with ALPN alpn) and
// completes their handshakes, as some server at a peer's address would.
func tlsServer(t *testing.T, cert *tls.Certificate, alpn string) raft.ServerAddress {
	t.Helper()
	cfg := &tls.Config{Certificates: []tls.Certificate{*cert}, ClientAuth: tls.RequireAnyClientCert}
	if alpn != "" {
		cfg.NextProtos = []string{alpn}
	}
	lis, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	t.Cleanup(func() { lis.Close(); <-done })
	return raft.ServerAddress(lis.Addr().String())
}

// TestDialVerifiesServer: a namenode dials only a namenode of its cluster,
// and the one the Raft configuration has at that address when it has one.
func TestDialVerifiesServer(t *testing.T) {
	p := newPKI(t)
	td := security.DefaultTrustDomain
	for _, tc := range []struct {
		name   string
		cert   *tls.Certificate
		alpn   string
		expect string // "" = address not in the configuration
		reason string // "" = the dial succeeds
	}{
		{"expected namenode", p.tlsCert(p.ca, td, security.RoleNamenode, "nn2"), raftnet.ALPN, "nn2", ""},
		{"namenode, address not in the configuration", p.tlsCert(p.ca, td, security.RoleNamenode, "nn7"), raftnet.ALPN, "", ""},
		{"another namenode than configured", p.tlsCert(p.ca, td, security.RoleNamenode, "nn3"), raftnet.ALPN, "nn2", raftnet.ReasonName},
		{"datanode", p.tlsCert(p.ca, td, security.RoleDatanode, "nn2"), raftnet.ALPN, "nn2", raftnet.ReasonRole},
		{"another CA", p.tlsCert(p.other, td, security.RoleNamenode, "nn2"), raftnet.ALPN, "nn2", raftnet.ReasonUntrusted},
		{"another trust domain", p.tlsCert(p.ca, "elsewhere", security.RoleNamenode, "nn2"), raftnet.ALPN, "nn2", raftnet.ReasonIdentity},
		{"not a Raft port", p.tlsCert(p.ca, td, security.RoleNamenode, "nn2"), "", "nn2", raftnet.ReasonProtocol},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := tlsServer(t, tc.cert, tc.alpn)
			l := p.layer("nn1", 0, func(a raft.ServerAddress) (string, bool) {
				return tc.expect, a == addr && tc.expect != ""
			})
			defer l.Close()
			c, err := l.Dial(addr, 5*time.Second)
			if tc.reason == "" {
				if err != nil {
					t.Fatal(err)
				}
				c.Close()
				return
			}
			if err == nil {
				c.Close()
				t.Fatal("dial succeeded")
			}
			if r := l.next(t); r != raftnet.Outbound+"/"+tc.reason {
				t.Fatalf("refusal %q, want %s/%s (%v)", r, raftnet.Outbound, tc.reason, err)
			}
		})
	}
}

// TestSilentPeer: a connection that never starts its handshake is closed
// at the handshake timeout, and meanwhile does not hold up a member.
func TestSilentPeer(t *testing.T) {
	p := newPKI(t)
	srv := p.layer("nn1", 200*time.Millisecond, nil)
	_, got := server(t, srv)
	silent, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()

	member := p.layer("nn2", 0, nil)
	tr := raft.NewNetworkTransport(member, 1, 5*time.Second, io.Discard)
	defer tr.Close()
	if err := attacks("nn2")[1].send(tr, raft.ServerAddress(srv.Addr().String())); err != nil {
		t.Fatalf("member blocked behind a silent peer: %v", err)
	}
	if r := srv.next(t); r != raftnet.Inbound+"/"+raftnet.ReasonTimeout {
		t.Fatalf("refusal %q, want timeout", r)
	}
	if _, err := silent.Read(make([]byte, 1)); err == nil {
		t.Fatal("silent connection still open after its handshake timeout")
	}
	if got.Load() != 1 {
		t.Fatalf("%d RPCs, want 1", got.Load())
	}
}

// TestPlainAndAddress: without TLS the layer is plain TCP; a layer needs a
// specific address and both TLS configs or neither.
func TestPlainAndAddress(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	plain, err := raftnet.New(lis, raftnet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if plain.Secure() {
		t.Fatal("plain layer says it is secure")
	}
	_, got := server(t, plain)
	tr, err := raftnettest.Transport(nil, false)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if err := attacks("mallory")[1].send(tr, raft.ServerAddress(plain.Addr().String())); err != nil || got.Load() != 1 {
		t.Fatalf("plain RPC: %v, %d delivered", err, got.Load())
	}

	p := newPKI(t)
	c, k := p.pair(p.ca, security.DefaultTrustDomain, security.RoleNamenode, "nn1")
	srv, err := security.ServerTLSConfig(p.ca.CertPEM, c, k)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		addr string
		opts raftnet.Options
	}{
		{"unspecified address", "0.0.0.0:0", raftnet.Options{}},
		{"server TLS without client TLS", "127.0.0.1:0", raftnet.Options{ServerTLS: srv, TrustDomain: security.DefaultTrustDomain}},
		{"bad trust domain", "127.0.0.1:0", raftnet.Options{ServerTLS: srv, ClientTLS: srv, TrustDomain: "Bad Domain"}},
		{"client config without the cluster CA", "127.0.0.1:0", raftnet.Options{ServerTLS: srv, ClientTLS: &tls.Config{}, TrustDomain: security.DefaultTrustDomain}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lis, err := net.Listen("tcp", tc.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer lis.Close()
			if _, err := raftnet.New(lis, tc.opts); err == nil {
				t.Fatal("New accepted it")
			}
		})
	}
}
