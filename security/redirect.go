package security

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/blockfs/blockfs/errs"
)

// Redirect tokens carry a WebHDFS data operation (CREATE, APPEND, OPEN) from the
// namenode that answered its first step to the one datanode it redirected
// the client to. The datanode then acts as the token's user: it calls the
// namenode with its own identity plus the token in DelegationKey metadata,
// and the namenode runs the call as the user (docs/SECURITY.md, "WebHDFS").
// They are signed with the namenode's block-token keys, so every datanode
// and namenode already trusts them, but they are a different kind: a block
// token verifier refuses them and a redirect verifier refuses block tokens.

// DelegationKey is the request metadata key in which a datanode sends the
// redirect token it acts on.
const DelegationKey = "blockfs-delegation"

// RedirectLifetime is how long a redirect token is valid: long enough for
// a client to follow a 307, short enough that a leaked URL is soon dead.
const RedirectLifetime = time.Minute

// redirectKind is the "knd" claim of every redirect token.
const redirectKind = "webhdfs"

// RedirectOps are the operations a redirect token can carry.
const (
	RedirectCreate = "CREATE"
	RedirectAppend = "APPEND"
	RedirectOpen   = "OPEN"
)

// CreateParams are a CREATE's parameters, fixed by the namenode in the
// token: the datanode creates the file with exactly these.
type CreateParams struct {
	Overwrite    bool   `json:"ow"`
	CreateParent bool   `json:"cp"`
	Perm         uint32 `json:"perm"`
	Replication  uint32 `json:"rep"`
	BlockSize    uint64 `json:"bs"`
}

// Redirect is what a redirect token grants: Op on Path as User, through
// Datanode only, once (Nonce), until ExpiresAt.
type Redirect struct {
	User     string // sub
	Op       string // op: RedirectCreate, RedirectAppend or RedirectOpen
	Path     string // pth
	Datanode string // dn: the datanode the client was sent to
	Inode    uint64 // ino: OPEN's and APPEND's file (0 for CREATE: not made yet)
	// OPEN's range as the client asked it (off, len; HasLength false: to
	// the end).
	Offset, Length uint64
	HasLength      bool
	Create         CreateParams // CREATE's parameters (cr)
	Nonce          string       // jti: 128 random bits, hex
	KID            string       // header kid
	IssuedAt       time.Time    // iat (= nbf)
	ExpiresAt      time.Time    // exp
}

// redirectClaims is the JWT payload (docs/FORMATS.md, "Redirect tokens").
type redirectClaims struct {
	jwt.RegisteredClaims
	Kind     string        `json:"knd"`
	Op       string        `json:"op"`
	Path     string        `json:"pth"`
	Datanode string        `json:"dn"`
	Inode    uint64        `json:"ino,omitempty"`
	Offset   uint64        `json:"off,omitempty"`
	Length   *uint64       `json:"len,omitempty"`
	Create   *CreateParams `json:"cr,omitempty"`
}

// RedirectToken signs r (User, Op, Path, Datanode and the op's
// parameters) with the current key, for RedirectLifetime from now, with a
// fresh nonce. It returns the token and r as signed.
func (is *Issuer) RedirectToken(r Redirect) ([]byte, Redirect, error) {
	const op = "security.Issuer.RedirectToken"
	if err := checkUser(op, r.User); err != nil {
		return nil, r, err
	}
	if (r.Op != RedirectCreate && r.Op != RedirectAppend && r.Op != RedirectOpen) || r.Path == "" || r.Datanode == "" {
		return nil, r, errs.Newf(errs.Invalid, op, r.Path, "a redirect token needs op CREATE, APPEND or OPEN, a path and a datanode (op %q)", r.Op)
	}
	now := is.cfg.now()
	kp, err := is.current(now)
	if err != nil {
		return nil, r, err
	}
	var nonce [16]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, r, errs.Wrap(errs.Internal, op, "", err)
	}
	r.Nonce, r.KID = hex.EncodeToString(nonce[:]), kp.KID
	r.IssuedAt = now.Truncate(time.Second)
	r.ExpiresAt = r.IssuedAt.Add(RedirectLifetime)
	c := &redirectClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Subject: r.User, ID: r.Nonce, IssuedAt: jwt.NewNumericDate(r.IssuedAt),
			NotBefore: jwt.NewNumericDate(r.IssuedAt), ExpiresAt: jwt.NewNumericDate(r.ExpiresAt),
		},
		Kind: redirectKind, Op: r.Op, Path: r.Path, Datanode: r.Datanode, Inode: r.Inode,
	}
	switch r.Op {
	case RedirectCreate:
		cp := r.Create
		c.Create = &cp
	case RedirectOpen:
		c.Offset = r.Offset
		if r.HasLength {
			l := r.Length
			c.Length = &l
		}
	}
	s, err := is.sign(kp, c, is.m.signed.WithLabelValues("redirect"))
	return []byte(s), r, err
}

