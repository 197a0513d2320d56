package serve

import (
	"context"
	"math"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/stats"

	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/node/cliflag"
)

// Limits bounds what one peer may hold of a server's connections: the
// streams of one gRPC connection, how often it may ping, and how long an
// HTTP request may sit without progress. Every blockfs server (namenode and
// datanode) takes the same section; start from DefaultLimits.
type Limits struct {
	// MaxConcurrentStreams is the most concurrent gRPC streams (calls) one
	// connection may have open (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS): a
	// gRPC client queues the calls beyond it, a raw HTTP/2 client's extra
	// streams are refused with REFUSED_STREAM. Other connections are not
	// affected.
	MaxConcurrentStreams int
	// KeepaliveMinTime is the shortest interval at which a client may ping
	// (keepalive.EnforcementPolicy.MinTime); a client that pings more often
	// is sent GOAWAY ("too_many_pings") and disconnected. Pings are allowed
	// on a connection without calls (PermitWithoutStream), as the blockfs
	// clients keep idle connections to namenodes alive.
	KeepaliveMinTime time.Duration
	// KeepaliveTime and KeepaliveTimeout are the server's own pings
	// (keepalive.ServerParameters): after KeepaliveTime without activity
	// it pings, and closes a connection whose peer has not answered within
	// KeepaliveTimeout, freeing the streams of a vanished client.
	KeepaliveTime    time.Duration
	KeepaliveTimeout time.Duration

	// HTTPReadHeaderTimeout bounds reading one request's headers.
	HTTPReadHeaderTimeout time.Duration
	// HTTPIdleTimeout closes a keep-alive HTTP connection that has waited
	// this long for its next request.
	HTTPIdleTimeout time.Duration
	// HTTPProgressTimeout is the longest a request body may stall between
	// two reads that return data, and a response between two writes that
	// the peer takes: a progress deadline extended on every read and write,
	// in place of a whole-request ReadTimeout and WriteTimeout, which would
	// cut off a large WebHDFS OPEN or CREATE that is making progress. A
	// stalled request's read or write fails and its handler returns.
	HTTPProgressTimeout time.Duration

	// RefusalRate and RefusalBurst are each gRPC connection's budget of
	// refused calls (ResourceExhausted, PermissionDenied, Unauthenticated)
	// per second, and how many it may save up. Past it the connection is
	// read more slowly until the debt is paid (penalty.go), so that a
	// client refused in a loop stops costing the server. 0 turns it off.
	RefusalRate  float64
	RefusalBurst int
}

// DefaultLimits returns the limits a production server uses: etcd's
// keepalive enforcement (a client may ping every 5 s; the server pings an
// idle connection after 2 h and waits 20 s), 256 streams per connection
// (far above what one client's pipelines and reads use), and HTTP timeouts
// in the range of Go's and Hadoop's defaults.
func DefaultLimits() Limits {
	return Limits{
		MaxConcurrentStreams:  256,
		KeepaliveMinTime:      5 * time.Second,
		KeepaliveTime:         2 * time.Hour,
		KeepaliveTimeout:      20 * time.Second,
		HTTPReadHeaderTimeout: 5 * time.Second,
		HTTPIdleTimeout:       2 * time.Minute,
		HTTPProgressTimeout:   time.Minute,
		RefusalRate:           50,
		RefusalBurst:          100,
	}
}

// Validate reports the first problem with l; op names the caller's
// Validate method.
func (l *Limits) Validate(op string) error {
	switch {
	case l.MaxConcurrentStreams <= 0 || int64(l.MaxConcurrentStreams) > math.MaxUint32:
		return errs.Newf(errs.Invalid, op, "", "max concurrent streams %d out of 1..%d", l.MaxConcurrentStreams, uint32(math.MaxUint32))
	case l.KeepaliveMinTime <= 0 || l.KeepaliveTime <= 0 || l.KeepaliveTimeout <= 0:
		return errs.Newf(errs.Invalid, op, "", "keepalive min time %v, time %v and timeout %v must be positive", l.KeepaliveMinTime, l.KeepaliveTime, l.KeepaliveTimeout)
	case l.HTTPReadHeaderTimeout <= 0 || l.HTTPIdleTimeout <= 0 || l.HTTPProgressTimeout <= 0:
		return errs.Newf(errs.Invalid, op, "", "http read header %v, idle %v and progress %v timeouts must be positive", l.HTTPReadHeaderTimeout, l.HTTPIdleTimeout, l.HTTPProgressTimeout)
	case l.RefusalRate < 0 || (l.RefusalRate > 0 && l.RefusalBurst < 1):
		return errs.Newf(errs.Invalid, op, "", "refusal rate %g must be >= 0, with a burst of at least 1 (is %d)", l.RefusalRate, l.RefusalBurst)
	}
	return nil
}

