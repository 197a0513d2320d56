package security

import (
	"context"
	"crypto/x509"
	"errors"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
)

// Metadata keys of simple authentication: the caller states its name and
// role (user when absent), as HDFS simple auth takes the client's login
// name. Under mTLS they are ignored.
const (
	UserKey = "blockfs-user"
	RoleKey = "blockfs-role"
)

// Env answers the authorizer's questions about the cluster. Both methods
// are called on every RPC that needs them and must be cheap and safe for
// concurrent use.
type Env interface {
	// IsSuperuser reports whether user is the superuser or a member of the
	// supergroup (by the server's own group mapping).
	IsSuperuser(user string) bool
	// IsMember reports whether name is a namenode of this cluster.
	IsMember(name string) bool
}

// AuthConfig configures an Authorizer.
type AuthConfig struct {
	// Simple takes the caller's name and role from request metadata
	// (UserKey, RoleKey) instead of a verified certificate. It trusts every
	// caller to say who it is.
	Simple bool
	// TrustDomain is the cluster's SPIFFE trust domain (mTLS only).
	TrustDomain string
	Env         Env
	Registry    prometheus.Registerer
	// Redirects, if set, checks the redirect tokens a datanode presents
	// (DelegationKey metadata) to act as a WebHDFS user on a Delegated rule.
	Redirects *RedirectVerifier
	// Revoked, if set, is the replicated deny list: a caller whose
	// certificate or identity it revokes is not identified at all
	// (Unauthenticated, HTTP 401), on every call (revoke.go).
	Revoked *Revocations
	// HTTPStaticUser, under Simple, is the user an HTTP request that names
	// none is served as on a StaticUser rule (the web UI's pages), as
	// HDFS's hadoop.http.staticuser.user (default there: dr.who); "" refuses
	// such a request (401). It is never used under mTLS.
	HTTPStaticUser string
	// Admit, if set, is asked about every user call once the caller is
	// authorized, write telling whether the method's rule is Write; an
	// error it returns refuses the call (the namenode's per-user write
	// rate limit and its fair scheduler, which counts reads too).
	Admit func(id Identity, method string, write bool) error
}

// Authorizer identifies the caller of every RPC and checks it against
// [Policy]. It holds no lock: the policy is read-only after construction.
type Authorizer struct {
	cfg     AuthConfig
	rules   map[string]Rule
	denied  *prometheus.CounterVec
	revoked *prometheus.CounterVec
}

// NewAuthorizer returns an Authorizer for cfg.
func NewAuthorizer(cfg AuthConfig) *Authorizer {
	if cfg.TrustDomain == "" {
		cfg.TrustDomain = DefaultTrustDomain
	}
	return &Authorizer{cfg: cfg, rules: Policy(), denied: register(cfg.Registry, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "blockfs_auth_denied_total",
		Help: "Calls refused by the authorizer, by endpoint and reason (unauthenticated, revoked, role, check, unknown_endpoint).",
	}, []string{"endpoint", "reason"})), revoked: register(cfg.Registry, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "blockfs_security_revoked_refused_total",
		Help: "Calls and requests refused because the caller's certificate or identity is on the replicated deny list, by the caller's role.",
	}, []string{"role"}))}
}

// notRevoked refuses (and counts) a caller the deny list revokes.
func (a *Authorizer) notRevoked(leaf *x509.Certificate, id Identity) (Identity, error) {
	if err := a.cfg.Revoked.Check(leaf, id); err != nil {
		a.revoked.WithLabelValues(id.Role.String()).Inc()
		return Identity{}, err
	}
	return id, nil
}

// unauthenticated is the denied counter's reason for an Identify error.
func unauthenticated(err error) string {
	if errors.Is(err, ErrRevoked) {
		return "revoked"
	}
	return "unauthenticated"
}

