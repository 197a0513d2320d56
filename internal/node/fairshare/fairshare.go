// Package fairshare favours light users when a server is loaded, after
// the manner of HDFS's FairCallQueue with its decaying scheduler and
// response-time backoff (the behaviour, not the code).
//
// What it schedules is writes: a write is a Raft commit on every
// namenode, and a read waits for the commits applied before it (its
// read index), so a few heavy writers slow every reader, while a read
// costs one namenode and is never refused. Every admitted write adds 1 to
// its user's score; scores decay, halving every Config.HalfLife, and a
// user's level is its share of the summed scores: level 0 below 1/8, 1
// below 1/4, 2 below 1/2, and 3 for the heaviest, as HDFS's four default
// priority levels. A user who only reads has no score and is at level 0.
// Every Window the scheduler folds the window's writes into the scores,
// notes the levels of the users that called (read or write) within
// Active, and reads how loaded the server is (Config.Load: by default the
// p99 of the Go runtime's goroutine scheduling latency over the window,
// which rises as soon as runnable work waits for a CPU). While the server
// is loaded and users of two levels are calling, every user heavier than
// the lightest caller is throttled: admitted at most Throttle x
// Config.Rate writes a second (a bucket of its own), a write past that
// backed off, refused with a retry hint. The throttle halves every loaded
// window and grows back by 1/64 every window that is not (additive
// increase, multiplicative decrease), so the heavy users' admitted rate
// settles where the load stops rising; a plain on/off backoff would only
// shorten the loaded windows, and a p99 is made of exactly those.
//
// A user alone, or users of one level (equal shares, such as many
// clients writing alike), is never backed off: there is no lighter
// caller to favour. Among writers a heavy user is backed off only while
// it is heavier: its backed-off calls add nothing to its score, which
// decays, so it gets about its fair share of the writes however hard it
// pushes.
//
// The hot path (Admit) takes one of 64 shard mutexes; there is no global
// lock. Tick takes each shard in turn.
package fairshare

