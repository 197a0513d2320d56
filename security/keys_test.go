package security

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/blockfs/blockfs/errs"
)

func testPK(kid string) PublicKey {
	pub, _, _ := ed25519.GenerateKey(nil)
	return PublicKey{KID: kid, Key: pub, NotBefore: epoch.Add(123), NotAfter: epoch.Add(70 * time.Minute)}
}

func TestPublicKeyBinaryRoundTrip(t *testing.T) {
	for _, kid := range []string{"a", "nn1-0123456789abcdef", strings.Repeat("k", MaxKIDLen)} {
		t.Run(kid[:1]+fmt.Sprint(len(kid)), func(t *testing.T) {
			pk := testPK(kid)
			b, err := pk.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			if len(b) != 59+len(kid) {
				t.Fatalf("encoded %d bytes, want %d", len(b), 59+len(kid))
			}
			var got PublicKey
			if err := got.UnmarshalBinary(b); err != nil {
				t.Fatal(err)
			}
			if got.KID != pk.KID || !got.Key.Equal(pk.Key) || !got.NotBefore.Equal(pk.NotBefore) || !got.NotAfter.Equal(pk.NotAfter) {
				t.Fatalf("round trip: %+v != %+v", got, pk)
			}
		})
	}
}

func TestPublicKeyDecodeRejects(t *testing.T) {
	good, err := testPK("nn-1").MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	mut := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	cases := []struct {
		name string
		b    []byte
		kind errs.Kind
	}{
		{"empty", nil, errs.Corrupt},
		{"short", good[:20], errs.Corrupt},
		{"magic", mut(func(b []byte) []byte { b[0] = 'X'; return b }), errs.Corrupt},
		{"version", mut(func(b []byte) []byte { b[4] = 2; return b }), errs.Invalid},
		{"alg", mut(func(b []byte) []byte { b[5] = 9; return b }), errs.Invalid},
		{"kid length", mut(func(b []byte) []byte { b[6]++; return b }), errs.Corrupt},
		{"key bit flip", mut(func(b []byte) []byte { b[20] ^= 1; return b }), errs.Corrupt},
		{"crc", mut(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), errs.Corrupt},
		{"trailing", mut(func(b []byte) []byte { return append(b, 0) }), errs.Corrupt},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var pk PublicKey
			if err := pk.UnmarshalBinary(c.b); errs.KindOf(err) != c.kind {
				t.Fatalf("err %v, want kind %v", err, c.kind)
			}
		})
	}
}

func TestPublicKeyValidate(t *testing.T) {
	cases := []struct {
		name string
		f    func(*PublicKey)
	}{
		{"empty kid", func(p *PublicKey) { p.KID = "" }},
		{"long kid", func(p *PublicKey) { p.KID = strings.Repeat("a", MaxKIDLen+1) }},
		{"kid with quote", func(p *PublicKey) { p.KID = `a"b` }},
		{"short key", func(p *PublicKey) { p.Key = p.Key[:31] }},
		{"window", func(p *PublicKey) { p.NotAfter = p.NotBefore }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pk := testPK("ok")
			c.f(&pk)
			if _, err := pk.MarshalBinary(); errs.KindOf(err) != errs.Invalid {
				t.Fatalf("err %v", err)
			}
		})
	}
}

func TestKeySetOps(t *testing.T) {
	ks := NewKeySet(10*time.Minute, 30*time.Second)
	a, b := testPK("a"), testPK("b")
	if err := ks.Add(a); err != nil {
		t.Fatal(err)
	}
	if err := ks.Add(a); err != nil {
		t.Fatalf("re-adding the same key: %v", err)
	}
	evil := a
	evil.Key = b.Key
	if err := ks.Add(evil); !errs.Is(err, errs.Exist) {
		t.Fatalf("different key under same kid: %v", err)
	}
	a.Key[0] ^= 1 // the set holds its own copy
	if k, _ := ks.Lookup("a"); k.Key.Equal(a.Key) {
		t.Fatal("KeySet aliases the caller's key bytes")
	}
	if err := ks.Replace([]PublicKey{b, b}); !errs.Is(err, errs.Invalid) {
		t.Fatalf("duplicate in Replace: %v", err)
	}
	if ks.Len() != 1 {
		t.Fatal("failed Replace changed the set")
	}
	if err := ks.Replace([]PublicKey{b}); err != nil {
		t.Fatal(err)
	}
	if _, ok := ks.Lookup("a"); ok || ks.Len() != 1 {
		t.Fatal("Replace kept a")
	}
	if !ks.Remove("b") || ks.Remove("b") || ks.Len() != 0 {
		t.Fatal("Remove")
	}
}

