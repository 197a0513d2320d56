// Package ratelimit holds one token bucket (golang.org/x/time/rate) per
// key, such as a user, in a sharded map of bounded size: the bookkeeping
// behind limits such as the namenode's per-user write rate.
package ratelimit

import (
	"fmt"
	"hash/maphash"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/blockfs/blockfs/errs"
)

// shards spreads the keys over this many maps, each with its own mutex, so
// that callers of different keys rarely contend; no lock covers them all.
const shards = 64

// Config configures a Limiter.
type Config struct {
	// Rate is the tokens each key earns per second; 0 turns the limiter
	// off (Allow admits everything and tracks nothing).
	Rate float64
	// Burst is the most tokens a key may save up (at least 1).
	Burst int
	// MaxKeys bounds the keys tracked at once. A new key past it first
	// evicts the idle keys of its shard (those whose bucket has refilled,
	// which lose nothing by being forgotten), else the least recently
	// used one there.
	MaxKeys int
}

// Limiter is a set of per-key token buckets. Its methods are safe for
// concurrent use.
type Limiter struct {
	cfg      Config
	perShard int
	refill   time.Duration // time an empty bucket takes to fill
	seed     maphash.Seed
	shards   [shards]shard
}

type shard struct {
	mu sync.Mutex
	m  map[string]*entry
}

type entry struct {
	lim  *rate.Limiter
	last time.Time // last Allow, under the shard's mutex
}

// New returns a Limiter for cfg; cfg.Rate 0 gives one that admits all.
func New(cfg Config) *Limiter {
	cfg.Burst = max(cfg.Burst, 1)
	l := &Limiter{cfg: cfg, perShard: max(cfg.MaxKeys/shards, 1), seed: maphash.MakeSeed()}
	if cfg.Rate > 0 {
		l.refill = time.Duration(min(float64(cfg.Burst)/cfg.Rate*float64(time.Second), math.MaxInt64/2))
	}
	for i := range l.shards {
		l.shards[i].m = map[string]*entry{}
	}
	return l
}

// Enabled reports whether the limiter limits anything.
func (l *Limiter) Enabled() bool { return l != nil && l.cfg.Rate > 0 }

// Allow takes one token of key's bucket at now and returns 0, or takes
// nothing and returns how long until a token will be there (the retry
// hint of a refusal, always positive).
func (l *Limiter) Allow(key string, now time.Time) time.Duration { return l.AllowN(key, 1, now) }

// AllowN is Allow for n tokens at once (a call that stands for n
// operations): all of them or none. n <= 0 takes nothing; n above the
// burst never fits, and the hint is then the longest there is.
func (l *Limiter) AllowN(key string, n int, now time.Time) time.Duration {
	if !l.Enabled() || n <= 0 {
		return 0
	}
	s := &l.shards[maphash.String(l.seed, key)%shards]
	s.mu.Lock()
	e := s.m[key]
	if e == nil {
		if len(s.m) >= l.perShard {
			l.evict(s, now)
		}
		e = &entry{lim: rate.NewLimiter(rate.Limit(l.cfg.Rate), l.cfg.Burst)}
		s.m[key] = e
	}
	e.last = now
	// Reserve and give back under the lock: a cancel after another call's
	// reservation would hand back a token that call's reservation already
	// counted on, and a burst of concurrent calls would get past Burst.
	defer s.mu.Unlock()
	r := e.lim.ReserveN(now, n)
	if !r.OK() {
		return time.Duration(math.MaxInt64)
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now) // a refused call spends no token
		return d
	}
	return 0
}

// evict makes room in s (its mutex held): every key whose bucket has
// refilled since its last call, or if there is none, the least recently
// used key.
func (l *Limiter) evict(s *shard, now time.Time) {
	var oldest string
	var oldestAt time.Time
	for k, e := range s.m {
		if now.Sub(e.last) >= l.refill {
			delete(s.m, k)
			continue
		}
		if oldest == "" || e.last.Before(oldestAt) {
			oldest, oldestAt = k, e.last
		}
	}
	if len(s.m) >= l.perShard {
		delete(s.m, oldest)
	}
}

// Len returns the number of keys tracked.
func (l *Limiter) Len() int {
	if l == nil {
		return 0
	}
	n := 0
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		n += len(s.m)
		s.mu.Unlock()
	}
	return n
}

// Admit is Allow at the current time as an error: nil, or an Exhausted
// error for op that carries the retry hint (errs.Error.RetryAfter, sent
// as a google.rpc.RetryInfo detail) and says it in its message.
func (l *Limiter) Admit(key, op string) error { return l.AdmitN(key, 1, op) }

// AdmitN is AllowN at the current time as Admit's error.
func (l *Limiter) AdmitN(key string, n int, op string) error {
	d := l.AllowN(key, n, time.Now())
	if d == 0 {
		return nil
	}
	return &errs.Error{Kind: errs.Exhausted, Op: op, RetryAfter: d,
		Msg: fmt.Sprintf("%s is over the write rate limit (%g/s, burst %d): retry after %v", key, l.cfg.Rate, l.cfg.Burst, d.Round(time.Millisecond))}
}
