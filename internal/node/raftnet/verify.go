package raftnet

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"

	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/security"
)

// Reasons a connection is refused (the reason label of the refusal metric).
const (
	ReasonTimeout       = "timeout"        // no complete handshake within the timeout
	ReasonNotTLS        = "not_tls"        // the peer did not speak TLS
	ReasonNoCertificate = "no_certificate" // the client showed no certificate
	ReasonUntrusted     = "untrusted"      // the certificate does not chain to the cluster CA
	ReasonIdentity      = "identity"       // no valid spiffe://<trust domain>/... identity (e.g. another trust domain)
	ReasonRole          = "role"           // an identity of the cluster, but not a namenode
	ReasonName          = "name"           // a namenode, but not the one the Raft configuration has at that address
	ReasonProtocol      = "protocol"       // the peer did not agree on the Raft ALPN
	ReasonClosed        = "closed"         // the peer went away mid-handshake
	ReasonHandshake     = "handshake"      // any other handshake failure

	// Refusals of membership, at the handshake or at any later RPC.
	ReasonNotMember = "not_member" // a namenode that is not a server of the Raft configuration (Options.Admit)
	ReasonRevoked   = "revoked"    // a namenode name on the replicated deny list (Options.Admit)

	// Refusals of one RPC on an admitted connection (Options.RPCRefused).
	ReasonHeaderID   = "header_id"   // the RPC header's sender id is not the certificate's name
	ReasonHeaderAddr = "header_addr" // the RPC header's sender address is not the configuration's for that id
	ReasonMalformed  = "malformed"   // the request does not decode as a Raft RPC
)

// refusal is why the verifier turned away a peer whose chain did verify.
type refusal struct {
	reason string
	err    error
}

func (r *refusal) Error() string { return "raft peer refused (" + r.reason + "): " + r.err.Error() }
func (r *refusal) Unwrap() error { return r.err }

// verifier returns the VerifyConnection callback of op (Dial or Accept): the peer's verified
// certificate must name a namenode of the trust domain (and, when known,
// the namenode want; inbound, one Options.Admit admits), and the ALPN must
// be Raft's.
func (s *StreamLayer) verifier(op, want string, known, inbound bool) func(tls.ConnectionState) error {
	td := s.opts.TrustDomain
	namenodeOnly := security.RequireRole(td, security.RoleNamenode)
	return func(cs tls.ConnectionState) error {
		if len(cs.VerifiedChains) == 0 || len(cs.VerifiedChains[0]) == 0 {
			return &refusal{ReasonNoCertificate, errs.New(errs.Unauthenticated, op, "", "no verified peer certificate")}
		}
		if err := namenodeOnly(cs); err != nil {
			reason := ReasonIdentity
			if errs.Is(err, errs.Permission) {
				reason = ReasonRole
			}
			return &refusal{reason, err}
		}
		id, err := security.IdentityFromCert(cs.VerifiedChains[0][0], td)
		if err != nil {
			return &refusal{ReasonIdentity, err}
		}
		if err := s.revoked(cs.VerifiedChains[0][0], id.Name); err != nil {
			return err
		}
		if known && id.Name != want {
			return &refusal{ReasonName, errs.Newf(errs.Permission, op, id.Name,
				"the Raft configuration has namenode %q at this address, but its certificate names %s", want, id)}
		}
		if inbound {
			if err := s.admit(id.Name); err != nil {
				return err
			}
		}
		if cs.NegotiatedProtocol != ALPN {
			return &refusal{ReasonProtocol, errs.Newf(errs.Unauthenticated, op, id.Name,
				"peer negotiated application protocol %q, want %q", cs.NegotiatedProtocol, ALPN)}
		}
		return nil
	}
}

// Reason names the cause of a failed handshake with one of the Reason*
// constants.
func Reason(err error) string {
	var r *refusal
	var cve *tls.CertificateVerificationError
	var rhe tls.RecordHeaderError
	var ne net.Error
	switch {
	case errors.As(err, &r):
		return r.reason
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		errors.As(err, &ne) && ne.Timeout():
		return ReasonTimeout
	case errors.As(err, &cve):
		return ReasonUntrusted
	case errors.As(err, &rhe):
		return ReasonNotTLS
	case strings.Contains(err.Error(), "didn't provide a certificate"):
		// crypto/tls has no typed error for this one.
		return ReasonNoCertificate
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, net.ErrClosed):
		return ReasonClosed
	}
	return ReasonHandshake
}
