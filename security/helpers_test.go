package security

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"hash/maphash"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blockfs/blockfs/errs"
)

// fakeClock is an injectable clock safe for concurrent use.
type fakeClock struct{ ns atomic.Int64 }

func newClock(t time.Time) *fakeClock    { c := &fakeClock{}; c.ns.Store(t.UnixNano()); return c }
func (c *fakeClock) Now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) Set(t time.Time)     { c.ns.Store(t.UnixNano()) }
func (c *fakeClock) Add(d time.Duration) { c.ns.Add(int64(d)) }

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type env struct {
	clock *fakeClock
	cfg   Config
	km    *KeyManager
	ks    *KeySet
	is    *Issuer
	v     *Verifier
}

func newEnv(t testing.TB, mod func(*Config)) *env {
	t.Helper()
	e := &env{clock: newClock(epoch)}
	e.cfg = DefaultConfig()
	e.cfg.Now = e.clock.Now
	if mod != nil {
		mod(&e.cfg)
	}
	var err error
	if e.km, err = NewKeyManager(e.cfg); err != nil {
		t.Fatal(err)
	}
	e.ks = NewKeySet(e.cfg.TokenLifetime, e.cfg.ClockSkew)
	e.rotate(t)
	if e.is, err = NewIssuer(e.cfg, e.km, nil); err != nil {
		t.Fatal(err)
	}
	if e.v, err = NewVerifier(e.cfg, e.ks, nil); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) rotate(t testing.TB) PublicKey {
	t.Helper()
	pk, err := e.km.Rotate(e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := e.ks.Add(pk); err != nil {
		t.Fatal(err)
	}
	return pk
}

// must(t)(f()) returns f's token or fails the test.
func must(t testing.TB) func([]byte, error) []byte {
	return func(b []byte, err error) []byte {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
}

// wantErr checks err has kind k and a message containing reason.
func wantErr(t testing.TB, err error, k errs.Kind, reason string) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted; want %v %q", k, reason)
	}
	var e *errs.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T %v is not *errs.Error", err, err)
	}
	if e.Kind != k || !strings.Contains(e.Msg, reason) {
		t.Fatalf("got %v %q; want %v %q", e.Kind, e.Msg, k, reason)
	}
}

var b64 = base64.RawURLEncoding

func splitJWT(t testing.TB, tok []byte) (hdr, payload map[string]any, sig []byte) {
	t.Helper()
	parts := strings.Split(string(tok), ".")
	if len(parts) != 3 {
		t.Fatalf("token has %d parts", len(parts))
	}
	dec := func(s string, v any) {
		b, err := b64.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		if v != nil {
			d := json.NewDecoder(strings.NewReader(string(b)))
			d.UseNumber()
			if err := d.Decode(v); err != nil {
				t.Fatal(err)
			}
		}
	}
	dec(parts[0], &hdr)
	dec(parts[1], &payload)
	sig, err := b64.DecodeString(parts[2])
	if err != nil {
		t.Fatal(err)
	}
	return hdr, payload, sig
}

func joinJWT(t testing.TB, hdr, payload map[string]any, sig []byte) []byte {
	t.Helper()
	h, err := json.Marshal(hdr)
	if err != nil {
		t.Fatal(err)
	}
	p, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	return []byte(b64.EncodeToString(h) + "." + b64.EncodeToString(p) + "." + b64.EncodeToString(sig))
}

// seen marks the key (user, inode, access) under the current signing key
// as missed once before, so its next miss is cached at once: for tests of
// the cache's reuse and eviction, which the doorkeeper would otherwise
// delay by one miss per key (TestDoorkeeper tests that delay).
func (e *env) seen(user string, ino uint64, a Access) {
	k := cacheKey{user: user, inode: ino, access: a, kid: e.is.keys.Current().KID}
	e.is.door.admit(maphash.Comparable(e.is.seed, k))
}
