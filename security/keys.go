package security

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blockfs/blockfs/errs"
)

// MaxKIDLen is the longest key id the binary encoding allows.
const MaxKIDLen = 128

// KeyPair is a namenode signing key: an Ed25519 key pair with its kid and
// validity window. NotBefore is when it became current; NotAfter is the last
// instant a token it signed may still be valid (NotBefore + rotation +
// longest token lifetime). A KeyPair is immutable once made; its String and
// GoString never print the private key.
type KeyPair struct {
	KID       string
	Private   ed25519.PrivateKey
	Public    ed25519.PublicKey
	NotBefore time.Time
	NotAfter  time.Time
}

// GenerateKeyPair makes a fresh key pair current from now. Its kid is
// "<nodeID>-<16 random hex digits>", so kids are unique across namenodes and
// restarts without coordination.
func GenerateKeyPair(nodeID string, now time.Time, rotation, maxLifetime time.Duration) (*KeyPair, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, errs.Wrap(errs.Internal, "security.GenerateKeyPair", "", err)
	}
	var r [8]byte
	if _, err := rand.Read(r[:]); err != nil {
		return nil, errs.Wrap(errs.Internal, "security.GenerateKeyPair", "", err)
	}
	kid := hex.EncodeToString(r[:])
	if nodeID != "" {
		kid = nodeID + "-" + kid
	}
	if err := checkKID(kid); err != nil {
		return nil, err
	}
	return &KeyPair{
		KID:       kid,
		Private:   priv,
		Public:    pub,
		NotBefore: now,
		NotAfter:  now.Add(rotation + maxLifetime),
	}, nil
}

// PublicKey returns the public half, for publishing.
func (k *KeyPair) PublicKey() PublicKey {
	return PublicKey{KID: k.KID, Key: k.Public, NotBefore: k.NotBefore, NotAfter: k.NotAfter}
}

func (k *KeyPair) String() string {
	return fmt.Sprintf("KeyPair{kid=%s notBefore=%s notAfter=%s}", k.KID,
		k.NotBefore.UTC().Format(time.RFC3339), k.NotAfter.UTC().Format(time.RFC3339))
}

// GoString keeps %#v from printing the private key.
func (k *KeyPair) GoString() string { return k.String() }

// PublicKey is a published verification key. Encoded by MarshalBinary as in
// docs/FORMATS.md ("Block tokens and keys").
type PublicKey struct {
	KID       string
	Key       ed25519.PublicKey
	NotBefore time.Time
	NotAfter  time.Time
}

const (
	pkMagic      = "BFPK"
	pkVersion    = 1
	pkAlgEd25519 = 1
	pkFixed      = 4 + 1 + 1 + 1 + ed25519.PublicKeySize + 8 + 8 + 4 // all but the kid
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// KeyOwner is the node whose key kid is: kids are "<node id>-<hex>"
// (GenerateKeyPair). It is "" for a kid of no other shape.
func KeyOwner(kid string) string {
	if i := strings.LastIndexByte(kid, '-'); i > 0 {
		return kid[:i]
	}
	return ""
}

func checkKID(kid string) error {
	if kid == "" || len(kid) > MaxKIDLen {
		return errs.Newf(errs.Invalid, "security.PublicKey", "", "key id length %d not in 1..%d", len(kid), MaxKIDLen)
	}
	for i := 0; i < len(kid); i++ {
		c := kid[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return errs.Newf(errs.Invalid, "security.PublicKey", "", "key id has a byte outside [A-Za-z0-9._-]")
		}
	}
	return nil
}

// Validate checks kid syntax, key length and window order.
func (p *PublicKey) Validate() error {
	if err := checkKID(p.KID); err != nil {
		return err
	}
	if len(p.Key) != ed25519.PublicKeySize {
		return errs.Newf(errs.Invalid, "security.PublicKey", p.KID, "public key is %d bytes, want %d", len(p.Key), ed25519.PublicKeySize)
	}
	if !p.NotBefore.Before(p.NotAfter) {
		return errs.New(errs.Invalid, "security.PublicKey", p.KID, "NotBefore not before NotAfter")
	}
	return nil
}

// MarshalBinary encodes the key (see docs/FORMATS.md). Times keep
// nanosecond precision as Unix nanoseconds.
func (p PublicKey) MarshalBinary() ([]byte, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	b := make([]byte, 0, pkFixed+len(p.KID))
	b = append(b, pkMagic...)
	b = append(b, pkVersion, pkAlgEd25519, byte(len(p.KID)))
	b = append(b, p.KID...)
	b = append(b, p.Key...)
	b = binary.LittleEndian.AppendUint64(b, uint64(p.NotBefore.UnixNano()))
	b = binary.LittleEndian.AppendUint64(b, uint64(p.NotAfter.UnixNano()))
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	return b, nil
}

// UnmarshalBinary decodes MarshalBinary's output. It rejects wrong magic,
// version, algorithm, length or checksum, and trailing bytes, with errs.Corrupt
// or errs.Invalid.
func (p *PublicKey) UnmarshalBinary(b []byte) error {
	const op = "security.PublicKey.UnmarshalBinary"
	if len(b) < pkFixed+1 {
		return errs.Newf(errs.Corrupt, op, "", "encoded public key is %d bytes, too short", len(b))
	}
	if string(b[:4]) != pkMagic {
		return errs.New(errs.Corrupt, op, "", "bad magic")
	}
	if b[4] != pkVersion {
		return errs.Newf(errs.Invalid, op, "", "unsupported version %d", b[4])
	}
	if b[5] != pkAlgEd25519 {
		return errs.Newf(errs.Invalid, op, "", "unsupported algorithm %d", b[5])
	}
	n := int(b[6])
	if len(b) != pkFixed+n {
		return errs.Newf(errs.Corrupt, op, "", "encoded public key is %d bytes, want %d", len(b), pkFixed+n)
	}
	body, sum := b[:len(b)-4], binary.LittleEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return errs.New(errs.Corrupt, op, "", "checksum mismatch")
	}
	off := 7
	q := PublicKey{KID: string(b[off : off+n])}
	off += n
	q.Key = ed25519.PublicKey(append([]byte(nil), b[off:off+ed25519.PublicKeySize]...))
	off += ed25519.PublicKeySize
	q.NotBefore = time.Unix(0, int64(binary.LittleEndian.Uint64(b[off:])))
	q.NotAfter = time.Unix(0, int64(binary.LittleEndian.Uint64(b[off+8:])))
	if err := q.Validate(); err != nil {
		return err
	}
	*p = q
	return nil
}

