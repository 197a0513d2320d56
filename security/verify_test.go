package security

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/blockfs/blockfs/errs"
)

const (
	inode   = 7
	blockID = 1001
	gs      = 5
)

var readReq = Request{Inode: inode, Access: Read}

// TestAttackMatrix checks every forged or misused token is rejected with the
// right kind and reason, with the verified-token cache off and on (and, for
// "cache on", after the genuine token has been cached).
func TestAttackMatrix(t *testing.T) {
	type attack struct {
		name   string
		token  func(t *testing.T, e *env) []byte
		at     time.Duration // clock offset from issue time when verifying
		want   Request
		kind   errs.Kind
		reason string
	}
	fileTok := func(t *testing.T, e *env) []byte { return must(t)(e.is.FileToken("alice", inode, Read)) }
	writeTok := func(t *testing.T, e *env) []byte { return must(t)(e.is.WriteToken("alice", inode, blockID, gs)) }
	writeReq := Request{Inode: inode, BlockID: blockID, GenStamp: gs, Access: Write}
	runTok := func(t *testing.T, e *env) []byte {
		return must(t)(e.is.FilesToken("alice", inode, blockID, gs, 4, Write|Read))
	}
	attacks := []attack{
		{name: "tampered payload", token: func(t *testing.T, e *env) []byte {
			h, p, s := splitJWT(t, fileTok(t, e))
			p["ino"] = 8
			return joinJWT(t, h, p, s)
		}, want: Request{Inode: 8, Access: Read}, kind: errs.Unauthenticated, reason: "bad signature"},
		{name: "tampered access claim", token: func(t *testing.T, e *env) []byte {
			h, p, s := splitJWT(t, fileTok(t, e))
			p["acc"] = "rw"
			return joinJWT(t, h, p, s)
		}, want: readReq, kind: errs.Unauthenticated, reason: "bad signature"},
		{name: "tampered signature", token: func(t *testing.T, e *env) []byte {
			h, p, s := splitJWT(t, fileTok(t, e))
			s[10] ^= 0x01
			return joinJWT(t, h, p, s)
		}, want: readReq, kind: errs.Unauthenticated, reason: "bad signature"},
		{name: "truncated signature", token: func(t *testing.T, e *env) []byte {
			h, p, s := splitJWT(t, fileTok(t, e))
			return joinJWT(t, h, p, s[:32])
		}, want: readReq, kind: errs.Unauthenticated, reason: "bad signature"},
		{name: "alg none", token: func(t *testing.T, e *env) []byte {
			h, p, _ := splitJWT(t, fileTok(t, e))
			h["alg"] = "none"
			return joinJWT(t, h, p, nil)
		}, want: readReq, kind: errs.Unauthenticated, reason: "algorithm not allowed"},
		{name: "alg none via library", token: func(t *testing.T, e *env) []byte {
			_, p, _ := splitJWT(t, fileTok(t, e))
			tk := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims(p))
			tk.Header["kid"] = e.km.Current().KID
			s, err := tk.SignedString(jwt.UnsafeAllowNoneSignatureType)
			if err != nil {
				t.Fatal(err)
			}
			return []byte(s)
		}, want: readReq, kind: errs.Unauthenticated, reason: "algorithm not allowed"},
		{name: "HS256 with public key as secret", token: func(t *testing.T, e *env) []byte {
			_, p, _ := splitJWT(t, fileTok(t, e))
			tk := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims(p))
			tk.Header["kid"] = e.km.Current().KID
			s, err := tk.SignedString([]byte(e.km.Current().Public))
			if err != nil {
				t.Fatal(err)
			}
			return []byte(s)
		}, want: readReq, kind: errs.Unauthenticated, reason: "algorithm not allowed"},
		{name: "unknown kid", token: func(t *testing.T, e *env) []byte {
			kp, err := GenerateKeyPair("rogue", e.clock.Now(), time.Hour, 10*time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			other, err := NewIssuer(e.cfg, staticKeys{kp}, nil)
			if err != nil {
				t.Fatal(err)
			}
			return must(t)(other.FileToken("alice", inode, Read))
		}, want: readReq, kind: errs.Unauthenticated, reason: "unknown key"},
		{name: "known kid, other key's signature", token: func(t *testing.T, e *env) []byte {
			kp, err := GenerateKeyPair("", e.clock.Now(), time.Hour, 10*time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			kp.KID = e.km.Current().KID // claim to be the real key
			other, err := NewIssuer(e.cfg, staticKeys{kp}, nil)
			if err != nil {
				t.Fatal(err)
			}
			return must(t)(other.FileToken("alice", inode, Read))
		}, want: readReq, kind: errs.Unauthenticated, reason: "bad signature"},
		{name: "no kid", token: func(t *testing.T, e *env) []byte {
			_, p, _ := splitJWT(t, fileTok(t, e))
			tk := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims(p))
			s, err := tk.SignedString(e.km.Current().Private)
			if err != nil {
				t.Fatal(err)
			}
			return []byte(s)
		}, want: readReq, kind: errs.Unauthenticated, reason: "unknown key"},
		{name: "expired", token: fileTok, at: 10*time.Minute + 31*time.Second,
			want: readReq, kind: errs.Unauthenticated, reason: "token expired"},
		{name: "not yet valid", token: fileTok, at: -32 * time.Second,
			want: readReq, kind: errs.Unauthenticated, reason: "token not yet valid"},
		{name: "another inode", token: fileTok, want: Request{Inode: inode + 1, Access: Read},
			kind: errs.Permission, reason: "wrong inode"},
		{name: "read token used to write", token: fileTok, want: Request{Inode: inode, BlockID: blockID, GenStamp: gs, Access: Write},
			kind: errs.Permission, reason: "wrong access mode"},
		{name: "read token used to copy", token: fileTok, want: Request{Inode: inode, Access: Copy},
			kind: errs.Permission, reason: "wrong access mode"},
		{name: "write token for another block", token: writeTok, want: Request{Inode: inode, BlockID: blockID + 1, GenStamp: gs, Access: Write},
			kind: errs.Permission, reason: "wrong block"},
		{name: "write token with stale genstamp", token: writeTok, want: Request{Inode: inode, BlockID: blockID, GenStamp: gs + 1, Access: Write},
			kind: errs.Permission, reason: "generation stamp"},
		{name: "write token for another inode", token: writeTok, want: Request{Inode: inode + 1, BlockID: blockID, GenStamp: gs, Access: Write},
			kind: errs.Permission, reason: "wrong inode"},
		{name: "write token used to read", token: writeTok, want: Request{Inode: inode, BlockID: blockID, Access: Read},
			kind: errs.Permission, reason: "wrong access mode"},
		{name: "removed key", token: func(t *testing.T, e *env) []byte {
			tok := fileTok(t, e)
			if _, err := e.v.Verify(tok, readReq); err != nil { // cached first, when the cache is on
				t.Fatal(err)
			}
			e.ks.Remove(e.km.Current().KID)
			return tok
		}, want: readReq, kind: errs.Unauthenticated, reason: "unknown key"},
		{name: "garbage", token: func(*testing.T, *env) []byte { return []byte("not.a.jwt-at-all") },
			want: readReq, kind: errs.Unauthenticated, reason: "malformed token"},
		{name: "garbage one segment", token: func(*testing.T, *env) []byte { return []byte("\x00\xff garbage") },
			want: readReq, kind: errs.Unauthenticated, reason: "malformed token"},
		{name: "empty", token: func(*testing.T, *env) []byte { return nil },
			want: readReq, kind: errs.Unauthenticated, reason: "missing token"},
		{name: "1 MiB token", token: func(t *testing.T, e *env) []byte {
			h, p, s := splitJWT(t, fileTok(t, e))
			p["pad"] = strings.Repeat("A", 1<<20)
			return joinJWT(t, h, p, s)
		}, want: readReq, kind: errs.Unauthenticated, reason: "token too large"},
		{name: "signed but missing ino", token: func(t *testing.T, e *env) []byte {
			_, p, _ := splitJWT(t, fileTok(t, e))
			delete(p, "ino")
			return signMap(t, e.km.Current(), p)
		}, want: readReq, kind: errs.Unauthenticated, reason: "malformed claims"},
		{name: "signed write token without block", token: func(t *testing.T, e *env) []byte {
			_, p, _ := splitJWT(t, fileTok(t, e))
			p["acc"] = "w"
			return signMap(t, e.km.Current(), p)
		}, want: writeReq, kind: errs.Unauthenticated, reason: "malformed claims"},
		{name: "signed, exp beyond key window", token: func(t *testing.T, e *env) []byte {
			_, p, _ := splitJWT(t, fileTok(t, e))
			p["exp"] = e.km.Current().NotAfter.Add(time.Hour).Unix()
			return signMap(t, e.km.Current(), p)
		}, want: readReq, kind: errs.Unauthenticated, reason: "validity window"},
		// A run of 4 files (bn): file i is inode+i with block blockID+i.
		{name: "run token, block past the run", token: runTok, want: Request{Inode: inode + 4, BlockID: blockID + 4, GenStamp: gs, Access: Write},
			kind: errs.Permission, reason: "wrong inode"},
		{name: "run token, block before the run", token: runTok, want: Request{Inode: inode - 1, BlockID: blockID - 1, GenStamp: gs, Access: Write},
			kind: errs.Permission, reason: "wrong inode"},
		{name: "run token, block of one file with another's inode", token: runTok, want: Request{Inode: inode + 1, BlockID: blockID + 2, GenStamp: gs, Access: Write},
			kind: errs.Permission, reason: "wrong inode"},
		{name: "run token, another stamp", token: runTok, want: Request{Inode: inode + 2, BlockID: blockID + 2, GenStamp: gs + 1, Access: Write},
			kind: errs.Permission, reason: "wrong block"},
		{name: "signed bn past its bound", token: func(t *testing.T, e *env) []byte {
			_, p, _ := splitJWT(t, runTok(t, e))
			p["bn"] = MaxFiles + 1
			return signMap(t, e.km.Current(), p)
		}, want: writeReq, kind: errs.Unauthenticated, reason: "malformed claims"},
		{name: "signed bn wrapping the block ids", token: func(t *testing.T, e *env) []byte {
			_, p, _ := splitJWT(t, runTok(t, e))
			p["blk"] = uint64(1<<64 - 2)
			return signMap(t, e.km.Current(), p)
		}, want: writeReq, kind: errs.Unauthenticated, reason: "malformed claims"},
		{name: "signed bn on a file token", token: func(t *testing.T, e *env) []byte {
			_, p, _ := splitJWT(t, fileTok(t, e))
			p["bn"] = 2
			return signMap(t, e.km.Current(), p)
		}, want: readReq, kind: errs.Unauthenticated, reason: "malformed claims"},
	}
	for _, cache := range []bool{false, true} {
		for _, a := range attacks {
			t.Run(fmt.Sprintf("cache=%v/%s", cache, a.name), func(t *testing.T) {
				e := newEnv(t, func(c *Config) { c.VerifyCache = cache })
				e.clock.Add(2 * time.Minute) // not at the key's NotBefore
				tok := a.token(t, e)
				if cache {
					// Prime the cache with the genuine token so an attack
					// that reuses its bytes meets the hit path.
					_, _ = e.v.Verify(tok, a.want)
				}
				e.clock.Add(a.at)
				for i := 0; i < 2; i++ { // second round hits the cache if anything was cached
					_, err := e.v.Verify(tok, a.want)
					wantErr(t, err, a.kind, a.reason)
				}
			})
		}
	}
}

