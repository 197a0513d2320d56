package serve

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/stats"

	"github.com/blockfs/blockfs/security"
)

// A refusal is cheap to send but not free: the frames are read, the
// headers decoded, the caller authenticated and the status written. A
// client that ignores the retry hint and calls again at once (an attacker
// in a closed loop) keeps a core busy with refusals however cheap each one
// is, since a cheaper refusal only makes its loop spin faster. What stops
// it is backpressure, as Ceph's messenger throttle applies it: a
// connection whose calls keep being refused is read more slowly. Each
// connection has a budget of refusals (a token bucket of
// Limits.RefusalRate per second, Limits.RefusalBurst deep); a refusal past
// the budget puts the connection in debt, and while it is in debt every
// read of its socket first waits the debt off (at most maxReadDelay at a
// time). The client's next calls then sit in its own socket buffer,
// costing the server nothing, and its refusals arrive at about the
// budget's rate. The budget is kept per connection and per authenticated
// caller (a user, or a node), and a connection waits off the larger debt of
// the two, so opening more connections buys a flooder nothing. Other
// callers' connections are not slowed: one client's flood cannot spend
// another's share of the server.
//
// A well-behaved client honours the retry hint and is refused a few times
// a second at most: it never reaches the budget.

// maxReadDelay bounds one read's wait, so that a connection in debt still
// answers pings and its debt is re-read as it is paid; maxDebt bounds how
// far behind a connection may fall, so that a client that stops
// misbehaving is read at full speed again within that time.
const (
	maxReadDelay = 250 * time.Millisecond
	maxDebt      = 10 * time.Second
)

// penalized reports whether a call that ended with code counts against its
// connection's budget: the refusals a flood earns (over a limit, not
// allowed, not authenticated), not the failures of well-formed calls.
func penalized(c codes.Code) bool {
	switch c {
	case codes.ResourceExhausted, codes.PermissionDenied, codes.Unauthenticated:
		return true
	}
	return false
}

// penaltyBox holds the budget of every open connection of one server,
// keyed by the peer's address (unique among a listener's open
// connections).
type penaltyBox struct {
	rate    rate.Limit
	burst   int
	conns   sync.Map // remote address string -> *penalizedConn
	delayed prometheus.Counter

	// callers' budgets, by identity; only refusals touch it, so one mutex
	// does (no call that is admitted takes it).
	mu      sync.Mutex
	callers map[string]*rate.Limiter
}

// maxCallers bounds the callers' budgets kept at once; past it the ones
// out of debt are forgotten (they lose nothing), else all are.
const maxCallers = 4096

// caller returns the budget of the caller named key.
func (b *penaltyBox) caller(key string, now time.Time) *rate.Limiter {
	b.mu.Lock()
	defer b.mu.Unlock()
	if l := b.callers[key]; l != nil {
		return l
	}
	if len(b.callers) >= maxCallers {
		for k, l := range b.callers {
			if l.TokensAt(now) >= 0 {
				delete(b.callers, k)
			}
		}
		if len(b.callers) >= maxCallers {
			clear(b.callers)
		}
	}
	l := rate.NewLimiter(b.rate, b.burst)
	b.callers[key] = l
	return l
}

func newPenaltyBox(l Limits, reg prometheus.Registerer) *penaltyBox {
	b := &penaltyBox{rate: rate.Limit(l.RefusalRate), burst: max(l.RefusalBurst, 1), callers: map[string]*rate.Limiter{},
		delayed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "blockfs_grpc_refusal_delay_seconds_total",
			Help: "Time connections past their refusal budget (--grpc-refusal-rate) waited before the server read from them again.",
		})}
	if reg != nil {
		reg.MustRegister(b.delayed)
	}
	return b
}

func (b *penaltyBox) enabled() bool { return b != nil && b.rate > 0 }

