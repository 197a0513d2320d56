package security

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/url"
	"strconv"
	"strings"

	"github.com/blockfs/blockfs/errs"
)

// Role is what a caller is to the cluster. Every certificate carries exactly
// one role and one name (see [Identity.URI]).
type Role uint8

// Roles. RoleNone is the zero value: no identity at all.
const (
	RoleNone Role = iota
	RoleNamenode
	RoleDatanode
	RoleUser
)

var roleNames = [...]string{RoleNone: "none", RoleNamenode: "namenode", RoleDatanode: "datanode", RoleUser: "user"}

func (r Role) String() string {
	if int(r) < len(roleNames) {
		return roleNames[r]
	}
	return "role(" + strconv.Itoa(int(r)) + ")"
}

// ParseRole parses a role name as it appears in a SPIFFE path.
func ParseRole(s string) (Role, error) {
	for r, n := range roleNames {
		if r != int(RoleNone) && n == s {
			return Role(r), nil
		}
	}
	return RoleNone, errs.Newf(errs.Unauthenticated, "security.ParseRole", "", "unknown role %q", s)
}

// DefaultTrustDomain is the SPIFFE trust domain (the cluster name) used when
// none is configured.
const DefaultTrustDomain = "blockfs"

// Identity is an authenticated caller: a role and a name within it (a
// namenode's Raft id, a datanode's id, a user name).
type Identity struct {
	Role Role
	Name string
}

func (id Identity) String() string { return id.Role.String() + "/" + id.Name }

// IsZero reports whether id is no identity at all.
func (id Identity) IsZero() bool { return id.Role == RoleNone }

// URI is the SPIFFE-style URI SAN that names id in trustDomain:
// spiffe://<trust domain>/<role>/<name>.
func (id Identity) URI(trustDomain string) *url.URL {
	return &url.URL{Scheme: "spiffe", Host: trustDomain, Path: "/" + id.Role.String() + "/" + id.Name}
}

// ValidateName checks a role-scoped name: 1..255 bytes of printable ASCII
// without '/', and not "." or "..".
func ValidateName(name string) error {
	const op = "security.ValidateName"
	if name == "" || len(name) > 255 || name == "." || name == ".." {
		return errs.Newf(errs.Invalid, op, name, "name must be 1..255 bytes and not . or ..")
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c <= ' ' || c > '~' || c == '/' || c == '%' {
			return errs.Newf(errs.Invalid, op, name, "name has a byte %q that is not printable ASCII or is / or %%", c)
		}
	}
	return nil
}

// ValidateTrustDomain checks a trust domain: a lower-case DNS-like label
// sequence, as SPIFFE requires.
func ValidateTrustDomain(td string) error {
	if td == "" || len(td) > 255 {
		return errs.New(errs.Invalid, "security.ValidateTrustDomain", td, "trust domain must be 1..255 bytes")
	}
	for i := 0; i < len(td); i++ {
		c := td[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			return errs.Newf(errs.Invalid, "security.ValidateTrustDomain", td, "trust domain has byte %q; want [a-z0-9._-]", c)
		}
	}
	return nil
}

// ParseIdentityURI parses spiffe://<trustDomain>/<role>/<name>, refusing any
// other trust domain, an unknown role, or extra path segments.
func ParseIdentityURI(u *url.URL, trustDomain string) (Identity, error) {
	const op = "security.ParseIdentityURI"
	if u == nil || u.Scheme != "spiffe" {
		return Identity{}, errs.New(errs.Unauthenticated, op, "", "not a spiffe:// URI")
	}
	if u.Host != trustDomain {
		return Identity{}, errs.Newf(errs.Unauthenticated, op, u.String(), "trust domain %q is not this cluster's (%q)", u.Host, trustDomain)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Port() != "" {
		return Identity{}, errs.New(errs.Unauthenticated, op, u.String(), "identity URI has user info, port, query or fragment")
	}
	role, name, ok := strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
	if !ok || !strings.HasPrefix(u.Path, "/") {
		return Identity{}, errs.New(errs.Unauthenticated, op, u.String(), "want /<role>/<name>")
	}
	r, err := ParseRole(role)
	if err != nil {
		return Identity{}, errs.Wrap(errs.Unauthenticated, op, u.String(), err)
	}
	if err := ValidateName(name); err != nil {
		return Identity{}, errs.Wrap(errs.Unauthenticated, op, u.String(), err)
	}
	return Identity{Role: r, Name: name}, nil
}

// IdentityFromCert names the holder of a certificate that has already been
// verified against the cluster CA: it must carry exactly one URI SAN, and
// that URI must name a role and a name in trustDomain. The Common Name is
// never used.
func IdentityFromCert(cert *x509.Certificate, trustDomain string) (Identity, error) {
	const op = "security.IdentityFromCert"
	if cert == nil {
		return Identity{}, errs.New(errs.Unauthenticated, op, "", "no certificate")
	}
	if len(cert.URIs) != 1 {
		return Identity{}, errs.Newf(errs.Unauthenticated, op, cert.Subject.CommonName,
			"certificate has %d URI SANs; want exactly one spiffe://%s/<role>/<name>", len(cert.URIs), trustDomain)
	}
	return ParseIdentityURI(cert.URIs[0], trustDomain)
}

// IdentityFromTLS names the peer of a completed TLS handshake from its
// verified chain (a certificate that was merely presented is not enough).
func IdentityFromTLS(state tls.ConnectionState, trustDomain string) (Identity, error) {
	const op = "security.IdentityFromTLS"
	if !state.HandshakeComplete {
		return Identity{}, errs.New(errs.Unauthenticated, op, "", "TLS handshake not complete")
	}
	if len(state.VerifiedChains) == 0 || len(state.VerifiedChains[0]) == 0 {
		return Identity{}, errs.New(errs.Unauthenticated, op, "", "no verified peer certificate")
	}
	return IdentityFromCert(state.VerifiedChains[0][0], trustDomain)
}

// RequireRole returns a tls.Config.VerifyConnection callback that admits a
// peer only if its verified certificate names one of roles in trustDomain.
// The Raft transport uses it so that only namenodes get a connection at all.
func RequireRole(trustDomain string, roles ...Role) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.VerifiedChains) == 0 || len(cs.VerifiedChains[0]) == 0 {
			return errs.New(errs.Unauthenticated, "security.RequireRole", "", "no verified peer certificate")
		}
		id, err := IdentityFromCert(cs.VerifiedChains[0][0], trustDomain)
		if err != nil {
			return err
		}
		for _, r := range roles {
			if id.Role == r {
				return nil
			}
		}
		return errs.Newf(errs.Permission, "security.RequireRole", id.Name, "%s may not connect here: needs role %s", id, rolesString(roles))
	}
}

func rolesString(rs []Role) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = r.String()
	}
	return strings.Join(s, " or ")
}

type identityKey struct{}

// WithIdentity returns ctx carrying the authenticated caller id.
func WithIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// IdentityFromContext returns the caller placed by WithIdentity (the
// authorizer does that for every RPC), and whether there was one.
func IdentityFromContext(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(Identity)
	return id, ok && !id.IsZero()
}
