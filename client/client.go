package client

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"os/user"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blockfs/blockfs/internal/node/flow"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/security"
)

// Metadata keys of simple authentication (see namenode.UserKey) and of
// the namenode's retry cache (namenode.ClientIDKey, CallIDKey).
const (
	clientIDKey = "blockfs-client-id"
	callIDKey   = "blockfs-call-id"
)

// Config configures a Client.
type Config struct {
	// Namenodes are the gRPC addresses of the namenodes (any subset).
	Namenodes []string
	// User is the user name sent under simple authentication (defaults to
	// the OS user). Under mTLS the client certificate names the user, and
	// User is ignored. Groups are never sent: the namenode's own group
	// mapping decides them.
	User string
	// Consistency of namespace reads; the zero value is linearizable.
	Consistency api.ReadConsistency
	// MinBackoff and MaxBackoff bound the retry backoff.
	MinBackoff, MaxBackoff time.Duration
	// DialOptions are added to every connection (TLS credentials, say).
	DialOptions []grpc.DialOption
	// ChunkSize is the data size of one WriteBlock packet, rounded down to
	// whole checksum chunks.
	ChunkSize int
	// Window is how many packets a block write keeps unacknowledged.
	Window int
	// FanOutMax is the largest block written to its datanodes side by
	// side rather than down a pipeline: a block whose bytes are all in
	// hand when it is finished (a small file's Close, no hflush before)
	// and no larger than this goes to every datanode of its pipeline in
	// parallel, as one declared-length packet each, so its write costs one
	// hop instead of one per replica (fanout.go). 0 turns it off; at most
	// ChunkSize (one packet). Default 64 KiB.
	FanOutMax int
	// UnreachableRetry is how long a call keeps retrying while no namenode
	// can be connected to at all (the dial fails: connection refused, no
	// such host): past it the call fails with an Unavailable error naming
	// the addresses tried. 0 retries until the caller's context ends (a
	// server's client, waiting out a namenode's restart). A namenode that
	// answers, even with an error, is reachable: leader elections and safe
	// mode are waited out within the context as before.
	UnreachableRetry time.Duration
	// OnRetry, if set, is called before each retry of a call (op, the
	// namenode tried, the attempt that failed, from 1, and its error), so
	// that a command line can say what it is waiting for.
	OnRetry func(op, addr string, attempt int, err error)
	// LeaseRenewInterval is how often the Client renews its leases while a
	// Writer is open; 0 means 20 s. Keep it well under the namenode's
	// --lease-soft-limit (60 s by default).
	LeaseRenewInterval time.Duration
	// LocationCacheTTL, when positive, keeps the read locations (and read
	// token) of each file this client completed or opened whole for that
	// long, so reading it back skips the namenode: one datanode call a
	// small file. A location gone stale (replica moved or deleted, block
	// restamped by an append or recovery, token expired or revoked) is
	// refused by the datanode and the Reader asks the namenode instead;
	// this client's own changes drop entries at once. Another client's
	// replacement or deletion of a file is not seen until the old
	// replicas are deleted or the TTL passes: within it a read may return
	// the old version, whole. 0 (the default): every Open asks the
	// namenode. See locCache.
	LocationCacheTTL time.Duration
	// PrepareAhead is how many files one PrepareFile call prepares for
	// PutFile: the first is used at once, the others are kept for this
	// client's next PutFiles of the same replication, block size and mode,
	// for at most preparedTTL (putfile.go), as SeaweedFS's assign with a
	// count hands out several file ids at once. 0 means 8; 1 prepares
	// none ahead; at most 16.
	PrepareAhead int
}

// DefaultConfig returns the defaults for the given namenodes.
func DefaultConfig(namenodes ...string) Config {
	c := Config{Namenodes: namenodes, MinBackoff: 20 * time.Millisecond, MaxBackoff: time.Second, ChunkSize: 256 << 10, Window: 16, FanOutMax: 64 << 10}
	if u, err := user.Current(); err == nil {
		c.User = u.Username
	}
	return c
}