// Identify names the caller of ctx: under mTLS from the verified client
// certificate's URI SAN, under simple auth from request metadata. There is
// no fallback identity: a caller that cannot be named is refused.
func (a *Authorizer) Identify(ctx context.Context) (Identity, error) {
	const op = "authenticate"
	if a.cfg.Simple {
		user := metadata.ValueFromIncomingContext(ctx, UserKey)
		if len(user) == 0 || user[0] == "" {
			return Identity{}, errs.New(errs.Unauthenticated, op, "", "simple auth: no "+UserKey+" in request metadata")
		}
		role := RoleUser
		if r := metadata.ValueFromIncomingContext(ctx, RoleKey); len(r) > 0 && r[0] != "" {
			var err error
			if role, err = ParseRole(r[0]); err != nil {
				return Identity{}, err
			}
		}
		if err := ValidateName(user[0]); err != nil {
			return Identity{}, errs.Wrap(errs.Unauthenticated, op, "", err)
		}
		return a.notRevoked(nil, Identity{Role: role, Name: user[0]})
	}
	p, ok := peer.FromContext(ctx)
	if !ok {
		return Identity{}, errs.New(errs.Unauthenticated, op, "", "no peer")
	}
	ti, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok {
		return Identity{}, errs.New(errs.Unauthenticated, op, "", "not a TLS connection")
	}
	id, err := IdentityFromTLS(ti.State, a.cfg.TrustDomain)
	if err != nil {
		return Identity{}, err
	}
	return a.notRevoked(leafOf(ti.State.VerifiedChains), id)
}

// Authorize identifies the caller of method and checks the method's rule
// (req is the request message, nil for streams). It returns ctx carrying
// the identity, or an Unauthenticated or Permission error that names the
// role the method needs (or the Admit hook's error); every refusal is
// counted. A caller identified but refused still gets ctx carrying its
// identity, so that the refusal can be charged to it.
func (a *Authorizer) Authorize(ctx context.Context, method string, req any) (context.Context, error) {
	rule, ok := a.rules[method]
	if !ok {
		a.denied.WithLabelValues(method, "unknown_endpoint").Inc()
		return ctx, errs.Newf(errs.Permission, method, "", "no rule admits anyone to this endpoint")
	}
	if rule.Public {
		return ctx, nil
	}
	id, err := a.Identify(ctx)
	if err != nil {
		a.denied.WithLabelValues(method, unauthenticated(err)).Inc()
		return ctx, errs.Wrap(errs.Unauthenticated, method, "", err)
	}
	if id.Role == RoleDatanode && rule.Delegated {
		if tok := metadata.ValueFromIncomingContext(ctx, DelegationKey); len(tok) > 0 {
			r, err := a.delegate(id, method, tok[0], req)
			if err != nil {
				a.denied.WithLabelValues(method, "delegation").Inc()
				return ctx, err
			}
			id, ctx = Identity{Role: RoleUser, Name: r.User}, WithRedirect(ctx, r)
			// The user the datanode acts for may be revoked since.
			if id, err = a.notRevoked(nil, id); err != nil {
				a.denied.WithLabelValues(method, "revoked").Inc()
				return ctx, errs.Wrap(errs.Unauthenticated, method, "", err)
			}
		}
	}
	return a.admit(ctx, method, rule, id, req)
}

// admit applies rule (method's) to the identified caller id: the role and
// its standing check, then the Admit hook on a user's call.
func (a *Authorizer) admit(ctx context.Context, method string, rule Rule, id Identity, req any) (context.Context, error) {
	if reason, err := a.check(rule, id, req); err != nil {
		return WithIdentity(ctx, id), a.refuse(method, reason, err)
	}
	if id.Role == RoleUser && a.cfg.Admit != nil {
		if err := a.cfg.Admit(id, method, rule.Write); err != nil {
			return WithIdentity(ctx, id), err
		}
	}
	return WithIdentity(ctx, id), nil
}

// AuthorizeUser is Authorize for a door that names its caller itself: the
// HDFS RPC door's connection states its user under Hadoop's simple
// authentication. The user must be a valid name, not revoked, and is
// checked against method's rule in the user role.
func (a *Authorizer) AuthorizeUser(ctx context.Context, method, user string, req any) (context.Context, error) {
	rule, ok := a.rules[method]
	if !ok {
		a.denied.WithLabelValues(method, "unknown_endpoint").Inc()
		return ctx, errs.Newf(errs.Permission, method, "", "no rule admits anyone to this endpoint")
	}
	if err := ValidateName(user); err != nil {
		a.denied.WithLabelValues(method, "unauthenticated").Inc()
		return ctx, errs.Wrap(errs.Unauthenticated, method, "", err)
	}
	id, err := a.notRevoked(nil, Identity{Role: RoleUser, Name: user})
	if err != nil {
		a.denied.WithLabelValues(method, "revoked").Inc()
		return ctx, errs.Wrap(errs.Unauthenticated, method, "", err)
	}
	return a.admit(ctx, method, rule, id, req)
}

