package security

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// TestLRUCacheOrder: one shard, so the order is the whole cache's. Each
// step is an operation and the keys present afterwards.
func TestLRUCacheOrder(t *testing.T) {
	c := newLRUCache[*int](3, 1)
	vals := map[uint64]*int{}
	val := func(h uint64) *int {
		if vals[h] == nil {
			v := int(h)
			vals[h] = &v
		}
		return vals[h]
	}
	steps := []struct {
		op      string
		h       uint64
		evicted bool
		present []uint64
		absent  []uint64
	}{
		{"put", 1, false, []uint64{1}, nil},
		{"put", 2, false, []uint64{1, 2}, nil},
		{"put", 3, false, []uint64{1, 2, 3}, nil},
		{"get", 1, false, []uint64{1, 2, 3}, nil},
		{"put", 4, true, []uint64{1, 3, 4}, []uint64{2}}, // 2 was least recently used
		{"put", 5, true, []uint64{1, 4, 5}, []uint64{3}},
		{"remove", 4, false, []uint64{1, 5}, []uint64{4}},
		{"put", 6, false, []uint64{1, 5, 6}, nil},
	}
	now := int64(0)
	for i, s := range steps {
		now += promoteEvery // every hit is due a move to the front
		switch s.op {
		case "put":
			if _, ev := c.put(s.h, val(s.h), now, nil); ev != s.evicted {
				t.Fatalf("step %d: put %d evicted=%v, want %v", i, s.h, ev, s.evicted)
			}
		case "get":
			if v, ok := c.get(s.h, now); !ok || v != val(s.h) {
				t.Fatalf("step %d: get %d missed", i, s.h)
			}
		case "remove":
			c.remove(s.h, val(s.h))
		}
		for _, h := range s.present {
			if _, ok := c.shard(h).peek(h); !ok {
				t.Fatalf("step %d: %d missing", i, h)
			}
		}
		for _, h := range s.absent {
			if _, ok := c.shard(h).peek(h); ok {
				t.Fatalf("step %d: %d still cached", i, h)
			}
		}
		if c.len() != len(s.present) {
			t.Fatalf("step %d: len %d, want %d", i, c.len(), len(s.present))
		}
	}
	// remove leaves a value that replaced the one named.
	other := 99
	c.put(1, &other, now, nil)
	c.remove(1, val(1))
	if v, ok := c.get(1, now); !ok || v != &other {
		t.Fatal("remove dropped a newer value")
	}
	// keep decides whether put replaces.
	if got, _ := c.put(1, val(1), now, func(old, v *int) bool { return true }); got != &other {
		t.Fatal("put replaced a value keep asked to keep")
	}
}

// TestLRUCachePromotionGrain: a hit within promoteEvery of the entry's
// last move leaves the order alone; a later one moves it to the front.
func TestLRUCachePromotionGrain(t *testing.T) {
	for _, tc := range []struct {
		name    string
		hitAt   int64 // after the puts at 0
		evicted uint64
	}{
		{"hit too soon: 1 stays oldest", promoteEvery - 1, 1},
		{"hit after the grain: 2 is oldest", promoteEvery, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newLRUCache[*int](2, 1)
			v := 0
			c.put(1, &v, 0, nil)
			c.put(2, &v, 0, nil)
			c.get(1, tc.hitAt)
			c.put(3, &v, tc.hitAt, nil)
			if _, ok := c.shard(tc.evicted).peek(tc.evicted); ok {
				t.Fatalf("%d still cached", tc.evicted)
			}
		})
	}
}

// TestLRUCacheBound: however many distinct keys go in, the cache holds at
// most size entries, and a full cache stays full.
func TestLRUCacheBound(t *testing.T) {
	for _, tc := range []struct{ size, maxShards int }{{1, 16}, {7, 16}, {100, 16}, {100, 64}, {4096, 64}} {
		t.Run(fmt.Sprintf("size=%d/shards<=%d", tc.size, tc.maxShards), func(t *testing.T) {
			c := newLRUCache[*int](tc.size, tc.maxShards)
			n := len(c.shards)
			v := 0
			evictions := 0
			const puts = 20000
			for i := uint64(0); i < puts; i++ {
				if _, ev := c.put(i*0x9e3779b97f4a7c15, &v, int64(i), nil); ev {
					evictions++
				}
				if i%997 == 0 && c.len() > tc.size {
					t.Fatalf("len %d > %d", c.len(), tc.size)
				}
			}
			full := n * (tc.size / n)
			if c.len() != full || evictions != puts-full {
				t.Fatalf("len %d evictions %d; want %d and %d", c.len(), evictions, full, puts-full)
			}
		})
	}
}

