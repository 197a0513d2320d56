package security

import (
	"strconv"
	"testing"
	"time"
)

func benchEnv(b *testing.B, cache bool) *env {
	return newEnv(b, func(c *Config) { c.VerifyCache = cache; c.Mode = PerRequest })
}

// BenchmarkSign: one signed per-request token (what a cache miss costs).
func BenchmarkSign(b *testing.B) {
	e := benchEnv(b, false)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.is.FileToken("alice", inode, Read); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFileTokenCached: a cached-mode hit (no signature).
func BenchmarkFileTokenCached(b *testing.B) {
	e := newEnv(b, nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.is.FileToken("alice", inode, Read); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerify: full verification, cache off.
func BenchmarkVerify(b *testing.B) {
	e := benchEnv(b, false)
	tok := must(b)(e.is.FileToken("alice", inode, Read))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.v.Verify(tok, readReq); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyCached: verification of a token already in the cache.
func BenchmarkVerifyCached(b *testing.B) {
	e := benchEnv(b, true)
	tok := must(b)(e.is.FileToken("alice", inode, Read))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.v.Verify(tok, readReq); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyCachedParallel: cache hits from all Ps (no global lock).
func BenchmarkVerifyCachedParallel(b *testing.B) {
	e := benchEnv(b, true)
	toks := make([][]byte, 64)
	for i := range toks {
		toks[i] = must(b)(e.is.FileToken("alice", uint64(i), Read))
	}
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			n := i % len(toks)
			if _, err := e.v.Verify(toks[n], Request{Inode: uint64(n), Access: Read}); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
}

// BenchmarkFileTokenMissFull: cached mode with a full cache and every call
// a new (user, inode): a signature plus an O(1) eviction. Compare with
// BenchmarkSign.
func BenchmarkFileTokenMissFull(b *testing.B) {
	e := newEnv(b, func(c *Config) { c.CacheSize = 1024 })
	users := []string{"alice", "bob", "carol", "dave"}
	for i := range 4096 { // fill
		must(b)(e.is.FileToken(users[i%4], uint64(i), Read))
	}
	b.ReportAllocs()
	i := 4096
	for b.Loop() {
		if _, err := e.is.FileToken(users[i%4], uint64(i), Read); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkVerifyMissFull: verification with a full cache and a token not
// in it: the signature check plus an O(1) eviction. Compare with
// BenchmarkVerify.
func BenchmarkVerifyMissFull(b *testing.B) {
	e := newEnv(b, func(c *Config) { c.VerifyCacheSize = 256; c.Mode = PerRequest })
	toks := make([][]byte, 2048)
	for i := range toks {
		toks[i] = must(b)(e.is.FileToken("alice", uint64(i), Read))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		n := i % len(toks)
		if _, err := e.v.Verify(toks[n], Request{Inode: uint64(n), Access: Read}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkFileTokenCachedParallel: issuer cache hits from all Ps.
func BenchmarkFileTokenCachedParallel(b *testing.B) {
	e := newEnv(b, nil)
	for i := range 64 {
		must(b)(e.is.FileToken("alice", uint64(i), Read))
	}
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := e.is.FileToken("alice", uint64(i%64), Read); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
}

// BenchmarkFileTokenColdMiss compares a cached-mode miss with a per-request
// token, every call for a user never seen before (what a cold cache sees),
// both issuers signing with the same key. The cache starts full, so every
// miss also evicts. This machine is noisy: the two run in alternating turns
// of the same run, in ABBA order, and the figure to read is
// cached/per-request, which a miss that costs no more than a signature
// keeps at 1 or below.
func BenchmarkFileTokenColdMiss(b *testing.B) {
	e := newEnv(b, func(c *Config) { c.CacheSize = 4096 })
	pcfg := e.cfg
	pcfg.Mode = PerRequest
	per, err := NewIssuer(pcfg, e.km, nil)
	if err != nil {
		b.Fatal(err)
	}
	for i := range 2 * e.cfg.CacheSize {
		must(b)(e.is.FileToken("fill"+strconv.Itoa(i), inode, Read))
	}
	issuers := []*Issuer{e.is, per}
	var d [2]time.Duration
	user := 0
	const turn = 100
	b.ResetTimer()
	for k, done := 0, 0; done < b.N; k, done = k+1, done+turn {
		for j := range issuers {
			i := j ^ k&1
			t0 := time.Now()
			for range min(turn, b.N-done) {
				user++
				if _, err := issuers[i].FileToken("u"+strconv.Itoa(user), uint64(user), Read); err != nil {
					b.Fatal(err)
				}
			}
			d[i] += time.Since(t0)
		}
	}
	b.ReportMetric(float64(d[0].Nanoseconds())/float64(b.N), "cached-ns/call")
	b.ReportMetric(float64(d[1].Nanoseconds())/float64(b.N), "per-request-ns/call")
	b.ReportMetric(float64(d[0])/float64(d[1]), "cached/per-request")
}