// delegate checks a redirect token that datanode dn presents for method:
// a valid token, issued for dn, admitting this call (Redirect.Admits). It
// returns the token's user, whom the call then runs as. A token signed by
// a key this node has not applied yet is Unavailable, so that the client
// retries (another namenode, or this one a moment later).
func (a *Authorizer) delegate(dn Identity, method, token string, req any) (Redirect, error) {
	if a.cfg.Redirects == nil {
		return Redirect{}, errs.New(errs.Permission, method, "", "this server takes no redirect tokens")
	}
	r, err := a.cfg.Redirects.Verify([]byte(token))
	if err != nil {
		if errors.Is(err, ErrUnknownRedirectKey) {
			return Redirect{}, errs.Wrap(errs.Unavailable, method, "", err)
		}
		return Redirect{}, err
	}
	if r.Datanode != dn.Name {
		return Redirect{}, errs.Newf(errs.Permission, method, r.Path, "%s presents a redirect token issued for datanode %q", dn, r.Datanode)
	}
	if err := r.Admits(method, req); err != nil {
		return Redirect{}, err
	}
	return r, nil
}

type redirectKey struct{}

// WithRedirect returns ctx carrying the redirect token a delegated call
// was admitted on. The authorizer sets it, so that the handler can spend
// the token's nonce (a CREATE's Create does, through Raft).
func WithRedirect(ctx context.Context, r Redirect) context.Context {
	return context.WithValue(ctx, redirectKey{}, r)
}

// RedirectFromContext returns the redirect token WithRedirect placed, and
// whether the call is a delegated one.
func RedirectFromContext(ctx context.Context) (Redirect, bool) {
	r, ok := ctx.Value(redirectKey{}).(Redirect)
	return r, ok
}

// refuse counts a refusal of method by check for reason and names method
// as the refused operation.
func (a *Authorizer) refuse(method, reason string, err *errs.Error) error {
	a.denied.WithLabelValues(method, reason).Inc()
	err.Op = method
	return err
}

// Reasons check gives for a refusal (the label of the denied counter).
const (
	reasonRole  = "role"  // the caller's role may not call the endpoint
	reasonCheck = "check" // the role may, but its standing check failed
)

// check applies rule to id: the role, then the role's standing check. A
// refusal comes with its reason; its op is left for refuse to set.
func (a *Authorizer) check(rule Rule, id Identity, req any) (reason string, err *errs.Error) {
	if !rule.Allows(id.Role) {
		return reasonRole, errs.Newf(errs.Permission, "", id.Name, "%s may not call this: needs role %s", id, rolesString(rule.Roles))
	}
	switch id.Role {
	case RoleNamenode:
		if rule.Open || a.cfg.Env == nil {
			return "", nil
		}
		if rule.SelfJoin {
			if r, ok := req.(*api.AddServerRequest); ok && r.GetId() == id.Name {
				return "", nil
			}
		}
		if !a.cfg.Env.IsMember(id.Name) {
			return reasonCheck, errs.Newf(errs.Permission, "", id.Name, "%s is not a namenode of this cluster", id)
		}
	case RoleDatanode:
		if dn, ok := requestDatanode(req); ok && dn != id.Name {
			return reasonCheck, errs.Newf(errs.Permission, "", id.Name, "%s may only speak for itself, not for datanode %q", id, dn)
		}
	case RoleUser:
		if rule.Superuser && (a.cfg.Env == nil || !a.cfg.Env.IsSuperuser(id.Name)) {
			return reasonCheck, errs.Newf(errs.Permission, "", id.Name, "%s may not do this: needs the superuser or the supergroup", id)
		}
	}
	return "", nil
}

// requestDatanode returns the datanode a request speaks for, if it names one.
func requestDatanode(req any) (string, bool) {
	switch r := req.(type) {
	case *api.RegisterRequest:
		return r.GetNode().GetId(), true
	case interface{ GetDatanodeId() string }:
		return r.GetDatanodeId(), true
	}
	return "", false
}

// HTTPUserParam is the query parameter that names the caller of an HTTP
// request under simple auth, as in Hadoop's simple HTTP authentication.
const HTTPUserParam = "user.name"

