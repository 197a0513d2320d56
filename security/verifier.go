package security

import (
	"errors"
	"fmt"
	"hash/maphash"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/blockfs/blockfs/errs"
)

const opVerify = "security.Verifier.Verify"

// Verifier checks block access tokens on a datanode. It is safe for
// concurrent use and takes no global lock: the key set is read through an
// atomic pointer and the verified-token cache is sharded.
type Verifier struct {
	cfg    Config
	keys   KeyLookup
	parser *jwt.Parser
	m      *verifierMetrics
	seed   maphash.Seed
	cache  *lruCache[*verifiedEntry] // nil when Config.VerifyCache is off
}

// verifiedEntry is one verified token and its claims, immutable. Only
// tokens with a good signature are inserted, so an attacker cannot fill the
// cache with garbage.
type verifiedEntry struct {
	token  string
	claims Claims
}

// verifierShards bounds the verified-token cache's shard count.
const verifierShards = 64

// NewVerifier returns a verifier trusting the keys in keys. reg receives the
// metrics (nil: none).
func NewVerifier(cfg Config, keys KeyLookup, reg prometheus.Registerer) (*Verifier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if keys == nil {
		return nil, errs.New(errs.Invalid, "security.NewVerifier", "", "nil KeyLookup")
	}
	v := &Verifier{
		cfg:  cfg,
		keys: keys,
		parser: jwt.NewParser(
			jwt.WithValidMethods([]string{jwt.SigningMethodEdDSA.Alg()}), // alg pinned: never none, never HS*
			jwt.WithoutClaimsValidation(),                                // times are checked here, with our clock
			jwt.WithStrictDecoding(),
		),
		m:    newVerifierMetrics(reg),
		seed: maphash.MakeSeed(),
	}
	if cfg.VerifyCache {
		v.cache = newLRUCache[*verifiedEntry](cfg.VerifyCacheSize, verifierShards)
	}
	return v, nil
}

func (v *Verifier) reject(kind errs.Kind, reason, msg string) error {
	v.m.byReason[reason].Inc()
	return errs.New(kind, opVerify, "", msg)
}

// Verify checks token against want and returns its claims. A token that
// cannot be trusted is an errs.Unauthenticated error; a trusted token that
// does not cover want is errs.Permission. The message names the reason.
//
// A token seen before and still cached skips only the signature check: the
// kid must still be in the key set, and times and scope are checked against
// this request as for a fresh token.
func (v *Verifier) Verify(token []byte, want Request) (Claims, error) {
	v.m.checks.Inc()
	if len(token) == 0 {
		return Claims{}, v.reject(errs.Unauthenticated, reasonMissing, "missing token")
	}
	if len(token) > v.cfg.MaxTokenSize {
		return Claims{}, v.reject(errs.Unauthenticated, reasonTooLarge, fmt.Sprintf("token too large (%d bytes, limit %d)", len(token), v.cfg.MaxTokenSize))
	}
	now := v.cfg.now()
	var h uint64
	if v.cache != nil {
		h = maphash.Bytes(v.seed, token)
		if e, ok := v.cache.get(h, now.UnixNano()); ok && e.token == string(token) {
			return v.verifyCached(h, e, now, want)
		}
		v.m.misses.Inc()
	}
	c, err := v.parse(token, now)
	if err != nil {
		return Claims{}, err
	}
	if v.cache != nil && !now.After(c.ExpiresAt.Add(v.cfg.ClockSkew)) {
		v.keep(h, token, c, now)
	}
	if err := v.check(now, &c, want); err != nil {
		return Claims{}, err
	}
	return c, nil
}

// verifyCached finishes Verify for a token found in the cache under h: the
// signature is not checked again, everything else is.
func (v *Verifier) verifyCached(h uint64, e *verifiedEntry, now time.Time, want Request) (Claims, error) {
	v.m.hits.Inc()
	c := e.claims
	if _, ok := v.keys.Lookup(c.KID); !ok {
		v.cache.remove(h, e)
		return Claims{}, v.reject(errs.Unauthenticated, reasonUnknownKey, "unknown key")
	}
	if !now.Add(-v.cfg.ClockSkew).Before(c.ExpiresAt) {
		v.cache.remove(h, e) // expired: check refuses it, and it is not kept
	}
	if err := v.check(now, &c, want); err != nil {
		return Claims{}, err
	}
	return c, nil
}

var (
	errNoKID      = errors.New("no kid")
	errUnknownKey = errors.New("unknown kid")
)