// TestCacheCountersMove: the hit, miss and eviction counters of both
// caches follow a scripted sequence (cache size 1: one entry, one shard).
func TestCacheCountersMove(t *testing.T) {
	type counts struct{ hits, misses, evictions float64 }
	type side struct {
		name string
		do   func(t *testing.T, e *env, toks map[string][]byte, user string, ino uint64)
		got  func(t *testing.T, e *env) counts
	}
	sides := []side{
		{"issuer", func(t *testing.T, e *env, _ map[string][]byte, user string, ino uint64) {
			e.seen(user, ino, Read)
			must(t)(e.is.FileToken(user, ino, Read))
		}, func(t *testing.T, e *env) counts {
			return counts{counterValue(t, e.is.m.hits), counterValue(t, e.is.m.misses), counterValue(t, e.is.m.evictions)}
		}},
		{"verifier", func(t *testing.T, e *env, toks map[string][]byte, user string, ino uint64) {
			// The issuer is in per-request mode here, so each token is
			// signed afresh: keep one per (user, inode) to present again.
			k := user + "/" + fmt.Sprint(ino)
			if toks[k] == nil {
				toks[k] = must(t)(e.is.FileToken(user, ino, Read))
			}
			if _, err := e.v.Verify(toks[k], Request{Inode: ino, Access: Read}); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, e *env) counts {
			return counts{counterValue(t, e.v.m.hits), counterValue(t, e.v.m.misses), counterValue(t, e.v.m.evictions)}
		}},
	}
	steps := []struct {
		user string
		ino  uint64
		want counts
	}{
		{"alice", 1, counts{0, 1, 0}},
		{"alice", 1, counts{1, 1, 0}},
		{"bob", 1, counts{1, 2, 1}},
		{"bob", 1, counts{2, 2, 1}},
		{"alice", 1, counts{2, 3, 2}},
		{"alice", 2, counts{2, 4, 3}},
		{"alice", 2, counts{3, 4, 3}},
	}
	for _, s := range sides {
		t.Run(s.name, func(t *testing.T) {
			e := newEnv(t, func(c *Config) {
				c.CacheSize, c.VerifyCacheSize = 1, 1
				if s.name == "verifier" {
					c.Mode = PerRequest
				}
			})
			toks := map[string][]byte{}
			for i, st := range steps {
				s.do(t, e, toks, st.user, st.ino)
				if got := s.got(t, e); got != st.want {
					t.Fatalf("step %d (%s, %d): counters %+v, want %+v", i, st.user, st.ino, got, st.want)
				}
			}
		})
	}
}

// TestExpiredNotServed: an issuer entry past its reuse time is signed
// afresh, and a verified token past its expiry is refused and dropped, even
// though both are still in their caches.
func TestExpiredNotServed(t *testing.T) {
	e := newEnv(t, nil)
	e.seen("alice", inode, Read)
	tok := must(t)(e.is.FileToken("alice", inode, Read))
	if _, err := e.v.Verify(tok, readReq); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		at           time.Duration
		sameToken    bool
		issuerMisses float64
		verifyErr    string
	}{
		{time.Minute, true, 1, ""},
		{5*time.Minute + time.Second, false, 2, ""}, // past reuse (half of 10m), token still valid
		{10*time.Minute + 31*time.Second, false, 3, "token expired"},
	}
	for i, s := range steps {
		e.clock.Set(epoch.Add(s.at))
		got := must(t)(e.is.FileToken("alice", inode, Read))
		if (string(got) == string(tok)) != s.sameToken {
			t.Fatalf("step %d: same token %v, want %v", i, !s.sameToken, s.sameToken)
		}
		if m := counterValue(t, e.is.m.misses); m != s.issuerMisses {
			t.Fatalf("step %d: issuer misses %v, want %v", i, m, s.issuerMisses)
		}
		_, err := e.v.Verify(tok, readReq)
		if s.verifyErr == "" && err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if s.verifyErr != "" {
			if err == nil {
				t.Fatalf("step %d: expired token accepted", i)
			}
			if e.v.CacheLen() != 0 {
				t.Fatalf("step %d: expired token still cached", i)
			}
		}
	}
}

// TestLRUCacheModel runs random puts, gets and removes on a one-shard cache
// and on a plain slice kept in recency order, and checks after every step
// that both hold the same keys with the same values, in the same order.
func TestLRUCacheModel(t *testing.T) {
	const size = 5
	c := newLRUCache[*int](size, 1)
	sh := c.shard(0)
	type kv struct {
		h uint64
		v *int
	}
	var model []kv // most recent first
	find := func(h uint64) int {
		for i, e := range model {
			if e.h == h {
				return i
			}
		}
		return -1
	}
	rng := rand.New(rand.NewPCG(7, 7))
	now := int64(0)
	for step := range 20000 {
		now += promoteEvery
		h := rng.Uint64N(9)
		switch op := rng.IntN(3); op {
		case 0:
			v := new(int)
			_, ev := c.put(h, v, now, nil)
			wantEv := false
			if i := find(h); i >= 0 {
				model = append(model[:i], model[i+1:]...)
			} else if len(model) == size {
				model, wantEv = model[:size-1], true
			}
			model = append([]kv{{h, v}}, model...)
			if ev != wantEv {
				t.Fatalf("step %d: put %d evicted=%v, want %v", step, h, ev, wantEv)
			}
		case 1:
			v, ok := c.get(h, now)
			i := find(h)
			if ok != (i >= 0) || ok && v != model[i].v {
				t.Fatalf("step %d: get %d = %v, %v", step, h, v, ok)
			}
			if ok {
				e := model[i]
				model = append([]kv{e}, append(model[:i:i], model[i+1:]...)...)
			}
		case 2:
			if i := find(h); i >= 0 {
				if rng.IntN(2) == 0 {
					c.remove(h, new(int)) // not the value held: no effect
				} else {
					c.remove(h, model[i].v)
					model = append(model[:i], model[i+1:]...)
				}
			}
		}
		var got []kv
		for i := sh.head; i != none; i = sh.slots[i].next {
			got = append(got, kv{sh.slots[i].h, sh.slots[i].v})
		}
		if fmt.Sprint(got) != fmt.Sprint(model) || c.len() != len(model) {
			t.Fatalf("step %d: cache %v (len %d), model %v", step, got, c.len(), model)
		}
	}
}
