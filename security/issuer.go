package security

import (
	"hash/maphash"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/blockfs/blockfs/errs"
)

// Issuer signs block access tokens on the namenode. It is safe for
// concurrent use; in Cached mode a cache hit takes one shard's read lock and
// does no signature.
type Issuer struct {
	cfg   Config
	keys  SigningKeys
	m     *issuerMetrics
	seed  maphash.Seed
	cache *lruCache[*cacheEntry] // Cached mode only
	door  *doorkeeper            // Cached mode only: which misses the cache admits
}

type cacheKey struct {
	user   string
	inode  uint64
	access Access
	kid    string
}

// cacheEntry is immutable: a newer token for the same key replaces the
// whole entry.
type cacheEntry struct {
	key        cacheKey
	token      []byte
	reuseUntil int64 // unix nanos
}

// issuerShards bounds the issuer cache's shard count. With 16, two
// goroutines hitting the cache share a shard one time in 16.
const issuerShards = 16

// NewIssuer returns an issuer signing with keys. reg receives the metrics
// (nil: none).
func NewIssuer(cfg Config, keys SigningKeys, reg prometheus.Registerer) (*Issuer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if keys == nil {
		return nil, errs.New(errs.Invalid, "security.NewIssuer", "", "nil SigningKeys")
	}
	is := &Issuer{cfg: cfg, keys: keys, m: newIssuerMetrics(reg), seed: maphash.MakeSeed()}
	if cfg.Mode == Cached {
		is.cache = newLRUCache[*cacheEntry](cfg.CacheSize, issuerShards)
		is.door = newDoorkeeper(cfg.CacheSize)
	}
	return is, nil
}

// Mode returns the configured mode.
func (is *Issuer) Mode() Mode { return is.cfg.Mode }

func (is *Issuer) current(now time.Time) (*KeyPair, error) {
	kp := is.keys.Current()
	if kp == nil {
		return nil, errs.New(errs.Unavailable, "token.issue", "", "no signing key installed")
	}
	if now.Before(kp.NotBefore) || now.Add(is.cfg.TokenLifetime).After(kp.NotAfter) {
		return nil, errs.New(errs.Unavailable, "token.issue", kp.KID, "signing key outside its validity window (rotation overdue?)")
	}
	return kp, nil
}

func (is *Issuer) sign(kp *KeyPair, w jwt.Claims, kind prometheus.Counter) (string, error) {
	start := time.Now()
	t := jwt.NewWithClaims(jwt.SigningMethodEdDSA, w)
	t.Header["kid"] = kp.KID
	s, err := t.SignedString(kp.Private)
	if err != nil {
		return "", errs.Wrap(errs.Internal, "token.sign", kp.KID, err)
	}
	is.m.signTime.Observe(time.Since(start).Seconds())
	kind.Inc()
	return s, nil
}

func checkUser(op, user string) error {
	if user == "" {
		return errs.New(errs.Invalid, op, "", "empty user")
	}
	return nil
}

// times returns iat (now truncated to the JWT's one-second precision) and exp.
func (is *Issuer) times(now time.Time) (iat, exp time.Time) {
	iat = now.Truncate(time.Second)
	return iat, iat.Add(is.cfg.TokenLifetime)
}

// BlockToken signs a token scoped to one block of inode (per-block mode, and
// the block-scoped tokens for replication). access must be non-empty.
func (is *Issuer) BlockToken(user string, inode, blockID, genStamp uint64, access Access) ([]byte, error) {
	return is.FilesToken(user, inode, blockID, genStamp, 1, access)
}