// Validate reports the first problem with c.
func (c *Config) Validate() error {
	switch {
	case len(c.Namenodes) == 0:
		return errs.New(errs.Invalid, "client.Config.Validate", "", "at least one namenode address is required")
	case c.MinBackoff <= 0 || c.MaxBackoff < c.MinBackoff:
		return errs.New(errs.Invalid, "client.Config.Validate", "", "backoff bounds must be positive and ordered")
	case c.ChunkSize <= 0 || c.ChunkSize > 4<<20:
		return errs.New(errs.Invalid, "client.Config.Validate", "", "chunk (packet) size must be in (0, 4 MiB]")
	case c.Window <= 0:
		return errs.New(errs.Invalid, "client.Config.Validate", "", "window must be positive")
	case c.FanOutMax < 0 || c.FanOutMax > c.ChunkSize:
		return errs.New(errs.Invalid, "client.Config.Validate", "", "fan-out maximum must be in [0, chunk size]")
	case c.UnreachableRetry < 0:
		return errs.New(errs.Invalid, "client.Config.Validate", "", "unreachable retry must not be negative")
	case c.LeaseRenewInterval < 0:
		return errs.New(errs.Invalid, "client.Config.Validate", "", "lease renew interval must not be negative")
	case c.LocationCacheTTL < 0:
		return errs.New(errs.Invalid, "client.Config.Validate", "", "location cache TTL must not be negative")
	case c.PrepareAhead < 0 || c.PrepareAhead > 16:
		return errs.New(errs.Invalid, "client.Config.Validate", "", "prepare-ahead count must be in [0, 16]")
	}
	return nil
}

// Client talks to a blockfs cluster. It is safe for concurrent use.
type Client struct {
	cfg      Config
	mu       sync.Mutex
	conns    map[string]*grpc.ClientConn
	current  atomic.Value // string: the namenode believed to lead
	lastSeen atomic.Uint64
	// id and calls name each logical call, the same on every retry, so
	// the namenode applies a retried write once (its retry cache).
	id    string
	calls atomic.Uint64
	// leases renews this client's leases while it has Writers open.
	leases leaseRenewer
	// trash is the cluster's trash settings as last read (trash.go).
	trash trashSettings
	// locs caches files' read locations (nil: Config.LocationCacheTTL 0).
	locs *locCache
	// prepared are the files prepared ahead for PutFile (putfile.go).
	prepared preparedPool
}

// New returns a client; connections are made lazily.
func New(cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var id [16]byte
	if _, err := crand.Read(id[:]); err != nil {
		return nil, errs.Wrap(errs.Internal, "client.New", "", err)
	}
	if cfg.LeaseRenewInterval == 0 {
		cfg.LeaseRenewInterval = 20 * time.Second
	}
	c := &Client{cfg: cfg, conns: map[string]*grpc.ClientConn{}, id: hex.EncodeToString(id[:]), locs: newLocCache(cfg.LocationCacheTTL)}
	c.leases.c = c
	c.current.Store(cfg.Namenodes[0])
	return c, nil
}

// Close stops renewing leases and closes every connection.
func (c *Client) Close() error {
	c.leases.shutdown()
	c.mu.Lock()
	defer c.mu.Unlock()
	var first error
	for _, conn := range c.conns {
		if err := conn.Close(); err != nil && first == nil {
			first = err
		}
	}
	// A nil map refuses later dials: a stream still running after Close
	// must not open a connection nobody will close.
	c.conns = nil
	return first
}

func (c *Client) conn(op, addr string) (*grpc.ClientConn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if conn, ok := c.conns[addr]; ok {
		return conn, nil
	}
	if c.conns == nil {
		return nil, errs.New(errs.Canceled, op, addr, "client is closed")
	}
	// Every call states the user for simple auth, to namenodes and
	// datanodes alike; under mTLS the certificate decides and the servers
	// ignore it.
	opts := append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(security.SimpleCredentials(security.Identity{Role: security.RoleUser, Name: c.cfg.User}))},
		append(flow.DialOptions(), c.cfg.DialOptions...)...)
	conn, err := grpc.NewClient(addr, opts...)
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, op, addr, err)
	}
	c.conns[addr] = conn
	return conn, nil
}

