package security

import (
	"testing"
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