type staticKeys struct{ kp *KeyPair }

func (s staticKeys) Current() *KeyPair { return s.kp }

func signMap(t *testing.T, kp *KeyPair, p map[string]any) []byte {
	t.Helper()
	tk := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims(p))
	tk.Header["kid"] = kp.KID
	s, err := tk.SignedString(kp.Private)
	if err != nil {
		t.Fatal(err)
	}
	return []byte(s)
}

func TestVerifyAccepts(t *testing.T) {
	cases := []struct {
		name  string
		token func(t *testing.T, e *env) []byte
		want  Request
		check func(t *testing.T, c Claims)
	}{
		{"file read", func(t *testing.T, e *env) []byte { return must(t)(e.is.FileToken("alice", inode, Read)) }, readReq,
			func(t *testing.T, c Claims) {
				if c.User != "alice" || c.Inode != inode || c.Access != Read || c.HasBlock {
					t.Fatalf("claims %+v", c)
				}
			}},
		{"file read+copy for copy", func(t *testing.T, e *env) []byte { return must(t)(e.is.FileToken("dn", inode, Read|Copy)) },
			Request{Inode: inode, Access: Copy}, nil},
		{"per-block read, any genstamp", func(t *testing.T, e *env) []byte { return must(t)(e.is.BlockToken("alice", inode, blockID, gs, Read)) },
			Request{Inode: inode, BlockID: blockID, GenStamp: gs + 3, Access: Read}, nil},
		{"write", func(t *testing.T, e *env) []byte { return must(t)(e.is.WriteToken("alice", inode, blockID, gs)) },
			Request{Inode: inode, BlockID: blockID, GenStamp: gs, Access: Write},
			func(t *testing.T, c Claims) {
				if !c.HasBlock || c.BlockID != blockID || c.GenStamp != gs || c.Access != Write || c.Files != 1 {
					t.Fatalf("claims %+v", c)
				}
			}},
		{"a run's first file", func(t *testing.T, e *env) []byte {
			return must(t)(e.is.FilesToken("alice", inode, blockID, gs, 4, Write))
		},
			Request{Inode: inode, BlockID: blockID, GenStamp: gs, Access: Write}, nil},
		{"a run's last file", func(t *testing.T, e *env) []byte {
			return must(t)(e.is.FilesToken("alice", inode, blockID, gs, 4, Write|Read))
		},
			Request{Inode: inode + 3, BlockID: blockID + 3, GenStamp: gs, Access: Write},
			func(t *testing.T, c Claims) {
				if c.Files != 4 || c.BlockID != blockID || c.Inode != inode {
					t.Fatalf("claims %+v", c)
				}
			}},
		{"a run's file read back", func(t *testing.T, e *env) []byte {
			return must(t)(e.is.FilesToken("alice", inode, blockID, gs, 4, Write|Read))
		},
			Request{Inode: inode + 2, BlockID: blockID + 2, Access: Read}, nil},
	}
	for _, cache := range []bool{false, true} {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("cache=%v/%s", cache, tc.name), func(t *testing.T) {
				e := newEnv(t, func(c *Config) { c.VerifyCache = cache })
				tok := tc.token(t, e)
				for i := 0; i < 2; i++ {
					c, err := e.v.Verify(tok, tc.want)
					if err != nil {
						t.Fatal(err)
					}
					if c.KID != e.km.Current().KID {
						t.Fatalf("kid %q", c.KID)
					}
					if tc.check != nil {
						tc.check(t, c)
					}
				}
			})
		}
	}
}