// listen wraps lis so that its connections can be slowed.
func (b *penaltyBox) listen(lis net.Listener) net.Listener {
	if !b.enabled() {
		return lis
	}
	return &penaltyListener{Listener: lis, box: b}
}

type penaltyListener struct {
	net.Listener
	box *penaltyBox
}

func (l *penaltyListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	pc := &penalizedConn{Conn: c, box: l.box, lim: rate.NewLimiter(l.box.rate, l.box.burst), closed: make(chan struct{})}
	l.box.conns.Store(c.RemoteAddr().String(), pc)
	return pc, nil
}

// penalizedConn is one accepted connection and its refusal budget.
type penalizedConn struct {
	net.Conn
	box       *penaltyBox
	lim       *rate.Limiter                // safe for concurrent use
	caller    atomic.Pointer[rate.Limiter] // the budget of the last caller refused here
	delays    atomic.Int64                 // reads that waited
	closeOnce sync.Once
	closed    chan struct{}
	timer     *time.Timer // Read's, used by one goroutine at a time
}

// charge spends one refusal of the connection's budget and of its
// caller's (named by key; "" for one not identified), going into debt
// past them (never further than maxDebt).
func (c *penalizedConn) charge(key string, now time.Time) {
	spend(c.lim, c.box.rate, now)
	if key != "" {
		l := c.box.caller(key, now)
		c.caller.Store(l)
		spend(l, c.box.rate, now)
	}
}

func spend(l *rate.Limiter, r rate.Limit, now time.Time) {
	if l.TokensAt(now) > -float64(r)*maxDebt.Seconds() {
		l.ReserveN(now, 1)
	}
}

// debt is how long until the connection's budget and its caller's are
// both out of debt.
func (c *penalizedConn) debt(now time.Time) time.Duration {
	t := c.lim.TokensAt(now)
	if l := c.caller.Load(); l != nil {
		t = min(t, l.TokensAt(now))
	}
	if t >= 0 {
		return 0
	}
	return time.Duration(-t / float64(c.box.rate) * float64(time.Second))
}

func (c *penalizedConn) Read(p []byte) (int, error) {
	if d := c.debt(time.Now()); d > 0 {
		d = min(d, maxReadDelay)
		if c.timer == nil {
			c.timer = time.NewTimer(d)
		} else {
			c.timer.Reset(d)
		}
		select {
		case <-c.timer.C:
		case <-c.closed:
		}
		c.delays.Add(1)
		c.box.delayed.Add(d.Seconds())
	}
	return c.Conn.Read(p)
}

func (c *penalizedConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.box.conns.CompareAndDelete(c.RemoteAddr().String(), c)
	})
	return c.Conn.Close()
}

// The stats handler (streamCounter) tags each connection's context with
// its penalizedConn, so a call's interceptor finds its budget without a
// lookup.
type penaltyKey struct{}

func (b *penaltyBox) tagConn(ctx context.Context, info *stats.ConnTagInfo) context.Context {
	if !b.enabled() || info.RemoteAddr == nil {
		return ctx
	}
	if c, ok := b.conns.Load(info.RemoteAddr.String()); ok {
		return context.WithValue(ctx, penaltyKey{}, c)
	}
	return ctx
}

// observeRefusal charges the connection of a call that ended with code,
// and its caller (the identity the authorizer put in ctx, if it did), if
// the code is a refusal.
func observeRefusal(ctx context.Context, code codes.Code) {
	if !penalized(code) {
		return
	}
	c, ok := ctx.Value(penaltyKey{}).(*penalizedConn)
	if !ok {
		return
	}
	// A datanode acting for a WebHDFS user (a delegated call) carries the
	// calls of many users on one connection: one user's refusals must not
	// slow the others', so they are not charged to it.
	if _, delegated := security.RedirectFromContext(ctx); delegated {
		return
	}
	var key string
	if id, ok := security.IdentityFromContext(ctx); ok {
		key = id.Role.String() + ":" + id.Name
	}
	c.charge(key, time.Now())
}