// parse verifies the signature and the claims' shape and key window.
func (v *Verifier) parse(token []byte, now time.Time) (Claims, error) {
	var w wireClaims
	var pk *PublicKey
	t, err := v.parser.ParseWithClaims(string(token), &w, func(t *jwt.Token) (any, error) {
		kid, ok := t.Header["kid"].(string)
		if !ok || kid == "" {
			return nil, errNoKID
		}
		k, ok := v.keys.Lookup(kid)
		if !ok {
			return nil, errUnknownKey
		}
		pk = k
		return k.Key, nil
	})
	switch {
	case err == nil:
	case errors.Is(err, errNoKID):
		return Claims{}, v.reject(errs.Unauthenticated, reasonUnknownKey, "unknown key: no kid in header")
	case errors.Is(err, errUnknownKey):
		return Claims{}, v.reject(errs.Unauthenticated, reasonUnknownKey, "unknown key")
	case errors.Is(err, jwt.ErrTokenMalformed):
		return Claims{}, v.reject(errs.Unauthenticated, reasonMalformed, "malformed token")
	case errors.Is(err, jwt.ErrTokenUnverifiable):
		return Claims{}, v.reject(errs.Unauthenticated, reasonBadAlg, "algorithm not allowed")
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		if t == nil || t.Method == nil || t.Method.Alg() != jwt.SigningMethodEdDSA.Alg() {
			return Claims{}, v.reject(errs.Unauthenticated, reasonBadAlg, "algorithm not allowed")
		}
		return Claims{}, v.reject(errs.Unauthenticated, reasonBadSignature, "bad signature")
	default:
		return Claims{}, v.reject(errs.Unauthenticated, reasonMalformed, "malformed token")
	}
	if pk == nil || !t.Valid {
		return Claims{}, v.reject(errs.Unauthenticated, reasonBadSignature, "bad signature")
	}
	c, err := w.toClaims(pk.KID)
	if err != nil {
		v.m.byReason[reasonBadClaims].Inc()
		return Claims{}, err
	}
	// The key vouches only for tokens issued while it was current and
	// expiring within its window.
	skew := v.cfg.ClockSkew
	if c.IssuedAt.Before(pk.NotBefore.Add(-skew).Truncate(time.Second)) || c.IssuedAt.After(pk.NotAfter) || c.ExpiresAt.After(pk.NotAfter.Add(skew)) {
		return Claims{}, v.reject(errs.Unauthenticated, reasonKeyWindow, "token outside its signing key's validity window")
	}
	return c, nil
}

// check enforces times and scope for one request.
func (v *Verifier) check(now time.Time, c *Claims, want Request) error {
	skew := v.cfg.ClockSkew
	if now.Add(skew).Before(c.NotBefore) {
		return v.reject(errs.Unauthenticated, reasonNotYetValid, "token not yet valid")
	}
	if !now.Add(-skew).Before(c.ExpiresAt) {
		return v.reject(errs.Unauthenticated, reasonExpired, "token expired")
	}
	if want.Access == 0 || want.Access&^accessAll != 0 {
		v.m.byReason[reasonBadRequest].Inc()
		return errs.New(errs.Invalid, opVerify, "", "request names no valid access mode")
	}
	if !c.Access.Has(want.Access) {
		return v.reject(errs.Permission, reasonWrongMode, fmt.Sprintf("wrong access mode: token grants %q, request needs %q", c.Access.String(), want.Access.String()))
	}
	// A token for a run of files (bn) covers file i of it: inode Inode+i
	// with block BlockID+i.
	var off uint64
	if c.HasBlock && want.BlockID >= c.BlockID && want.BlockID-c.BlockID < c.Files {
		off = want.BlockID - c.BlockID
	}
	if c.Inode+off != want.Inode {
		return v.reject(errs.Permission, reasonWrongInode, "wrong inode: token is for another file")
	}
	if want.Access&Write != 0 && !c.HasBlock {
		return v.reject(errs.Permission, reasonWrongBlock, "wrong block: write token not scoped to a block")
	}
	if c.HasBlock {
		if c.BlockID+off != want.BlockID {
			return v.reject(errs.Permission, reasonWrongBlock, "wrong block: token is for another block")
		}
		// Generation stamps bind writes; a read of a block whose stamp was
		// bumped by recovery is checked against the replica, not the token.
		if want.Access&Write != 0 && c.GenStamp != want.GenStamp {
			return v.reject(errs.Permission, reasonWrongBlock, "wrong block: generation stamp mismatch")
		}
	}
	return nil
}

// CacheLen returns the number of cached verified tokens (0 with the cache off).
func (v *Verifier) CacheLen() int {
	if v.cache == nil {
		return 0
	}
	return v.cache.len()
}

// Remember caches token as verified without checking its signature, for
// a namenode that has just signed it itself (PrepareFile: the PutFile
// that presents it back is then one cache hit, not a signature check).
// Never give it bytes from the network. Without a cache it does nothing.
func (v *Verifier) Remember(token []byte) error {
	if v.cache == nil {
		return nil
	}
	var w wireClaims
	t, _, err := v.parser.ParseUnverified(string(token), &w)
	if err != nil {
		return errs.Wrap(errs.Internal, "security.Verifier.Remember", "", err)
	}
	kid, _ := t.Header["kid"].(string)
	c, err := w.toClaims(kid)
	if err != nil {
		return err
	}
	v.keep(maphash.Bytes(v.seed, token), token, c, v.cfg.now())
	return nil
}

// keep caches token (hash h) as verified with claims c.
func (v *Verifier) keep(h uint64, token []byte, c Claims, now time.Time) {
	if _, evicted := v.cache.put(h, &verifiedEntry{token: string(token), claims: c}, now.UnixNano(), nil); evicted {
		v.m.evictions.Inc()
	}
}