func TestClockSkew(t *testing.T) {
	cases := []struct {
		name string
		at   time.Duration // from issue time
		ok   bool
	}{
		{"just before exp", 10*time.Minute - time.Second, true},
		{"after exp within skew", 10*time.Minute + 29*time.Second, true},
		{"after exp beyond skew", 10*time.Minute + 30*time.Second, false},
		{"before nbf within skew", -29 * time.Second, true},
		{"before nbf beyond skew", -31 * time.Second, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			e.clock.Add(time.Minute)
			tok := must(t)(e.is.FileToken("alice", inode, Read))
			e.clock.Add(tc.at)
			_, err := e.v.Verify(tok, readReq)
			if (err == nil) != tc.ok {
				t.Fatalf("err=%v, want ok=%v", err, tc.ok)
			}
		})
	}
}

// TestVerifierCacheHitEnforcesClaims: a cached token skips only the
// signature; scope and expiry are checked on every hit.
func TestVerifierCacheHitEnforcesClaims(t *testing.T) {
	e := newEnv(t, nil)
	tok := must(t)(e.is.FileToken("alice", inode, Read))
	if _, err := e.v.Verify(tok, readReq); err != nil {
		t.Fatal(err)
	}
	if e.v.CacheLen() != 1 {
		t.Fatalf("cache len %d, want 1", e.v.CacheLen())
	}
	steps := []struct {
		name   string
		at     time.Duration
		want   Request
		kind   errs.Kind
		reason string
	}{
		{"hit ok", 0, readReq, 0, ""},
		{"hit wrong inode", 0, Request{Inode: 99, Access: Read}, errs.Permission, "wrong inode"},
		{"hit wrong mode", 0, Request{Inode: inode, BlockID: 1, Access: Write}, errs.Permission, "wrong access mode"},
		{"hit expired", 11 * time.Minute, readReq, errs.Unauthenticated, "token expired"},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			e.clock.Set(epoch.Add(s.at))
			hits := counterValue(t, e.v.m.hits)
			_, err := e.v.Verify(tok, s.want)
			if s.reason == "" {
				if err != nil {
					t.Fatal(err)
				}
			} else {
				wantErr(t, err, s.kind, s.reason)
			}
			if got := counterValue(t, e.v.m.hits); got != hits+1 {
				t.Fatalf("cache hits %v -> %v, want a hit", hits, got)
			}
		})
	}
	if e.v.CacheLen() != 0 {
		t.Fatalf("expired token still cached")
	}
}

