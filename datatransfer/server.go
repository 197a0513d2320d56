package datatransfer

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/blockfs/blockfs/errs"
)

// Config configures a door.
type Config struct {
	Reader BlockReader
	Writer BlockWriter
	// DatanodeID is this datanode's id: a write's ack names it first.
	DatanodeID string
	// PoolID is the block pool every request must name ("BP-" and the
	// cluster's trust domain, as WebHDFS's).
	PoolID string
	// MaxPacketBytes bounds the data of one packet a writer sends (the
	// datanode's --max-packet-bytes).
	MaxPacketBytes int
	// MaxOpBytes bounds an op's message (0: 64 KiB).
	MaxOpBytes int
	// IdleTimeout ends a connection whose client neither sends nor takes
	// anything for this long.
	IdleTimeout time.Duration
	// KeepAlive is how long a connection waits for the client's next op
	// after one ended cleanly (0: 4 s, as HDFS's
	// dfs.datanode.socket.reuse.keepalive).
	KeepAlive time.Duration
	// MaxConns bounds the connections served at once (0: 1024); one more
	// is closed at once.
	MaxConns int
	Log      *slog.Logger
	// Registerer receives the door's metrics (nil: none).
	Registerer prometheus.Registerer
}

// Server is a running door.
type Server struct {
	cfg Config
	log *slog.Logger
	met *metrics

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	lis    net.Listener
	conns  map[net.Conn]struct{}
	closed bool
}

// New returns a door; Serve starts it.
func New(cfg Config) (*Server, error) {
	if cfg.Reader == nil || cfg.Writer == nil {
		return nil, errs.New(errs.Invalid, "datatransfer.New", "", "a reader and a writer are required")
	}
	if cfg.MaxPacketBytes <= 0 || cfg.IdleTimeout <= 0 {
		return nil, errs.New(errs.Invalid, "datatransfer.New", "", "max packet bytes and idle timeout must be positive")
	}
	if cfg.MaxOpBytes <= 0 {
		cfg.MaxOpBytes = 64 << 10
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = 4 * time.Second
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 1024
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, log: log, met: newMetrics(cfg.Registerer), conns: map[net.Conn]struct{}{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// Serve accepts connections on lis until Close; it returns nil then.
func (s *Server) Serve(lis net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		lis.Close()
		return nil
	}
	s.lis = lis
	s.mu.Unlock()
	for {
		c, err := lis.Accept()
		if err != nil {
			if s.ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return errs.Wrap(errs.Unavailable, "datatransfer.Server.Serve", lis.Addr().String(), err)
		}
		if !s.track(c) {
			c.Close()
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer s.untrack(c)
			s.serveConn(c)
		}()
	}
}

// track registers c, unless the door is closed or full.
func (s *Server) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if len(s.conns) >= s.cfg.MaxConns {
		s.met.refused.Inc()
		s.log.Warn("HDFS data connection refused: too many open", "remote", c.RemoteAddr().String(), "max", s.cfg.MaxConns)
		return false
	}
	s.conns[c] = struct{}{}
	s.met.open.Inc()
	return true
}

func (s *Server) untrack(c net.Conn) {
	c.Close()
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.met.open.Dec()
}

// Close stops accepting, ends every connection (a write under way is
// abandoned, as when its client goes) and waits for their handlers.
func (s *Server) Close() error {
	s.cancel()
	s.mu.Lock()
	s.closed = true
	if s.lis != nil {
		s.lis.Close()
	}
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// conn is one client connection.
type conn struct {
	s   *Server
	c   net.Conn
	r   *bufio.Reader
	ctx context.Context
	log *slog.Logger

	wmu sync.Mutex // one writer of the connection at a time
}

// serveConn serves ops on c until one fails, the client goes, or it sends
// no op within the keep-alive.
func (s *Server) serveConn(nc net.Conn) {
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	c := &conn{s: s, c: nc, r: bufio.NewReaderSize(nc, 64<<10), ctx: ctx, log: s.log.With("remote", nc.RemoteAddr().String())}
	wait := s.cfg.IdleTimeout
	for {
		c.readDeadline(wait)
		version, code, err := readOpHeader(c.r)
		if err != nil {
			if !errors.Is(err, io.EOF) && !isClosed(err) {
				c.log.Debug("HDFS data connection: no op", "err", err)
			}
			return
		}
		spec, known := ops[code]
		name := opName(code)
		switch {
		case version != Version:
			err = frameError("data transfer version %d, want %d", version, Version)
		case !known:
			err = unsupported(name, "op 0x%02x is not served by this datanode (READ_BLOCK 0x51, WRITE_BLOCK 0x50 and BLOCK_CHECKSUM 0x55 are)", code)
		}
		if err != nil {
			c.log.Info("HDFS data request refused", "err", err)
			s.met.ops.WithLabelValues(name, c.respondError(name, err).status).Inc()
			return
		}
		st := spec.serve(c)
		s.met.ops.WithLabelValues(name, st.status).Inc()
		if !st.clean {
			return
		}
		wait = s.cfg.KeepAlive
	}
}

// outcome is how an op ended: the status it answered (its metrics label)
// and whether the connection may take another op.
type outcome struct {
	status string
	clean  bool
}

func (c *conn) readDeadline(d time.Duration) { _ = c.c.SetReadDeadline(time.Now().Add(d)) }

// write sends b whole, within the idle timeout.
func (c *conn) write(b ...[]byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.c.SetWriteDeadline(time.Now().Add(c.s.cfg.IdleTimeout))
	bufs := net.Buffers(b)
	_, err := bufs.WriteTo(c.c)
	return err
}

// isClosed reports whether err is the end of a connection rather than
// something to log: the client went, or the door closed it.
func isClosed(err error) bool {
	var ne net.Error
	return errors.Is(err, net.ErrClosed) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		(errors.As(err, &ne) && ne.Timeout())
}
