package security

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/blockfs/blockfs/errs"
)

func counterValue(t testing.TB, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// TestCachedModeReuse: the same bytes until ReuseFraction of the lifetime,
// then a freshly signed token.
func TestCachedModeReuse(t *testing.T) {
	e := newEnv(t, nil) // lifetime 10m, fraction 0.5
	e.seen("alice", inode, Read)
	first := must(t)(e.is.FileToken("alice", inode, Read))
	steps := []struct {
		at   time.Duration
		same bool
	}{
		{0, true},
		{time.Second, true},
		{4*time.Minute + 59*time.Second, true},
		{5 * time.Minute, false},
	}
	for _, s := range steps {
		t.Run(fmt.Sprint(s.at), func(t *testing.T) {
			e.clock.Set(epoch.Add(s.at))
			signed := counterValue(t, e.is.m.signedFile)
			tok := must(t)(e.is.FileToken("alice", inode, Read))
			if got := bytes.Equal(tok, first); got != s.same {
				t.Fatalf("same=%v, want %v", got, s.same)
			}
			if d := counterValue(t, e.is.m.signedFile) - signed; (d == 0) != s.same {
				t.Fatalf("signed %v tokens; hit should sign none, miss one", d)
			}
			if _, err := e.v.Verify(tok, readReq); err != nil {
				t.Fatal(err)
			}
		})
	}
	// The renewed token is itself reused.
	again := must(t)(e.is.FileToken("alice", inode, Read))
	e.clock.Add(time.Minute)
	if !bytes.Equal(again, must(t)(e.is.FileToken("alice", inode, Read))) {
		t.Fatal("renewed token not reused")
	}
}

func TestCacheKeyComponents(t *testing.T) {
	e := newEnv(t, nil)
	base := must(t)(e.is.FileToken("alice", inode, Read))
	cases := []struct {
		name string
		tok  func() []byte
	}{
		{"other user", func() []byte { return must(t)(e.is.FileToken("bob", inode, Read)) }},
		{"other inode", func() []byte { return must(t)(e.is.FileToken("alice", inode+1, Read)) }},
		{"other access", func() []byte { return must(t)(e.is.FileToken("alice", inode, Read|Copy)) }},
		{"after rotation", func() []byte { e.rotate(t); return must(t)(e.is.FileToken("alice", inode, Read)) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if bytes.Equal(c.tok(), base) {
				t.Fatal("same token for a different cache key")
			}
		})
	}
}

func TestIssuerLRUBound(t *testing.T) {
	for _, size := range []int{1, 3, 64, 100} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			e := newEnv(t, func(c *Config) { c.CacheSize = size })
			for i := uint64(0); i < 500; i++ {
				e.seen("alice", i, Read)
				must(t)(e.is.FileToken("alice", i, Read))
				if n := e.is.CacheLen(); n > size {
					t.Fatalf("cache len %d > %d", n, size)
				}
			}
			// The most recent entry is still cached.
			hits := counterValue(t, e.is.m.hits)
			must(t)(e.is.FileToken("alice", 499, Read))
			if counterValue(t, e.is.m.hits) != hits+1 {
				t.Fatal("most recently used entry was evicted")
			}
		})
	}
}

func TestLRUEvictsLeastRecentlyUsed(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.CacheSize = 1 })
	e.seen("alice", 1, Read)
	a := must(t)(e.is.FileToken("alice", 1, Read))
	e.seen("alice", 2, Read)
	must(t)(e.is.FileToken("alice", 2, Read))
	e.clock.Add(time.Second)
	if bytes.Equal(a, must(t)(e.is.FileToken("alice", 1, Read))) {
		t.Fatal("evicted entry was served")
	}
}

func TestPerBlockTokens(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Mode = PerBlock })
	seen := map[string]uint64{}
	for b := uint64(1); b <= 10; b++ {
		tok := must(t)(e.is.BlockToken("alice", inode, b, gs, Read))
		if prev, dup := seen[string(tok)]; dup {
			t.Fatalf("block %d and %d got the same token", prev, b)
		}
		seen[string(tok)] = b
		if _, err := e.v.Verify(tok, Request{Inode: inode, BlockID: b, Access: Read}); err != nil {
			t.Fatal(err)
		}
		_, err := e.v.Verify(tok, Request{Inode: inode, BlockID: b + 100, Access: Read})
		wantErr(t, err, errs.Permission, "wrong block")
	}
	_, err := e.is.FileToken("alice", inode, Read)
	wantErr(t, err, errs.Precondition, "per-block")
}

func TestPerRequestSignsEveryTime(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Mode = PerRequest })
	a := must(t)(e.is.FileToken("alice", inode, Read))
	e.clock.Add(time.Second)
	b := must(t)(e.is.FileToken("alice", inode, Read))
	if bytes.Equal(a, b) {
		t.Fatal("per-request reused a token")
	}
	if got := counterValue(t, e.is.m.signedFile); got != 2 {
		t.Fatalf("signed %v, want 2", got)
	}
	if e.is.CacheLen() != 0 {
		t.Fatal("per-request mode cached")
	}
}

