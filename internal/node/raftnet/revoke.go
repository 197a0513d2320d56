package raftnet

import (
	"crypto/tls"
	"crypto/x509"
	"net"

	"github.com/blockfs/blockfs/security"
)

// revoked refuses, with ReasonRevoked, a namenode certificate leaf naming
// name that Options.Revoked revokes: by serial, by fingerprint, or the
// namenode identity itself. It is one atomic load and, when the list is
// not empty, map lookups: cheap enough for every RPC.
func (s *StreamLayer) revoked(leaf *x509.Certificate, name string) error {
	if s.opts.Revoked == nil {
		return nil
	}
	if err := s.opts.Revoked.Check(leaf, security.Identity{Role: security.RoleNamenode, Name: name}); err != nil {
		return &refusal{ReasonRevoked, err}
	}
	return nil
}

// dialedConn is a connection this node dialed. Raft keeps such
// connections pooled for as long as they work, so the deny list is
// checked again before every write: a peer revoked after the handshake is
// cut off at this node's next request to it, its connection closed, and
// no more of the log is sent to it.
type dialedConn struct {
	*tls.Conn
	s    *StreamLayer
	leaf *x509.Certificate
	name string
}

// dialed wraps a dialed connection whose handshake verified; without a
// deny list it is returned as is.
func (s *StreamLayer) dialed(tc *tls.Conn) net.Conn {
	if s.opts.Revoked == nil {
		return tc
	}
	leaf := tc.ConnectionState().PeerCertificates[0]
	id, err := security.IdentityFromCert(leaf, s.opts.TrustDomain)
	if err != nil {
		return tc // the verifier admitted it, so this does not happen
	}
	return &dialedConn{Conn: tc, s: s, leaf: leaf, name: id.Name}
}

func (c *dialedConn) Write(p []byte) (int, error) {
	if err := c.s.revoked(c.leaf, c.name); err != nil {
		c.s.refuse(Outbound, c.RemoteAddr(), err)
		c.Conn.Close()
		return 0, err
	}
	return c.Conn.Write(p)
}