func TestVerifyCacheBound(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.VerifyCacheSize = 8; c.Mode = PerRequest })
	for i := uint64(0); i < 100; i++ {
		tok := must(t)(e.is.FileToken("alice", i, Read))
		if _, err := e.v.Verify(tok, Request{Inode: i, Access: Read}); err != nil {
			t.Fatal(err)
		}
		if n := e.v.CacheLen(); n > 8 {
			t.Fatalf("cache len %d > 8", n)
		}
	}
}

// TestConcurrentVerify runs verifications, key-set changes and issuing in
// parallel; run with -race.
func TestConcurrentVerify(t *testing.T) {
	for _, cache := range []bool{false, true} {
		t.Run(fmt.Sprintf("cache=%v", cache), func(t *testing.T) {
			e := newEnv(t, func(c *Config) { c.VerifyCache = cache; c.VerifyCacheSize = 64 })
			toks := make([][]byte, 16)
			for i := range toks {
				toks[i] = must(t)(e.is.FileToken("alice", uint64(i), Read))
			}
			var wg sync.WaitGroup
			for g := 0; g < 8; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < 200; i++ {
						n := (g + i) % len(toks)
						if _, err := e.v.Verify(toks[n], Request{Inode: uint64(n), Access: Read}); err != nil {
							t.Error(err)
							return
						}
						if _, err := e.v.Verify(toks[n], Request{Inode: uint64(n + 1), Access: Read}); !errs.Is(err, errs.Permission) {
							t.Errorf("wrong inode: %v", err)
							return
						}
						if _, err := e.is.FileToken("bob", uint64(i%5), Read); err != nil {
							t.Error(err)
							return
						}
					}
				}()
			}
			wg.Add(1)
			go func() { // churn unrelated keys
				defer wg.Done()
				for i := 0; i < 50; i++ {
					pk := PublicKey{KID: fmt.Sprintf("x-%d", i), Key: make(ed25519.PublicKey, 32), NotBefore: epoch, NotAfter: epoch.Add(time.Hour)}
					if err := e.ks.Add(pk); err != nil {
						t.Error(err)
					}
					e.ks.Remove(pk.KID)
					e.ks.Prune(epoch)
				}
			}()
			wg.Wait()
		})
	}
}