// TestKeyRotation: tokens signed before a rotation still verify until they
// expire; Prune drops a key only after NotAfter + lifetime + skew.
func TestKeyRotation(t *testing.T) {
	e := newEnv(t, nil)
	k1 := e.km.Current().PublicKey()
	if want := k1.NotBefore.Add(e.cfg.KeyRotation + e.cfg.TokenLifetime); !k1.NotAfter.Equal(want) {
		t.Fatalf("NotAfter %v, want %v", k1.NotAfter, want)
	}
	// Last token of k1: issued just before rotation is due.
	e.clock.Set(epoch.Add(e.cfg.KeyRotation - time.Second))
	old := must(t)(e.is.FileToken("alice", inode, Read))
	e.clock.Set(epoch.Add(e.cfg.KeyRotation))
	if !e.km.Due(e.clock.Now()) {
		t.Fatal("rotation not due")
	}
	k2, rotated, err := e.km.MaybeRotate(e.clock.Now())
	if err != nil || !rotated {
		t.Fatal(rotated, err)
	}
	if _, again, _ := e.km.MaybeRotate(e.clock.Now()); again {
		t.Fatal("rotated twice")
	}
	if err := e.ks.Add(k2); err != nil {
		t.Fatal(err)
	}
	fresh := must(t)(e.is.FileToken("alice", inode, Read))
	if bytes.Equal(old, fresh) {
		t.Fatal("rotation reused the old token")
	}
	for _, tok := range [][]byte{old, fresh} {
		if _, err := e.v.Verify(tok, readReq); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(e.km.PublicKeys(e.clock.Now())); got != 2 {
		t.Fatalf("publishing %d keys, want 2", got)
	}
	// The old token dies at its own exp, not at rotation.
	e.clock.Set(epoch.Add(e.cfg.KeyRotation - time.Second + e.cfg.TokenLifetime + e.cfg.ClockSkew + time.Second))
	_, err = e.v.Verify(old, readReq)
	wantErr(t, err, errs.Unauthenticated, "token expired")

	pruneAt := k1.NotAfter.Add(e.cfg.TokenLifetime + e.cfg.ClockSkew)
	steps := []struct {
		at   time.Time
		gone bool
	}{
		{k1.NotAfter, false},
		{pruneAt, false},
		{pruneAt.Add(time.Nanosecond), true},
	}
	for _, s := range steps {
		t.Run(s.at.Sub(k1.NotAfter).String(), func(t *testing.T) {
			gone := e.ks.Prune(s.at)
			_, present := e.ks.Lookup(k1.KID)
			if present == s.gone {
				t.Fatalf("at %v: present=%v pruned=%v", s.at, present, gone)
			}
			if _, ok := e.ks.Lookup(k2.KID); !ok {
				t.Fatal("current key pruned")
			}
			if pubs := e.km.PublicKeys(s.at); (len(pubs) == 1) != s.gone {
				t.Fatalf("manager still publishes %d keys", len(pubs))
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	if err := (&Config{}).Validate(); err == nil {
		t.Fatal("zero Config valid")
	}
	d := DefaultConfig()
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		f    func(*Config)
	}{
		{"mode", func(c *Config) { c.Mode = 9 }},
		{"lifetime", func(c *Config) { c.TokenLifetime = 0 }},
		{"fraction 0", func(c *Config) { c.ReuseFraction = 0 }},
		{"fraction >1", func(c *Config) { c.ReuseFraction = 1.5 }},
		{"cache size", func(c *Config) { c.CacheSize = 0 }},
		{"rotation", func(c *Config) { c.KeyRotation = 0 }},
		{"skew", func(c *Config) { c.ClockSkew = -1 }},
		{"max token", func(c *Config) { c.MaxTokenSize = 10 }},
		{"verify cache size", func(c *Config) { c.VerifyCacheSize = 0 }},
		{"node id", func(c *Config) { c.NodeID = "a b" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.f(&c)
			if err := c.Validate(); !errs.Is(err, errs.Invalid) {
				t.Fatalf("err %v", err)
			}
		})
	}
}

func TestParseMode(t *testing.T) {
	cases := []struct {
		in   string
		want Mode
		ok   bool
	}{{"per-block", PerBlock, true}, {"per-request", PerRequest, true}, {"cached", Cached, true}, {"", Cached, true}, {"PerBlock", 0, false}}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			m, err := ParseMode(c.in)
			if (err == nil) != c.ok || (c.ok && m != c.want) {
				t.Fatalf("ParseMode(%q) = %v, %v", c.in, m, err)
			}
			if c.ok && c.in != "" && m.String() != c.in {
				t.Fatalf("String %q", m.String())
			}
		})
	}
}

func TestParseAccess(t *testing.T) {
	cases := []struct {
		in   string
		want Access
		ok   bool
	}{{"r", Read, true}, {"w", Write, true}, {"c", Copy, true}, {"rw", Read | Write, true}, {"wr", Read | Write, true},
		{"rwc", Read | Write | Copy, true}, {"", 0, false}, {"rr", 0, false}, {"x", 0, false}, {"rwcr", 0, false}}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			a, err := ParseAccess(c.in)
			if (err == nil) != c.ok || a != c.want {
				t.Fatalf("ParseAccess(%q) = %v, %v", c.in, a, err)
			}
		})
	}
	if !(Read | Write).Has(Read) || Read.Has(Write) || Read.Has(0) || (Read|Copy).String() != "rc" {
		t.Fatal("Has/String")
	}
}
