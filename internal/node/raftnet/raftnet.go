// Package raftnet is the stream layer under hashicorp/raft's
// NetworkTransport: plain TCP for a loopback-only cluster, or mutual TLS 1.3
// where both ends must show a namenode certificate of the cluster's CA and
// trust domain.
//
// Raft's transport accepts connections in one goroutine, so a server-side
// handshake never runs in Accept: it runs on the connection's first Read or
// Write (in the goroutine Raft starts for that connection), bounded by a
// handshake timeout. A refused connection is reported through
// Options.Refused, and Raft sees only an end of stream: no RPC is decoded.
//
// Under TLS a connection is bound to the namenode its certificate names:
// Options.Admit decides at the handshake and before every RPC whether that
// name is (still) a server of the configuration, and every RPC's header
// must name the same server (guard.go). A refused RPC closes the
// connection and is reported through Options.RPCRefused.
package raftnet

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/security"
)

// ALPN is the application protocol both ends announce, so that a Raft
// client never mistakes another TLS port of a namenode (gRPC, which
// presents the same certificate) for a Raft port.
const ALPN = "blockfs-raft"

// DefaultHandshakeTimeout bounds a TLS handshake when Options leaves it 0.
const DefaultHandshakeTimeout = 10 * time.Second

// Directions of a refused connection, as passed to Options.Refused.
const (
	Inbound  = "in"
	Outbound = "out"
)

// Options configures a StreamLayer.
type Options struct {
	// ServerTLS and ClientTLS are the node's own TLS configs (its certificate
	// and the cluster CA). Both nil means plain TCP; otherwise both are
	// required. They are cloned: TLS 1.3 and the ALPN are enforced, client
	// certificates are required and verified, and the peer must be a
	// namenode of TrustDomain.
	ServerTLS, ClientTLS *tls.Config
	// TrustDomain is the SPIFFE trust domain every peer certificate must name.
	TrustDomain string
	// PeerName maps an address about to be dialed to the Raft server id
	// expected there (from the Raft configuration). When it reports one, the
	// server's certificate must name exactly that namenode.
	PeerName func(raft.ServerAddress) (id string, ok bool)
	// HandshakeTimeout bounds every TLS handshake (DefaultHandshakeTimeout
	// when 0), so a silent peer holds nothing for longer.
	HandshakeTimeout time.Duration
	// Refused, if set, is told about every connection refused in either
	// direction, with a short reason (see Reason) and the cause.
	Refused func(direction, reason string, remote net.Addr, err error)
	// Advertise, if set, is the address peers dial ("host:port"), which
	// Raft records in its configuration instead of the listener's: a
	// stable DNS name where the IP changes (a Kubernetes StatefulSet pod).
	Advertise string

	// Admit, if set, says whether the namenode name (its certificate's)
	// may speak Raft to this node: asked during every inbound handshake
	// and again before every RPC on the connection is handed to Raft. An
	// error refuses it (a handshake refusal, or the connection is closed);
	// its reason is the one given to Refuse, else ReasonNotMember. It runs
	// on Raft's connection goroutines, so it must be cheap and never wait
	// for Raft.
	Admit func(name string) error
	// PeerAddr, if set, gives the address the Raft configuration has for
	// a server id. An RPC whose header gives another sender address is
	// refused (ReasonHeaderAddr).
	PeerAddr func(id string) (raft.ServerAddress, bool)
	// Changed, if set, runs after Raft has handled an inbound RPC that may
	// have changed this node's configuration (an AppendEntries carrying a
	// configuration entry, an InstallSnapshot) and before its answer is
	// written, so the admission Admit reads can be brought up to date.
	Changed func()
	// RPCRefused, if set, is told about every inbound RPC refused after
	// the handshake (the connection is then closed): the RPC's name, the
	// reason (ReasonHeaderID, ReasonHeaderAddr, ReasonNotMember,
	// ReasonRevoked, ReasonMalformed), the certificate's name and the cause.
	RPCRefused func(rpc, reason, name string, remote net.Addr, err error)
	// Revoked, if set, is the replicated deny list: a peer whose
	// certificate (serial, fingerprint) or namenode identity it revokes is
	// refused with ReasonRevoked at every handshake, inbound and outbound,
	// before every inbound RPC (the connection is then closed, open or
	// not), and before every write on a dialed connection (revoke.go).
	Revoked *security.Revocations
}

// StreamLayer is a raft.StreamLayer over a TCP listener, with or without
// mutual TLS.
type StreamLayer struct {
	lis     net.Listener
	opts    Options
	server  *tls.Config // nil: plain TCP
	client  *tls.Config
	timeout time.Duration

	mu     sync.Mutex
	conns  map[*serverConn]struct{} // accepted, not yet closed
	closed bool
}

var _ raft.StreamLayer = (*StreamLayer)(nil)