// call runs fn against the namenode believed to lead, following leader
// hints and rotating through the namenodes on Unavailable, with jittered
// exponential backoff, until it succeeds, fails for good, or ctx ends.
func (c *Client) call(ctx context.Context, op string, fn func(ctx context.Context, nn api.ClientServiceClient) error) error {
	if c.locs != nil && !keepsLocations[op] {
		// After the call, whatever its outcome: a failed answer may
		// still have been applied.
		defer c.locs.clear()
	}
	backoff := c.cfg.MinBackoff
	next := 0
	ctx = metadata.AppendToOutgoingContext(ctx, clientIDKey, c.id, callIDKey, strconv.FormatUint(c.calls.Add(1), 10))
	var unreach unreachable
	for attempt := 0; ; attempt++ {
		addr := c.current.Load().(string)
		conn, err := c.conn(op, addr)
		notSent := err != nil
		if err == nil {
			var trailer metadata.MD
			err = fn(ctxWithTrailer(ctx, &trailer), api.NewClientServiceClient(conn))
			if err == nil {
				return nil
			}
			notSent = errs.NotSent(err)
			err = errs.FromStatus(err, trailer)
		}
		if d := errs.RetryAfter(err); d > 0 && errs.Is(err, errs.Exhausted) {
			// A rate limit's refusal: wait as long as it says, on the same
			// namenode, unless the caller's deadline comes first.
			if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
				return withOp(err, op)
			}
			select {
			case <-ctx.Done():
				return &errs.Error{Kind: errs.Timeout, Op: op, Msg: "gave up retrying", Err: err}
			case <-time.After(d + rand.N(d/10+1)):
			}
			continue
		}
		if !retryable(err) {
			return withOp(err, op)
		}
		if final := unreach.note(op, addr, notSent, err, c.cfg.UnreachableRetry); final != nil {
			return final
		}
		if c.cfg.OnRetry != nil {
			c.cfg.OnRetry(op, addr, attempt+1, err)
		}
		if hint := errs.LeaderHint(err); hint != "" && hint != addr {
			c.current.Store(hint)
			continue // a hint is worth trying at once
		}
		next = (next + 1) % len(c.cfg.Namenodes)
		c.current.Store(c.cfg.Namenodes[next])
		sleep := backoff/2 + rand.N(backoff/2+1)
		select {
		case <-ctx.Done():
			return &errs.Error{Kind: errs.Timeout, Op: op, Msg: "gave up retrying", Err: err}
		case <-time.After(sleep):
		}
		backoff = min(2*backoff, c.cfg.MaxBackoff)
	}
}

type trailerKey struct{}

func ctxWithTrailer(ctx context.Context, md *metadata.MD) context.Context {
	return context.WithValue(ctx, trailerKey{}, md)
}

// trailerOpt returns the grpc.Trailer option bound to ctx's trailer slot.
func trailerOpt(ctx context.Context) grpc.CallOption {
	if md, ok := ctx.Value(trailerKey{}).(*metadata.MD); ok {
		return grpc.Trailer(md)
	}
	return grpc.EmptyCallOption{}
}

func retryable(err error) bool {
	switch errs.KindOf(err) {
	case errs.Unavailable, errs.NotLeader:
		return true
	case errs.Precondition:
		// A leader in safe mode refuses writes until its block map has
		// filled (namenode/safemode): wait, as HDFS clients retry its
		// RetriableException.
		return errs.IsSafeMode(err)
	}
	return false
}

func withOp(err error, op string) error {
	var e *errs.Error
	if errors.As(err, &e) && e.Op == "" {
		e.Op = op
	}
	return err
}

// Code returns the gRPC code of an error returned by the client.
func Code(err error) codes.Code {
	if s, ok := status.FromError(err); ok && s.Code() != codes.Unknown {
		return s.Code()
	}
	return errs.Code(errs.KindOf(err))
}

func (c *Client) readOpts() *api.ReadOptions {
	return &api.ReadOptions{Consistency: c.cfg.Consistency, MinAppliedIndex: c.lastSeen.Load()}
}

// saw records the highest applied index seen, for read-your-writes.
func (c *Client) saw(h *api.ResponseHeader) {
	if l := h.GetLeader(); l != "" && l != c.current.Load().(string) && slices.Contains(c.cfg.Namenodes, l) {
		c.current.Store(l) // a follower forwarded the write: go to the leader
	}
	idx := h.GetAppliedIndex()
	for {
		cur := c.lastSeen.Load()
		if idx <= cur || c.lastSeen.CompareAndSwap(cur, idx) {
			return
		}
	}
}