// KeyLookup is what a Verifier needs from a key set.
//
// Contract: Lookup is safe for concurrent use, takes no lock that writers
// hold for long, and is cheap enough to call on every verification (it runs
// on every verifier cache hit). The returned *PublicKey is immutable.
type KeyLookup interface {
	Lookup(kid string) (*PublicKey, bool)
}

// KeySet holds published public keys by kid. Reads load an immutable map
// through an atomic pointer and take no lock; writers copy the map under a
// mutex. The zero value is not usable; call NewKeySet.
type KeySet struct {
	keys   atomic.Pointer[map[string]*PublicKey]
	mu     sync.Mutex // serialises writers
	retain time.Duration
}

// NewKeySet returns an empty set. Prune keeps a key until its NotAfter +
// maxLifetime + skew, so a token signed at the very end of its window and
// verified by a datanode whose clock runs ahead still finds it.
func NewKeySet(maxLifetime, skew time.Duration) *KeySet {
	s := &KeySet{retain: maxLifetime + skew}
	m := map[string]*PublicKey{}
	s.keys.Store(&m)
	return s
}

// Lookup returns the key with this kid. It takes no lock.
func (s *KeySet) Lookup(kid string) (*PublicKey, bool) {
	k, ok := (*s.keys.Load())[kid]
	return k, ok
}

func (s *KeySet) update(f func(m map[string]*PublicKey) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := *s.keys.Load()
	m := make(map[string]*PublicKey, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	if err := f(m); err != nil {
		return err
	}
	s.keys.Store(&m)
	return nil
}

func clonePK(k PublicKey) (*PublicKey, error) {
	if err := k.Validate(); err != nil {
		return nil, err
	}
	k.Key = append(ed25519.PublicKey(nil), k.Key...)
	return &k, nil
}

// Add inserts k. Adding the same key again is a no-op; adding a different
// key under an existing kid is an errs.Exist error (kids are never reused).
func (s *KeySet) Add(k PublicKey) error {
	pk, err := clonePK(k)
	if err != nil {
		return err
	}
	return s.update(func(m map[string]*PublicKey) error {
		if old, ok := m[pk.KID]; ok {
			if old.Key.Equal(pk.Key) && old.NotBefore.Equal(pk.NotBefore) && old.NotAfter.Equal(pk.NotAfter) {
				return nil
			}
			return errs.New(errs.Exist, "security.KeySet.Add", pk.KID, "a different key has this key id")
		}
		m[pk.KID] = pk
		return nil
	})
}

// Remove drops the key with this kid and reports whether it was present.
// Tokens it signed stop verifying at once, cached or not.
func (s *KeySet) Remove(kid string) bool {
	var found bool
	_ = s.update(func(m map[string]*PublicKey) error {
		_, found = m[kid]
		delete(m, kid)
		return nil
	})
	return found
}

// Replace swaps in exactly keys (e.g. the full set from a heartbeat reply).
// On error the set is unchanged. Unchanged keys keep their identity.
func (s *KeySet) Replace(keys []PublicKey) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := *s.keys.Load()
	m := make(map[string]*PublicKey, len(keys))
	for _, k := range keys {
		pk, err := clonePK(k)
		if err != nil {
			return err
		}
		if _, dup := m[pk.KID]; dup {
			return errs.New(errs.Invalid, "security.KeySet.Replace", pk.KID, "duplicate key id")
		}
		if o, ok := old[pk.KID]; ok && o.Key.Equal(pk.Key) && o.NotBefore.Equal(pk.NotBefore) && o.NotAfter.Equal(pk.NotAfter) {
			pk = o
		}
		m[pk.KID] = pk
	}
	s.keys.Store(&m)
	return nil
}