// RedirectVerifier checks redirect tokens: on a datanode before it acts on
// a WebHDFS request, on a namenode before it lets a datanode act as the
// token's user. It keeps no cache (every token is used once) and is safe
// for concurrent use.
type RedirectVerifier struct {
	cfg    Config
	keys   KeyLookup
	parser *jwt.Parser
}

// NewRedirectVerifier returns a verifier trusting keys; cfg gives the
// clock, the clock-skew allowance and the largest token.
func NewRedirectVerifier(cfg Config, keys KeyLookup) *RedirectVerifier {
	return &RedirectVerifier{cfg: cfg, keys: keys, parser: jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodEdDSA.Alg()}), // alg pinned: never none, never HS*
		jwt.WithoutClaimsValidation(),                                // times are checked below, with our clock
		jwt.WithStrictDecoding(),
	)}
}

// ErrUnknownRedirectKey is in the chain of a Verify error when the token's
// key is not (yet) known here: the caller may refresh its keys and retry.
var ErrUnknownRedirectKey = errors.New("unknown key")

// Verify checks token's signature (EdDSA, a known kid, within the key's
// window), its kind and shape, and its times. Every refusal is an
// errs.Unauthenticated error saying why. It does not check what the token
// is used for: see Redirect.Check and Redirect.Admits.
func (v *RedirectVerifier) Verify(token []byte) (Redirect, error) {
	const op = "redirect token"
	bad := func(msg string, cause error) (Redirect, error) {
		return Redirect{}, &errs.Error{Kind: errs.Unauthenticated, Op: op, Msg: msg, Err: cause}
	}
	if len(token) == 0 {
		return bad("missing token", nil)
	}
	if len(token) > v.cfg.MaxTokenSize {
		return bad("token too large", nil)
	}
	var c redirectClaims
	var pk *PublicKey
	t, err := v.parser.ParseWithClaims(string(token), &c, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		k, ok := v.keys.Lookup(kid)
		if !ok {
			return nil, ErrUnknownRedirectKey
		}
		pk = k
		return k.Key, nil
	})
	switch {
	case errors.Is(err, ErrUnknownRedirectKey):
		return bad("signed by an unknown key", ErrUnknownRedirectKey)
	case err != nil || t == nil || !t.Valid || pk == nil:
		return bad("bad signature, algorithm or encoding", nil)
	}
	r := Redirect{User: c.Subject, Op: c.Op, Path: c.Path, Datanode: c.Datanode, Inode: c.Inode, Offset: c.Offset, Nonce: c.ID, KID: pk.KID}
	if c.Kind != redirectKind || c.Subject == "" || c.ID == "" || c.Path == "" || c.Datanode == "" ||
		c.IssuedAt == nil || c.NotBefore == nil || c.ExpiresAt == nil {
		return bad("not a redirect token, or a claim is missing", nil)
	}
	switch {
	case c.Op == RedirectCreate && c.Create != nil && c.Length == nil && c.Offset == 0 && c.Inode == 0:
		r.Create = *c.Create
	case c.Op == RedirectAppend && c.Create == nil && c.Length == nil && c.Offset == 0 && c.Inode != 0:
	case c.Op == RedirectOpen && c.Create == nil && c.Inode != 0:
		if c.Length != nil {
			r.Length, r.HasLength = *c.Length, true
		}
	default:
		return bad("claims do not fit op "+c.Op, nil)
	}
	r.IssuedAt, r.ExpiresAt = c.IssuedAt.Time, c.ExpiresAt.Time
	now, skew := v.cfg.now(), v.cfg.ClockSkew
	switch {
	case r.ExpiresAt.Sub(r.IssuedAt) > RedirectLifetime || !c.NotBefore.Time.Equal(r.IssuedAt):
		return bad("lifetime longer than a redirect token's", nil)
	case r.IssuedAt.Before(pk.NotBefore.Add(-skew).Truncate(time.Second)) || r.IssuedAt.After(pk.NotAfter):
		return bad("issued outside its signing key's validity window", nil)
	case now.Add(skew).Before(r.IssuedAt):
		return bad("not yet valid", nil)
	case !now.Add(-skew).Before(r.ExpiresAt):
		return bad("expired", nil)
	}
	return r, nil
}

// Check reports whether r covers a request to datanode for op on path, as
// an errs.Permission error naming the first claim that differs.
func (r Redirect) Check(datanode, op, path string) error {
	const what = "redirect token"
	switch {
	case r.Datanode != datanode:
		return errs.Newf(errs.Permission, what, path, "token is for datanode %q, not this one", r.Datanode)
	case r.Op != op:
		return errs.Newf(errs.Permission, what, path, "token is for op %s, not %s", r.Op, op)
	case r.Path != path:
		return errs.Newf(errs.Permission, what, path, "token is for another path (%q)", r.Path)
	}
	return nil
}