func TestIssuerRejectsBadInput(t *testing.T) {
	e := newEnv(t, nil)
	cases := []struct {
		name string
		call func() error
		kind errs.Kind
	}{
		{"empty user", func() error { _, err := e.is.FileToken("", inode, Read); return err }, errs.Invalid},
		{"file write token", func() error { _, err := e.is.FileToken("a", inode, Write); return err }, errs.Invalid},
		{"no access", func() error { _, err := e.is.FileToken("a", inode, 0); return err }, errs.Invalid},
		{"block no access", func() error { _, err := e.is.BlockToken("a", inode, 1, 1, 0); return err }, errs.Invalid},
		{"no key", func() error {
			km, _ := NewKeyManager(e.cfg)
			is, _ := NewIssuer(e.cfg, km, nil)
			_, err := is.FileToken("a", inode, Read)
			return err
		}, errs.Unavailable},
		{"rotation overdue", func() error {
			e2 := newEnv(t, nil)
			e2.clock.Add(e2.cfg.KeyRotation + time.Second)
			_, err := e2.is.FileToken("a", inode, Read)
			return err
		}, errs.Unavailable},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.call(); errs.KindOf(err) != c.kind {
				t.Fatalf("err %v, want kind %v", err, c.kind)
			}
		})
	}
}

func TestIssuerMetricsRegistered(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := newEnv(t, nil)
	is, err := NewIssuer(e.cfg, e.km, reg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewIssuer(e.cfg, e.km, reg); err != nil { // second one shares collectors
		t.Fatal(err)
	}
	v, err := NewVerifier(e.cfg, e.ks, reg)
	if err != nil {
		t.Fatal(err)
	}
	tok := must(t)(is.FileToken("alice", inode, Read))
	must(t)(is.FileToken("alice", inode, Read))
	if _, err := v.Verify(tok, readReq); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, mf := range mfs {
		got[mf.GetName()] = true
	}
	for _, n := range []string{
		"blockfs_security_tokens_signed_total", "blockfs_security_token_cache_hits_total",
		"blockfs_security_token_cache_misses_total", "blockfs_security_token_sign_seconds",
		"blockfs_security_verify_checks_total", "blockfs_security_verify_cache_hits_total",
		"blockfs_security_verify_rejections_total", "blockfs_security_verify_cache_misses_total",
		"blockfs_security_token_cache_evictions_total", "blockfs_security_verify_cache_evictions_total",
	} {
		if !got[n] {
			t.Errorf("metric %s not gathered", n)
		}
	}
}

// TestDoorkeeper: the cache admits a key on its second miss, so a key asked
// for once signs as per-request mode does and caches nothing, and a flood
// of one-off keys leaves a hot entry cached.
func TestDoorkeeper(t *testing.T) {
	type want struct{ signed, hits float64 }
	cases := []struct {
		name    string
		size    int
		calls   func(e *env)
		want    want
		cached  int
		hotHits bool // ("hot", inode) is served from the cache afterwards
	}{
		{"one miss caches nothing", 64, func(e *env) {
			must(t)(e.is.FileToken("alice", inode, Read))
		}, want{1, 0}, 0, false},
		{"the second miss caches", 64, func(e *env) {
			must(t)(e.is.FileToken("alice", inode, Read))
			must(t)(e.is.FileToken("alice", inode, Read))
		}, want{2, 0}, 1, false},
		{"the third call hits", 64, func(e *env) {
			for range 3 {
				must(t)(e.is.FileToken("alice", inode, Read))
			}
		}, want{2, 1}, 1, false},
		{"one-off keys do not evict a hot one", 4, func(e *env) {
			must(t)(e.is.FileToken("hot", inode, Read))
			must(t)(e.is.FileToken("hot", inode, Read))
			for i := range uint64(1000) {
				must(t)(e.is.FileToken("once", i, Read))
			}
		}, want{1002, 0}, 1, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, func(cfg *Config) { cfg.CacheSize = c.size })
			c.calls(e)
			got := want{counterValue(t, e.is.m.signedFile), counterValue(t, e.is.m.hits)}
			if got != c.want || e.is.CacheLen() != c.cached {
				t.Fatalf("signed %v, hits %v, %d cached; want signed %v, hits %v, %d cached",
					got.signed, got.hits, e.is.CacheLen(), c.want.signed, c.want.hits, c.cached)
			}
			if c.hotHits {
				must(t)(e.is.FileToken("hot", inode, Read))
				if counterValue(t, e.is.m.hits) != c.want.hits+1 {
					t.Fatal("the hot entry was evicted by keys asked for once")
				}
			}
		})
	}
}
