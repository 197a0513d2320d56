package hadoopipc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/blockfs/blockfs/errs"
)

// Call is one method call as the connection received it.
type Call struct {
	// Method is RequestHeaderProto.methodName ("getFileInfo").
	Method string
	// Body is the request message, still encoded; it is only valid until
	// the handler returns.
	Body []byte
	// User is the connection's user (simple authentication: the
	// effectiveUser of its IpcConnectionContextProto).
	User string
	// ClientID and CallID name the call for a retry cache: a client's
	// retry of a call repeats both (RpcRequestHeaderProto.clientId,
	// callId); Retry is its retryCount (0 on the first attempt).
	ClientID []byte
	CallID   int32
	Retry    int32
	// Remote is the peer's address.
	Remote net.Addr
}

// Handler runs the calls of one protocol.
type Handler interface {
	// Known reports whether method is one of the protocol's; the server
	// answers any other with RpcNoSuchMethodException itself.
	Known(method string) bool
	// Serve runs c and returns its response message, or an error the
	// server turns into an ERROR response with the class and message
	// Config.Exception gives it. It is called concurrently, from one
	// goroutine per call; ctx ends when the connection does. A response
	// that is also a Releaser is released once its frame is written.
	Serve(ctx context.Context, c *Call) (proto.Message, error)
}

// Releaser is a response whose memory its handler reuses: the server calls
// Release once it has written the response (or failed to) and holds no
// reference to it any more.
type Releaser interface {
	Release()
}

// Exception is an error that names its Java exception class itself (the
// server's own refusals, and a handler's that have no errs.Kind).
type Exception struct {
	Class   string // e.g. "org.apache.hadoop.ipc.RpcNoSuchMethodException"
	Message string
}

func (e *Exception) Error() string { return e.Class + ": " + e.Message }

// Exception classes the server itself raises.
const (
	NoSuchMethod   = "org.apache.hadoop.ipc.RpcNoSuchMethodException"
	NoSuchProtocol = "org.apache.hadoop.ipc.RpcNoSuchProtocolException"
	ServerError    = "org.apache.hadoop.ipc.RpcServerException"
	AccessControl  = "org.apache.hadoop.security.AccessControlException"
	IPCException   = "org.apache.hadoop.ipc.IpcException"
)

// Config configures a Server. Zero durations and sizes take their
// defaults (DefaultConfig).
type Config struct {
	// Protocol is the one protocol served: the connection context's and
	// every call's declaringClassProtocolName must be it.
	Protocol string
	Handler  Handler
	// Exception maps a handler's error to its Java class and message
	// (nil: errs.Kind names only; see the door's table). An *Exception
	// is used as it is, before Exception is asked.
	Exception func(error) (class, message string)
	// MaxFrame bounds a request frame's bytes (Hadoop's
	// ipc.maximum.data.length, 128 MiB there; requests are small).
	MaxFrame int
	// MaxInFlight bounds the calls of one connection running at once.
	MaxInFlight int
	// MaxConns bounds the open connections; more are closed at accept.
	MaxConns int
	// HandshakeTimeout bounds the time from accept to the connection
	// context; IdleTimeout closes a connection with no call for that long
	// (Hadoop's ipc.client.connection.maxidletime is 10 s on the client;
	// the server's ipc.client.idlethreshold logic keeps more).
	HandshakeTimeout, IdleTimeout time.Duration
	Log                           *slog.Logger
	Metrics                       *Metrics
}

// DefaultConfig returns the defaults for protocol and h.
func DefaultConfig(protocol string, h Handler) Config {
	return Config{
		Protocol: protocol, Handler: h,
		MaxFrame: 64 << 20, MaxInFlight: 64, MaxConns: 4096,
		HandshakeTimeout: 10 * time.Second, IdleTimeout: 5 * time.Minute,
	}
}

// Validate reports the first problem of c.
func (c Config) Validate() error {
	const op = "hadoopipc.Config.Validate"
	switch {
	case c.Protocol == "":
		return errs.New(errs.Invalid, op, "", "Protocol is empty")
	case c.Handler == nil:
		return errs.New(errs.Invalid, op, "", "Handler is nil")
	case c.MaxFrame < 1<<10:
		return errs.Newf(errs.Invalid, op, "", "MaxFrame %d is under 1 KiB", c.MaxFrame)
	case c.MaxInFlight < 1 || c.MaxConns < 1:
		return errs.Newf(errs.Invalid, op, "", "MaxInFlight %d and MaxConns %d must be positive", c.MaxInFlight, c.MaxConns)
	case c.HandshakeTimeout <= 0 || c.IdleTimeout <= 0:
		return errs.New(errs.Invalid, op, "", "HandshakeTimeout and IdleTimeout must be positive")
	}
	return nil
}

// Server serves Hadoop IPC connections on listeners given to Serve.
type Server struct {
	cfg    Config
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	lis    []net.Listener
	conns  map[net.Conn]struct{}
	closed bool
}

// NewServer returns a server for cfg, after Validate.
func NewServer(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(nil)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{cfg: cfg, ctx: ctx, cancel: cancel, conns: map[net.Conn]struct{}{}}, nil
}

// ErrClosed is Serve's result after Close.
var ErrClosed = errors.New("hadoopipc: server closed")

// Serve accepts connections on l until Close; it closes l when it returns.
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		l.Close()
		return ErrClosed
	}
	s.lis = append(s.lis, l)
	s.mu.Unlock()
	defer l.Close()
	for {
		nc, err := l.Accept()
		if err != nil {
			if s.ctx.Err() != nil {
				return ErrClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			return fmt.Errorf("hadoopipc: accept: %w", err)
		}
		if !s.track(nc) {
			s.cfg.Metrics.refused.WithLabelValues("too_many_connections").Inc()
			nc.Close()
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer s.untrack(nc)
			s.serveConn(nc)
		}()
	}
}

func (s *Server) track(nc net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || len(s.conns) >= s.cfg.MaxConns {
		return false
	}
	s.conns[nc] = struct{}{}
	s.cfg.Metrics.conns.Inc()
	return true
}

func (s *Server) untrack(nc net.Conn) {
	s.mu.Lock()
	delete(s.conns, nc)
	s.mu.Unlock()
	s.cfg.Metrics.conns.Dec()
	nc.Close()
}

// Close stops the listeners, ends every connection (their calls' contexts
// are cancelled) and waits for their goroutines.
func (s *Server) Close() error {
	s.cancel() // first: an Accept that fails below must find it cancelled
	s.mu.Lock()
	s.closed = true
	for _, l := range s.lis {
		l.Close()
	}
	for c := range s.conns {
		abort(c) // abort.go
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}
