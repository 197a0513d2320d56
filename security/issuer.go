package security

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/blockfs/blockfs/errs"
)

// Issuer signs block access tokens on the namenode. It is safe for
// concurrent use; in Cached mode a cache hit takes one shard mutex and does
// no signature.
type Issuer struct {
	cfg    Config
	keys   SigningKeys
	m      *issuerMetrics
	seed   maphash.Seed
	shards []issuerShard
}

type cacheKey struct {
	user   string
	inode  uint64
	access Access
	kid    string
}

// cacheEntry is immutable but for lastUsed: a newer token for the same
// key replaces the whole entry.
type cacheEntry struct {
	token      []byte
	reuseUntil time.Time
	lastUsed   atomic.Int64 // unix nanos, for eviction
}

// issuerShard is one part of the cached-mode token cache. Hits read a
// sync.Map without a lock (KUDU-3210: a shared lock on the hot path costs
// more than the work it guards); the mutex serialises only inserts and
// evictions, which follow a signature anyway. Eviction drops the least
// recently used entry (recency kept to the millisecond).
type issuerShard struct {
	mu  sync.Mutex
	m   sync.Map // cacheKey -> *cacheEntry
	n   int      // entries, under mu
	cap int
	_   [40]byte // keep neighbouring shards' mutexes off one cache line
}

// touch records a use at now, writing the shared cache line only when the
// recorded time is a millisecond or more old.
func (e *cacheEntry) touch(now time.Time) {
	if t := now.UnixNano(); t-e.lastUsed.Load() >= int64(time.Millisecond) {
		e.lastUsed.Store(t)
	}
}

// NewIssuer returns an issuer signing with keys. reg receives the metrics
// (nil: none).
func NewIssuer(cfg Config, keys SigningKeys, reg prometheus.Registerer) (*Issuer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if keys == nil {
		return nil, errs.New(errs.Invalid, "security.NewIssuer", "", "nil SigningKeys")
	}
	n := shardCount(cfg.CacheSize, 16)
	is := &Issuer{cfg: cfg, keys: keys, m: newIssuerMetrics(reg), seed: maphash.MakeSeed(), shards: make([]issuerShard, n)}
	for i := range is.shards {
		is.shards[i].cap = cfg.CacheSize / n
	}
	return is, nil
}

// shardCount is the largest power of two <= min(size, max), at least 1, so
// shards*(size/shards) <= size.
func shardCount(size, max int) int {
	n := 1
	for n*2 <= size && n*2 <= max {
		n *= 2
	}
	return n
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

func (is *Issuer) sign(kp *KeyPair, w *wireClaims, kind prometheus.Counter) (string, error) {
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
	if err := checkUser("token.BlockToken", user); err != nil {
		return nil, err
	}
	if access == 0 || access&^accessAll != 0 {
		return nil, errs.Newf(errs.Invalid, "token.BlockToken", "", "bad access mode %d", access)
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
	const op = "token.FileToken"
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
	sh := &is.shards[maphash.Comparable(is.seed, k)&uint64(len(is.shards)-1)]
	if v, ok := sh.m.Load(k); ok {
		e := v.(*cacheEntry)
		if now.Before(e.reuseUntil) {
			e.touch(now)
			is.m.hits.Inc()
			return e.token, nil
		}
	}
	is.m.misses.Inc()
	iat, exp := is.times(now)
	s, err := is.sign(kp, newWireClaims(user, inode, access, iat, exp), is.m.signedFile)
	if err != nil {
		return nil, err
	}
	e := &cacheEntry{token: []byte(s), reuseUntil: iat.Add(time.Duration(float64(is.cfg.TokenLifetime) * is.cfg.ReuseFraction))}
	e.lastUsed.Store(now.UnixNano())
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if v, ok := sh.m.Load(k); ok {
		if old := v.(*cacheEntry); !e.reuseUntil.After(old.reuseUntil) {
			return old.token, nil // a concurrent miss stored a newer one
		}
		sh.m.Store(k, e)
		return e.token, nil
	}
	sh.m.Store(k, e)
	for sh.n++; sh.n > sh.cap; sh.n-- {
		sh.evictOldest(k)
	}
	return e.token, nil
}

// evictOldest drops the least recently used entry other than keep (the
// one just inserted); mu is held.
func (sh *issuerShard) evictOldest(keep cacheKey) {
	var oldest any
	var at int64
	sh.m.Range(func(k, v any) bool {
		if k == keep {
			return true
		}
		if t := v.(*cacheEntry).lastUsed.Load(); oldest == nil || t < at {
			oldest, at = k, t
		}
		return true
	})
	if oldest != nil {
		sh.m.Delete(oldest)
	}
}

// CacheLen returns the number of cached file tokens (all shards).
func (is *Issuer) CacheLen() int {
	n := 0
	for i := range is.shards {
		sh := &is.shards[i]
		sh.mu.Lock()
		n += sh.n
		sh.mu.Unlock()
	}
	return n
}
