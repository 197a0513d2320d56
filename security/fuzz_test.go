package security

import (
	"crypto/ed25519"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// fuzzEnv is deterministic: fixed key seed and clock, so seeds stay valid.
func fuzzEnv(f *testing.F, cache bool) (*env, ed25519.PublicKey) {
	f.Helper()
	e := &env{clock: newClock(epoch)}
	e.cfg = DefaultConfig()
	e.cfg.Now = e.clock.Now
	e.cfg.VerifyCache = cache
	priv := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	kp := &KeyPair{KID: "fuzz-1", Private: priv, Public: priv.Public().(ed25519.PublicKey), NotBefore: epoch, NotAfter: epoch.Add(70 * time.Minute)}
	e.ks = NewKeySet(e.cfg.TokenLifetime, e.cfg.ClockSkew)
	if err := e.ks.Add(kp.PublicKey()); err != nil {
		f.Fatal(err)
	}
	var err error
	if e.is, err = NewIssuer(e.cfg, staticKeys{kp}, nil); err != nil {
		f.Fatal(err)
	}
	if e.v, err = NewVerifier(e.cfg, e.ks, nil); err != nil {
		f.Fatal(err)
	}
	return e, kp.Public
}

// FuzzVerify: arbitrary bytes never panic, and whatever is accepted carries
// a genuine EdDSA signature by the one trusted key over claims covering the
// request.
func FuzzVerify(f *testing.F) {
	for _, cache := range []bool{false, true} {
		e, _ := fuzzEnv(f, cache)
		good, _ := e.is.FileToken("alice", 7, Read)
		wr, _ := e.is.WriteToken("alice", 7, 1001, 5)
		f.Add(good, uint64(7), uint64(0), uint64(0), uint8(Read))
		f.Add(wr, uint64(7), uint64(1001), uint64(5), uint8(Write))
		f.Add([]byte(""), uint64(0), uint64(0), uint64(0), uint8(Read))
		f.Add([]byte("a.b.c"), uint64(1), uint64(0), uint64(0), uint8(Read))
		f.Add([]byte("eyJhbGciOiJub25lIn0.e30."), uint64(1), uint64(0), uint64(0), uint8(Read))
		f.Add([]byte(strings.Repeat("A", 9000)), uint64(1), uint64(0), uint64(0), uint8(Read))
		f.Add(good[:len(good)-3], uint64(7), uint64(0), uint64(0), uint8(Read))

	}
	eOff, pub := fuzzEnv(f, false)
	eOn, _ := fuzzEnv(f, true)
	f.Fuzz(func(t *testing.T, tok []byte, ino, blk, gstamp uint64, acc uint8) {
		want := Request{Inode: ino, BlockID: blk, GenStamp: gstamp, Access: Access(acc)}
		for _, e := range []*env{eOff, eOn} {
			for i := 0; i < 2; i++ { // twice: the second may hit the cache
				c, err := e.v.Verify(tok, want)
				if err != nil {
					continue
				}
				parts := strings.Split(string(tok), ".")
				if len(parts) != 3 {
					t.Fatalf("accepted a token with %d parts", len(parts))
				}
				var hdr map[string]any
				hb, _ := b64.DecodeString(parts[0])
				if json.Unmarshal(hb, &hdr) != nil || hdr["alg"] != "EdDSA" {
					t.Fatalf("accepted alg %v", hdr["alg"])
				}
				sig, err := b64.DecodeString(parts[2])
				if err != nil || !ed25519.Verify(pub, []byte(parts[0]+"."+parts[1]), sig) {
					t.Fatal("accepted a token without a valid signature")
				}
				if c.Inode != ino || !c.Access.Has(want.Access) {
					t.Fatalf("accepted claims %+v for %+v", c, want)
				}
			}
		}
	})
}

// FuzzPublicKeyUnmarshal: decoding never panics, and what decodes
// re-encodes to the same bytes.
func FuzzPublicKeyUnmarshal(f *testing.F) {
	pk := PublicKey{KID: "nn1-00ff", Key: make(ed25519.PublicKey, 32), NotBefore: epoch, NotAfter: epoch.Add(time.Hour)}
	good, err := pk.MarshalBinary()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte{})
	f.Add([]byte("BFPK\x01\x01\x00"))
	f.Add(append(append([]byte(nil), good...), 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		var p PublicKey
		if p.UnmarshalBinary(b) != nil {
			return
		}
		out, err := p.MarshalBinary()
		if err != nil || string(out) != string(b) {
			t.Fatalf("decoded key re-encodes differently: %v", err)
		}
	})
}

// FuzzParseClaims: the claims-shape parser never panics and never accepts a
// payload without sub, ino, acc, exp, nbf and iat.
func FuzzParseClaims(f *testing.F) {
	f.Add([]byte(`{"sub":"alice","ino":7,"acc":"r","exp":1772367000,"nbf":1772366400,"iat":1772366400}`))
	f.Add([]byte(`{"sub":"alice","ino":7,"acc":"w","blk":1,"gs":2,"exp":1772367000,"nbf":1772366400,"iat":1772366400}`))
	f.Add([]byte(`{"sub":"","ino":7}`))
	f.Add([]byte(`{"ino":-1,"acc":"rwx"}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		var w wireClaims
		if json.Unmarshal(payload, &w) != nil {
			return
		}
		c, err := w.toClaims("k")
		if err != nil {
			return
		}
		if c.User == "" || w.Inode == nil || c.Access == 0 || c.ExpiresAt.IsZero() || !c.NotBefore.Before(c.ExpiresAt) {
			t.Fatalf("accepted incomplete claims %+v", c)
		}
		if c.Access&Write != 0 && !c.HasBlock {
			t.Fatal("write claims without block")
		}
		_ = jwt.RegisteredClaims{}
	})
}

// FuzzParseAccess: accepted strings round-trip through String (as a set).
func FuzzParseAccess(f *testing.F) {
	for _, s := range []string{"r", "w", "c", "rw", "cwr", "", "rr", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAccess(s)
		if err != nil {
			return
		}
		b, err := ParseAccess(a.String())
		if err != nil || a != b || len(s) != len(a.String()) {
			t.Fatalf("%q -> %v -> %q", s, a, a.String())
		}
	})
}