// Prune drops keys whose NotAfter + maxLifetime + skew is before now and
// returns their kids.
func (s *KeySet) Prune(now time.Time) []string {
	var gone []string
	_ = s.update(func(m map[string]*PublicKey) error {
		for kid, k := range m {
			if now.After(k.NotAfter.Add(s.retain)) {
				gone = append(gone, kid)
				delete(m, kid)
			}
		}
		return nil
	})
	sort.Strings(gone)
	return gone
}

// Keys returns copies of all keys, oldest NotBefore first.
func (s *KeySet) Keys() []PublicKey {
	m := *s.keys.Load()
	out := make([]PublicKey, 0, len(m))
	for _, k := range m {
		c := *k
		c.Key = append(ed25519.PublicKey(nil), k.Key...)
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].NotBefore.Equal(out[j].NotBefore) {
			return out[i].NotBefore.Before(out[j].NotBefore)
		}
		return out[i].KID < out[j].KID
	})
	return out
}

// Len returns the number of keys.
func (s *KeySet) Len() int { return len(*s.keys.Load()) }

// SigningKeys supplies the key an Issuer signs with.
//
// Contract: Current is safe for concurrent use and cheap (it runs on every
// issue, cache hits included); it returns nil when no key is installed. The
// returned *KeyPair is immutable and its public half has been (or is being)
// published to the verifiers.
type SigningKeys interface {
	Current() *KeyPair
}

// KeyManager holds one namenode's current signing key, rotates it on
// schedule and remembers the public halves of its keys until they may be
// pruned, so the namenode can publish them.
type KeyManager struct {
	cfg Config
	cur atomic.Pointer[KeyPair]

	mu   sync.Mutex
	pubs []PublicKey // keys made here, oldest first
}

// NewKeyManager returns a manager with no key; call Rotate (or Install)
// before issuing.
func NewKeyManager(cfg Config) (*KeyManager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &KeyManager{cfg: cfg}, nil
}

// Current returns the key to sign with, or nil before the first rotation.
func (m *KeyManager) Current() *KeyPair { return m.cur.Load() }

// Install makes kp current. Use it for a two-phase rotation: GenerateKeyPair,
// commit kp.PublicKey() through Raft, then Install, so no token is signed by
// a key the datanodes cannot have learned yet.
func (m *KeyManager) Install(kp *KeyPair) error {
	pk := kp.PublicKey()
	if err := pk.Validate(); err != nil {
		return err
	}
	if len(kp.Private) != ed25519.PrivateKeySize {
		return errs.New(errs.Invalid, "security.KeyManager.Install", kp.KID, "bad private key length")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pubs = append(m.pubs, pk)
	m.cur.Store(kp)
	return nil
}

// Rotate generates a new key current from now and installs it at once,
// returning its public half to publish.
func (m *KeyManager) Rotate(now time.Time) (PublicKey, error) {
	kp, err := GenerateKeyPair(m.cfg.NodeID, now, m.cfg.KeyRotation, m.cfg.TokenLifetime)
	if err != nil {
		return PublicKey{}, err
	}
	if err := m.Install(kp); err != nil {
		return PublicKey{}, err
	}
	return kp.PublicKey(), nil
}

// Due reports whether the current key is missing or has been current for
// KeyRotation or longer.
func (m *KeyManager) Due(now time.Time) bool {
	kp := m.cur.Load()
	return kp == nil || !now.Before(kp.NotBefore.Add(m.cfg.KeyRotation))
}

// MaybeRotate rotates if Due(now), returning the new public key and true.
func (m *KeyManager) MaybeRotate(now time.Time) (PublicKey, bool, error) {
	if !m.Due(now) {
		return PublicKey{}, false, nil
	}
	pk, err := m.Rotate(now)
	return pk, err == nil, err
}

// PublicKeys returns the public halves to publish at now: every key this
// manager made that a KeySet would not yet prune, oldest first. Older ones
// are forgotten.
func (m *KeyManager) PublicKeys(now time.Time) []PublicKey {
	retain := m.cfg.TokenLifetime + m.cfg.ClockSkew
	m.mu.Lock()
	defer m.mu.Unlock()
	keep := m.pubs[:0]
	for _, k := range m.pubs {
		if !now.After(k.NotAfter.Add(retain)) {
			keep = append(keep, k)
		}
	}
	clear(m.pubs[len(keep):])
	m.pubs = keep
	out := make([]PublicKey, len(keep))
	copy(out, keep)
	return out
}