func TestMetricsCountRejections(t *testing.T) {
	e := newEnv(t, nil)
	tok := must(t)(e.is.FileToken("alice", inode, Read))
	_, _ = e.v.Verify(tok, Request{Inode: 1, Access: Read})
	_, _ = e.v.Verify([]byte("x.y.z"), readReq)
	if got := counterValue(t, e.v.m.byReason[reasonWrongInode]); got != 1 {
		t.Fatalf("wrong_inode = %v", got)
	}
	if got := counterValue(t, e.v.m.byReason[reasonMalformed]); got != 1 {
		t.Fatalf("malformed = %v", got)
	}
	if got := counterValue(t, e.v.m.checks); got != 2 {
		t.Fatalf("checks = %v", got)
	}
}

func TestErrorsDoNotLeakKeys(t *testing.T) {
	e := newEnv(t, nil)
	kp := e.km.Current()
	tok := must(t)(e.is.FileToken("alice", inode, Read))
	h, p, s := splitJWT(t, tok)
	s[0] ^= 1
	_, err := e.v.Verify(joinJWT(t, h, p, s), readReq)
	for _, secret := range [][]byte{kp.Private, kp.Public, kp.Private.Seed()} {
		for _, enc := range []string{string(secret), fmt.Sprintf("%x", secret), b64.EncodeToString(secret)} {
			if strings.Contains(err.Error(), enc) || strings.Contains(fmt.Sprintf("%v %#v %s", kp, kp, kp), enc) {
				t.Fatal("key material in error or KeyPair formatting")
			}
		}
	}
	if !bytes.Contains([]byte(fmt.Sprint(kp)), []byte(kp.KID)) {
		t.Fatal("KeyPair.String should name the kid")
	}
	_ = json.Valid
}