// FilesToken signs a token scoped to files files: inode inode+i with
// block blockID+i, stamp genStamp, for i < files (1..MaxFiles; the bn
// claim when more than 1): PutFile's files prepared in one run, whose
// datanodes then verify one signature for all of them.
func (is *Issuer) FilesToken(user string, inode, blockID, genStamp, files uint64, access Access) ([]byte, error) {
	if err := checkUser("security.Issuer.BlockToken", user); err != nil {
		return nil, err
	}
	if access == 0 || access&^accessAll != 0 {
		return nil, errs.Newf(errs.Invalid, "security.Issuer.BlockToken", "", "bad access mode %d", access)
	}
	if files == 0 || files > MaxFiles {
		return nil, errs.Newf(errs.Invalid, "security.Issuer.BlockToken", "", "%d files: want 1..%d", files, MaxFiles)
	}
	now := is.cfg.now()
	kp, err := is.current(now)
	if err != nil {
		return nil, err
	}
	iat, exp := is.times(now)
	w := newWireClaims(user, inode, access, iat, exp)
	b, g := blockID, genStamp
	w.BlockID, w.GenStamp = &b, &g
	if files > 1 {
		w.Files = files
	}
	kind := is.m.signedBlk
	if access&Write != 0 {
		kind = is.m.signedWr
	}
	s, err := is.sign(kp, w, kind)
	return []byte(s), err
}

// WriteToken signs a write token for one block; it is never cached.
func (is *Issuer) WriteToken(user string, inode, blockID, genStamp uint64) ([]byte, error) {
	return is.BlockToken(user, inode, blockID, genStamp, Write)
}

// FileToken returns a token scoped to (user, inode, access), not to a block
// (the returned bytes may be shared with other callers: do not modify them):
// signed afresh in PerRequest mode, reused from the cache in Cached mode
// until ReuseFraction of its lifetime has passed. access must not include
// Write (write tokens are per block). In PerBlock mode FileToken is an
// errs.Precondition error: call BlockToken per block.
func (is *Issuer) FileToken(user string, inode uint64, access Access) ([]byte, error) {
	const op = "security.Issuer.FileToken"
	if err := checkUser(op, user); err != nil {
		return nil, err
	}
	if access == 0 || access&^accessAll != 0 || access&Write != 0 {
		return nil, errs.Newf(errs.Invalid, op, "", "bad access mode %q for a file token (write tokens are per block)", access.String())
	}
	switch is.cfg.Mode {
	case PerBlock:
		return nil, errs.New(errs.Precondition, op, "", "issuer is in per-block mode")
	case PerRequest:
		now := is.cfg.now()
		kp, err := is.current(now)
		if err != nil {
			return nil, err
		}
		iat, exp := is.times(now)
		s, err := is.sign(kp, newWireClaims(user, inode, access, iat, exp), is.m.signedFile)
		return []byte(s), err
	}
	now := is.cfg.now()
	kp, err := is.current(now)
	if err != nil {
		return nil, err
	}
	k := cacheKey{user: user, inode: inode, access: access, kid: kp.KID}
	h := maphash.Comparable(is.seed, k)
	old, ok := is.cache.get(h, now.UnixNano())
	if ok && old.key == k && now.UnixNano() < old.reuseUntil {
		is.m.hits.Inc()
		return old.token, nil
	}
	// A miss, a token past its reuse time, or (once in 2^64) another key
	// under the same hash: sign, and let the new entry take the slot.
	is.m.misses.Inc()
	iat, exp := is.times(now)
	s, err := is.sign(kp, newWireClaims(user, inode, access, iat, exp), is.m.signedFile)
	if err != nil {
		return nil, err
	}
	if !(ok && old.key == k) && !is.door.admit(h) {
		return []byte(s), nil // a first miss: cached if it comes again (doorkeeper)
	}
	reuse := iat.Add(time.Duration(float64(is.cfg.TokenLifetime) * is.cfg.ReuseFraction))
	e := &cacheEntry{key: k, token: []byte(s), reuseUntil: reuse.UnixNano()}
	e, evicted := is.cache.put(h, e, now.UnixNano(), newerToken)
	if evicted {
		is.m.evictions.Inc()
	}
	return e.token, nil
}

// newerToken keeps a cached entry that a concurrent miss stored for the
// same key with a reuse time at least as late as v's.
func newerToken(old, v *cacheEntry) bool {
	return old.key == v.key && v.reuseUntil <= old.reuseUntil
}

// CacheLen returns the number of cached file tokens (all shards; 0 outside
// Cached mode).
func (is *Issuer) CacheLen() int {
	if is.cache == nil {
		return 0
	}
	return is.cache.len()
}