// HTTPDenied writes the refusal of an HTTP request: status is 401 when the
// caller could not be named, 403 when its role or standing check failed,
// and err says why.
type HTTPDenied func(w http.ResponseWriter, r *http.Request, status int, err error)

// HTTP wraps h, served at pattern (a "METHOD /path" key of [Policy]), with
// the pattern's rule; refusals are plain text. See [Authorizer.HTTPWith].
func (a *Authorizer) HTTP(pattern string, h http.Handler) http.Handler {
	return a.HTTPWith(pattern, h, nil)
}

// HTTPWith wraps h, served at pattern, with the pattern's rule. A public
// rule serves anyone. Any other names the caller ([Authorizer.IdentifyHTTP]),
// applies the rule as for an RPC without a request message, and serves h
// with the identity in the request's context ([IdentityFromContext]). A
// pattern without a rule is refused to everyone. deny writes refusals (nil:
// plain text); every refusal is counted.
func (a *Authorizer) HTTPWith(pattern string, h http.Handler, deny HTTPDenied) http.Handler {
	rule, ok := a.rules[pattern]
	if deny == nil {
		deny = func(w http.ResponseWriter, _ *http.Request, status int, err error) {
			http.Error(w, http.StatusText(status)+": "+err.Error(), status)
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !ok {
			a.denied.WithLabelValues(pattern, "unknown_endpoint").Inc()
			deny(w, r, http.StatusForbidden, errs.New(errs.Permission, pattern, "", "no rule admits anyone to this endpoint"))
			return
		}
		if rule.Public {
			h.ServeHTTP(w, r)
			return
		}
		id, err := a.identifyHTTP(r, rule)
		if err != nil {
			a.denied.WithLabelValues(pattern, unauthenticated(err)).Inc()
			deny(w, r, http.StatusUnauthorized, err)
			return
		}
		if reason, err := a.check(rule, id, nil); err != nil {
			deny(w, r, http.StatusForbidden, a.refuse(pattern, reason, err))
			return
		}
		ctx := WithOrigin(WithIdentity(r.Context(), id), httpOrigin(pattern, r.RemoteAddr))
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

// identifyHTTP is IdentifyHTTP, except that under simple auth a request
// that names no user is the static web user on a StaticUser rule.
func (a *Authorizer) identifyHTTP(r *http.Request, rule Rule) (Identity, error) {
	if rule.StaticUser && a.cfg.Simple && a.cfg.HTTPStaticUser != "" && !r.URL.Query().Has(HTTPUserParam) {
		return a.notRevoked(nil, Identity{Role: RoleUser, Name: a.cfg.HTTPStaticUser})
	}
	return a.IdentifyHTTP(r)
}

// IdentifyHTTP names the caller of an HTTP request: under mTLS from the
// client certificate its TLS connection verified (the listener asks for
// one but, so that public endpoints stay reachable, does not require it);
// under simple auth from the [HTTPUserParam] query parameter, always as a
// user. There is no fallback identity.
func (a *Authorizer) IdentifyHTTP(r *http.Request) (Identity, error) {
	const op = "authenticate"
	if a.cfg.Simple {
		name := r.URL.Query().Get(HTTPUserParam)
		if name == "" {
			return Identity{}, errs.New(errs.Unauthenticated, op, "", "simple auth: no "+HTTPUserParam+" query parameter")
		}
		if err := ValidateName(name); err != nil {
			return Identity{}, errs.Wrap(errs.Unauthenticated, op, "", err)
		}
		return a.notRevoked(nil, Identity{Role: RoleUser, Name: name})
	}
	if r.TLS == nil {
		return Identity{}, errs.New(errs.Unauthenticated, op, "", "not a TLS connection")
	}
	id, err := IdentityFromTLS(*r.TLS, a.cfg.TrustDomain)
	if err != nil {
		return Identity{}, err
	}
	return a.notRevoked(leafOf(r.TLS.VerifiedChains), id)
}

// SimpleCredentials states id in request metadata on every call, for a
// server's own outgoing calls under simple auth (a datanode to namenodes, a
// namenode to its peers). It adds nothing under mTLS, where the certificate
// speaks.
func SimpleCredentials(id Identity) credentials.PerRPCCredentials { return simpleCreds{id} }

type simpleCreds struct{ id Identity }

func (c simpleCreds) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{UserKey: c.id.Name, RoleKey: c.id.Role.String()}, nil
}

func (simpleCreds) RequireTransportSecurity() bool { return false }