// New returns a stream layer that accepts on lis and dials TCP. The
// listener must have a specific address: Raft advertises it to its peers.
// On success the layer owns lis (Close closes it); on error lis is left
// open.
func New(lis net.Listener, o Options) (*StreamLayer, error) {
	const op = "raftnet.New"
	if a, ok := lis.Addr().(*net.TCPAddr); !ok || a.IP == nil || a.IP.IsUnspecified() {
		return nil, errs.Newf(errs.Invalid, op, lis.Addr().String(), "raft must listen on a specific TCP address that peers can dial")
	}
	s := &StreamLayer{lis: lis, opts: o, timeout: o.HandshakeTimeout, conns: map[*serverConn]struct{}{}}
	if s.timeout <= 0 {
		s.timeout = DefaultHandshakeTimeout
	}
	if (o.ServerTLS == nil) != (o.ClientTLS == nil) {
		return nil, errs.New(errs.Invalid, op, "", "need both a server and a client TLS config, or neither")
	}
	if o.ServerTLS == nil {
		return s, nil
	}
	if err := security.ValidateTrustDomain(o.TrustDomain); err != nil {
		return nil, err
	}
	if o.ServerTLS.ClientCAs == nil || o.ClientTLS.RootCAs == nil {
		// crypto/tls would fall back to the system roots: any public CA.
		return nil, errs.New(errs.Invalid, op, "", "the TLS configs must name the cluster CA (ClientCAs and RootCAs)")
	}
	s.server = o.ServerTLS.Clone()
	s.server.MinVersion = tls.VersionTLS13
	s.server.ClientAuth = tls.RequireAndVerifyClientCert
	s.server.NextProtos = []string{ALPN}
	s.server.VerifyConnection = s.verifier("raftnet.StreamLayer.Accept", "", false, true)
	s.client = o.ClientTLS.Clone()
	s.client.MinVersion = tls.VersionTLS13
	s.client.NextProtos = []string{ALPN}
	return s, nil
}

// Secure reports whether the layer speaks mutual TLS.
func (s *StreamLayer) Secure() bool { return s.server != nil }

// Addr is the address Raft advertises: Options.Advertise, else the
// listener's.
func (s *StreamLayer) Addr() net.Addr {
	if s.opts.Advertise != "" {
		return advertised(s.opts.Advertise)
	}
	return s.lis.Addr()
}

// advertised is an address given by name, as Options.Advertise.
type advertised string

func (a advertised) Network() string { return "tcp" }
func (a advertised) String() string  { return string(a) }

// Accept waits for the next connection. Under TLS it returns at once; the
// handshake happens on the connection's first Read or Write.
func (s *StreamLayer) Accept() (net.Conn, error) {
	c, err := s.lis.Accept()
	if err != nil || s.server == nil {
		return c, err
	}
	sc := &serverConn{Conn: tls.Server(c, s.server), s: s}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		c.Close()
		return nil, net.ErrClosed
	}
	s.conns[sc] = struct{}{}
	s.mu.Unlock()
	return sc, nil
}

// Close stops accepting and closes every accepted connection, so the
// goroutines Raft runs for them end.
func (s *StreamLayer) Close() error {
	err := s.lis.Close()
	s.mu.Lock()
	s.closed = true
	conns := s.conns
	s.conns = map[*serverConn]struct{}{}
	s.mu.Unlock()
	for c := range conns {
		c.Conn.Close()
	}
	return err
}

func (s *StreamLayer) forget(c *serverConn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// Dial connects to a peer within timeout. Under TLS it completes the
// handshake before returning (within the handshake timeout), requiring a
// namenode certificate, and the one named by Options.PeerName when that
// knows the address.
func (s *StreamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	c, err := d.Dial("tcp", string(address))
	if err != nil || s.client == nil {
		return c, err
	}
	cfg := s.client.Clone()
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(string(address))
		if err != nil {
			c.Close()
			return nil, err
		}
		cfg.ServerName = host
	}
	want, known := "", false
	if s.opts.PeerName != nil {
		want, known = s.opts.PeerName(address)
	}
	cfg.VerifyConnection = s.verifier("raftnet.StreamLayer.Dial", want, known, false)
	tc := tls.Client(c, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		c.Close()
		s.refuse(Outbound, c.RemoteAddr(), err)
		return nil, errs.Wrap(errs.Unauthenticated, "raftnet.StreamLayer.Dial", string(address), err)
	}
	return s.dialed(tc), nil
}

func (s *StreamLayer) refuse(dir string, remote net.Addr, err error) {
	if s.opts.Refused != nil {
		s.opts.Refused(dir, Reason(err), remote, err)
	}
}

// serverConn is an accepted TLS connection whose handshake runs on first
// use, in the goroutine that reads it, not in Accept. After the handshake
// every request is checked by its guard before Raft reads it.
type serverConn struct {
	*tls.Conn
	s     *StreamLayer
	once  sync.Once
	err   error
	guard *guard
}

func (c *serverConn) handshake() error {
	c.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), c.s.timeout)
		defer cancel()
		if err := c.Conn.HandshakeContext(ctx); err != nil {
			c.s.refuse(Inbound, c.RemoteAddr(), err)
			c.Close()
			// Raft's connection loop ends quietly on EOF; the refusal has
			// been reported once, above.
			c.err = io.EOF
			return
		}
		// The verifier has checked the chain and the identity.
		cert := c.Conn.ConnectionState().PeerCertificates[0]
		id, err := security.IdentityFromCert(cert, c.s.opts.TrustDomain)
		if err != nil {
			c.Close()
			c.err = io.EOF
			return
		}
		c.guard = newGuard(c, id.Name)
		c.guard.leaf = cert
	})
	return c.err
}

// Read completes the handshake, then reads checked requests.
func (c *serverConn) Read(p []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	return c.guard.read(p)
}

// Write completes the handshake, then writes (an answer to the request
// the guard last checked).
func (c *serverConn) Write(p []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	c.guard.written()
	return c.Conn.Write(p)
}

// Close closes the connection and forgets it.
func (c *serverConn) Close() error {
	c.s.forget(c)
	return c.Conn.Close()
}