// RegisterFlags registers l's flags on f, with l's values as defaults.
func (l *Limits) RegisterFlags(f *cliflag.Set) {
	f.Int(&l.MaxConcurrentStreams, "grpc-max-streams", l.MaxConcurrentStreams, "most concurrent gRPC calls one connection may have open; a client's calls beyond it wait")
	f.Duration(&l.KeepaliveMinTime, "grpc-keepalive-min-time", l.KeepaliveMinTime, "shortest interval at which a client may ping; one pinging more often is disconnected (GOAWAY too_many_pings)")
	f.Duration(&l.KeepaliveTime, "grpc-keepalive-time", l.KeepaliveTime, "the server pings a connection idle for this long")
	f.Duration(&l.KeepaliveTimeout, "grpc-keepalive-timeout", l.KeepaliveTimeout, "and closes it if the ping is not answered within this")
	f.Duration(&l.HTTPReadHeaderTimeout, "http-read-header-timeout", l.HTTPReadHeaderTimeout, "bound on reading one HTTP request's headers")
	f.Duration(&l.HTTPIdleTimeout, "http-idle-timeout", l.HTTPIdleTimeout, "close a keep-alive HTTP connection idle this long between requests")
	f.Float64(&l.RefusalRate, "grpc-refusal-rate", l.RefusalRate, "refused calls per second one gRPC connection may earn before the server reads it more slowly (0: never slowed)")
	f.Int(&l.RefusalBurst, "grpc-refusal-burst", l.RefusalBurst, "refused calls one gRPC connection may save up before --grpc-refusal-rate applies")
	f.Duration(&l.HTTPProgressTimeout, "http-progress-timeout", l.HTTPProgressTimeout, "fail an HTTP request whose body or response makes no progress for this long (extended on every read and write, so large transfers are not cut off)")
}

// grpcOptions returns the server options that enforce l, counting on reg
// the streams that fill a connection.
func (l Limits) grpcOptions(reg prometheus.Registerer, box *penaltyBox) []grpc.ServerOption {
	atLimit := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "blockfs_grpc_streams_at_limit_total",
		Help: "gRPC streams that filled their connection's --grpc-max-streams: the connection's next calls wait (or are refused with REFUSED_STREAM) until one ends.",
	})
	if reg != nil {
		reg.MustRegister(atLimit)
	}
	return []grpc.ServerOption{
		grpc.MaxConcurrentStreams(uint32(l.MaxConcurrentStreams)),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: l.KeepaliveMinTime, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: l.KeepaliveTime, Timeout: l.KeepaliveTimeout}),
		grpc.StatsHandler(&streamCounter{limit: int64(l.MaxConcurrentStreams), atLimit: atLimit, box: box}),
	}
}

// streamCounter counts each connection's open streams and the streams that
// bring a connection to its limit.
type streamCounter struct {
	limit   int64
	atLimit prometheus.Counter
	box     *penaltyBox // tags each connection with its refusal budget
}

type connStreamsKey struct{}

// connStreams is one connection's count of open streams.
type connStreams struct{ open atomic.Int64 }

func (s *streamCounter) TagConn(ctx context.Context, info *stats.ConnTagInfo) context.Context {
	return context.WithValue(s.box.tagConn(ctx, info), connStreamsKey{}, new(connStreams))
}

func (s *streamCounter) HandleConn(context.Context, stats.ConnStats) {}

func (s *streamCounter) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }

func (s *streamCounter) HandleRPC(ctx context.Context, st stats.RPCStats) {
	c, _ := ctx.Value(connStreamsKey{}).(*connStreams)
	if c == nil {
		return
	}
	switch st.(type) {
	case *stats.Begin:
		if c.open.Add(1) >= s.limit {
			s.atLimit.Inc()
		}
	case *stats.End:
		c.open.Add(-1)
	}
}