// TestRememberedTokenIsAHit: a token its own namenode remembers right
// after signing it verifies from the cache, with every claim still
// checked against the request; an unsigned token handed to Verify alone
// is still refused.
func TestRememberedTokenIsAHit(t *testing.T) {
	e := newEnv(t, nil)
	tok := must(t)(e.is.FilesToken("alice", inode, blockID, gs, 4, Write))
	if err := e.v.Remember(tok); err != nil {
		t.Fatal(err)
	}
	hits, misses := counterValue(t, e.v.m.hits), counterValue(t, e.v.m.misses)
	if _, err := e.v.Verify(tok, Request{Inode: inode + 2, BlockID: blockID + 2, GenStamp: gs, Access: Write}); err != nil {
		t.Fatal(err)
	}
	_, err := e.v.Verify(tok, Request{Inode: inode + 1, BlockID: blockID + 2, GenStamp: gs, Access: Write})
	wantErr(t, err, errs.Permission, "wrong inode")
	if h, m := counterValue(t, e.v.m.hits), counterValue(t, e.v.m.misses); h != hits+2 || m != misses {
		t.Fatalf("hits %v -> %v, misses %v -> %v: want two hits and no miss", hits, h, misses, m)
	}
	h, p, s := splitJWT(t, tok)
	p["sub"] = "mallory"
	_, err = e.v.Verify(joinJWT(t, h, p, s), Request{Inode: inode, BlockID: blockID, GenStamp: gs, Access: Write})
	wantErr(t, err, errs.Unauthenticated, "bad signature")
}