import (
	"hash/maphash"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Levels is the number of priority levels; shares are the share of the
// summed scores at which a user drops to the next level.
const Levels = 4

var shares = [Levels - 1]float64{1.0 / 8, 1.0 / 4, 1.0 / 2}

// Window is how often the scheduler decays the scores, reads the load and
// moves the throttle; a user is calling (active) if it made a call within
// Active. Active is several windows: a flooder whose connections the
// refusal budget slows (internal/node/serve) may make no call for a
// window or two, and must not find the throttle lifted when it does.
const (
	Window = 100 * time.Millisecond
	Active = time.Second
)

const (
	shardCount  = 64
	minThrottle = 1.0 / 1024
	increase    = 1.0 / 64
	// minSamples is how many scheduling events a window needs for its
	// load to count: a nearly idle server's few wakeups say nothing.
	minSamples = 100
)

// Config configures a Scheduler.
type Config struct {
	// Busy is the load (Load's value, by default the p99 goroutine
	// scheduling latency of a window) above which the server counts as
	// loaded; 0 turns the scheduler off (Admit admits all, tracks nothing).
	Busy time.Duration
	// HalfLife is the time over which a score halves.
	HalfLife time.Duration
	// Rate is the writes a second a throttle of 1 stands for (the
	// per-user write rate limit, if there is one).
	Rate float64
	// MaxUsers bounds the users tracked at once; past it a shard forgets
	// its users of least score.
	MaxUsers int
	// Load, if set, replaces the runtime probe: the load over the window
	// since its last call and whether that window had enough samples.
	Load func() (time.Duration, bool)
}

// DefaultConfig is the namenode's default: loaded when the p99 scheduling
// latency passes 500µs, a half-life of 5 s.
func DefaultConfig() Config {
	return Config{Busy: 500 * time.Microsecond, HalfLife: 5 * time.Second, Rate: 1000, MaxUsers: 100000}
}

// Scheduler keeps the users' scores and decides which writes are backed
// off. Its methods are safe for concurrent use.
type Scheduler struct {
	cfg      Config
	decay    float64 // a score's factor per Window
	perShard int
	load     func() (time.Duration, bool)
	seed     maphash.Seed
	shards   [shardCount]shard

	total    atomic.Uint64 // float64 bits: the summed scores at the last tick
	from     atomic.Int32  // lowest level backed off; Levels: none
	throttle atomic.Uint64 // float64 bits: the throttle, (0, 1]
	ticking  sync.Mutex    // one Tick at a time
}

type shard struct {
	mu sync.Mutex
	m  map[string]*user
}

type user struct {
	score  float64   // decayed usage as of the last tick
	window float64   // usage admitted since
	last   time.Time // its last call
	tokens float64   // the throttle's bucket
	at     time.Time // when tokens was last brought up to date
}

// New returns a Scheduler for cfg.
func New(cfg Config) *Scheduler {
	s := &Scheduler{cfg: cfg, perShard: max(cfg.MaxUsers/shardCount, 1), load: cfg.Load, seed: maphash.MakeSeed()}
	if s.load == nil {
		s.load = newSchedProbe().read
	}
	if cfg.HalfLife > 0 {
		s.decay = math.Pow(0.5, float64(Window)/float64(cfg.HalfLife))
	}
	for i := range s.shards {
		s.shards[i].m = map[string]*user{}
	}
	s.from.Store(Levels)
	s.throttle.Store(math.Float64bits(1))
	return s
}

// Enabled reports whether the scheduler does anything.
func (s *Scheduler) Enabled() bool { return s != nil && s.cfg.Busy > 0 }

// level is the level of a score out of total.
func level(score, total float64) int {
	l := 0
	for l < len(shares) && total > 0 && score >= shares[l]*total {
		l++
	}
	return l
}

// Admit records a call of name at now (a write if write) and returns 0,
// or backs the write off: it adds nothing to the score, and the returned
// retry hint (positive) is when the user's throttle will admit one.
func (s *Scheduler) Admit(name string, write bool, now time.Time) time.Duration {
	if !s.Enabled() {
		return 0
	}
	sh := &s.shards[maphash.String(s.seed, name)%shardCount]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	u := sh.m[name]
	if u == nil {
		if len(sh.m) >= s.perShard {
			evict(sh)
		}
		u = &user{}
		sh.m[name] = u
	}
	u.last = now
	if !write {
		return 0
	}
	if from := int(s.from.Load()); from < Levels && level(u.score, math.Float64frombits(s.total.Load())) >= from {
		if d := u.take(now, s.Throttle()*s.cfg.Rate); d > 0 {
			return d
		}
	}
	u.window++
	return 0
}

// take takes a token of u's throttle bucket (rate r a second, a window's
// worth deep) or returns how long until there is one.
func (u *user) take(now time.Time, r float64) time.Duration {
	depth := max(1, r*Window.Seconds())
	u.tokens = min(depth, u.tokens+r*now.Sub(u.at).Seconds())
	u.at = now
	if u.tokens >= 1 {
		u.tokens--
		return 0
	}
	return max(time.Millisecond, time.Duration((1-u.tokens)/r*float64(time.Second)))
}

// evict makes room in sh (its mutex held) by forgetting its user of
// least score.
func evict(sh *shard) {
	var least string
	lowest := math.Inf(1)
	for k, u := range sh.m {
		if v := u.score + u.window; v < lowest {
			least, lowest = k, v
		}
	}
	delete(sh.m, least)
}

// Throttle returns the share of Config.Rate that backed-off users are
// admitted at: 1 when nothing is throttled.
func (s *Scheduler) Throttle() float64 { return math.Float64frombits(s.throttle.Load()) }

// BackedOffFrom returns the lowest level whose writes are throttled now,
// or Levels when none are.
func (s *Scheduler) BackedOffFrom() int { return int(s.from.Load()) }

// Tick ends a window: it folds the window's usage into the decayed
// scores, forgets users whose score has decayed to nothing, reads the
// load and moves the throttle. Run calls it every Window.
func (s *Scheduler) Tick(now time.Time) {
	if !s.Enabled() {
		return
	}
	s.ticking.Lock()
	defer s.ticking.Unlock()
	old := math.Float64frombits(s.total.Load())
	lightest, heaviest := Levels, -1
	total := 0.0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for k, u := range sh.m {
			active := now.Sub(u.last) < Active
			if active {
				l := level(u.score, old)
				lightest, heaviest = min(lightest, l), max(heaviest, l)
			}
			u.score = u.score*s.decay + u.window
			u.window = 0
			if u.score < 1e-3 && !active {
				delete(sh.m, k)
				continue
			}
			total += u.score
		}
		sh.mu.Unlock()
	}
	s.total.Store(math.Float64bits(total))
	load, ok := s.load()
	contested := lightest < heaviest
	f := s.Throttle()
	if contested && ok && load > s.cfg.Busy {
		f = max(minThrottle, f/2)
	} else {
		f = min(1, f+increase)
	}
	s.throttle.Store(math.Float64bits(f))
	from := Levels
	if contested && f < 1 {
		from = lightest + 1
	}
	s.from.Store(int32(from))
}

// Run calls Tick every Window until stop is closed.
func (s *Scheduler) Run(stop <-chan struct{}) {
	if !s.Enabled() {
		return
	}
	t := time.NewTicker(Window)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			s.Tick(now)
		}
	}
}

// Len returns the number of users tracked.
func (s *Scheduler) Len() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += len(sh.m)
		sh.mu.Unlock()
	}
	return n
}
