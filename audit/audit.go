package audit

import (
	"cmp"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/blockfs/blockfs/errs"
)

// Event is one audited operation. Log takes it by value and formats it
// later, on the writer goroutine: nothing in it is formatted on the
// request path.
type Event struct {
	Time    time.Time
	Allowed bool
	User    string
	Auth    string   // how the user was authenticated: "SIMPLE", "MTLS"
	Addr    net.Addr // where the call came from; nil when unknown
	Cmd     string   // HDFS's name of the operation: "create", "open", ...
	Src     string
	Dst     string
	Perm    Perm   // of the inode the operation made or changed; zero for none
	Proto   string // "rpc", "webhdfs", "http"
}

// Perm is an inode's owner, group and mode, as the audit line prints them.
type Perm struct {
	Owner, Group string
	Mode         uint32
}

// Config configures a Logger. Start from DefaultConfig.
type Config struct {
	// Path is the audit log file; "" writes no file.
	Path string
	// MaxSizeMB is the size at which the file is rotated; MaxBackups how
	// many rotated files are kept (0: all).
	MaxSizeMB  int
	MaxBackups int
	// Stdout writes every line to standard output too.
	Stdout bool
	// FlushInterval is how often the writer takes the buffered events.
	FlushInterval time.Duration
	// Buffer is how many events may wait for the writer before new ones
	// are dropped.
	Buffer int
	// Registerer, if set, gets the logger's metrics.
	Registerer prometheus.Registerer
	// Log reports write failures.
	Log *slog.Logger
	// Output, if set, replaces the file and standard output (tests).
	Output io.Writer
}

// DefaultConfig returns a configuration that logs nowhere until Path or
// Stdout is set.
func DefaultConfig() Config {
	return Config{MaxSizeMB: 256, MaxBackups: 10, FlushInterval: 100 * time.Millisecond, Buffer: 1 << 16}
}

// Validate reports the first problem with c.
func (c *Config) Validate() error {
	bad := func(format string, a ...any) error {
		return errs.Newf(errs.Invalid, "audit.Config.Validate", "", format, a...)
	}
	switch {
	case c.MaxSizeMB <= 0:
		return bad("max size %d MB must be positive", c.MaxSizeMB)
	case c.MaxBackups < 0:
		return bad("max backups %d must not be negative", c.MaxBackups)
	case c.FlushInterval <= 0:
		return bad("flush interval must be positive")
	case c.Buffer < shards:
		return bad("buffer %d: at least %d events", c.Buffer, shards)
	}
	return nil
}

// Enabled reports whether c logs anywhere.
func (c *Config) Enabled() bool { return c.Path != "" || c.Stdout || c.Output != nil }

// shards is how many buffers Log spreads events over.
const shards = 16

// Logger is an audit log. Its methods are safe for concurrent use; a nil
// *Logger logs nothing.
type Logger struct {
	cfg    Config
	w      io.Writer
	closer io.Closer
	shard  [shards]shard
	per    int // events one shard holds
	kick   chan struct{}
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
	fmu    sync.Mutex // held by a flush, so the writer's and Flush's do not interleave

	// Held by fmu: the buffers a flush swaps into the shards, and its
	// scratch.
	spare  [shards][]byte
	taken  [][]byte
	idx    []at
	outBuf []byte

	written, dropped prometheus.Counter
}

type shard struct {
	mu  sync.Mutex
	buf []byte   // records (record.go)
	n   int      // records in buf
	_   [32]byte // keep neighbouring shards' locks off one cache line
}

// New starts a Logger. It returns nil, and no error, when cfg logs nowhere.
func New(cfg Config) (*Logger, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !cfg.Enabled() {
		return nil, nil
	}
	l := &Logger{cfg: cfg, per: cfg.Buffer / shards, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	if l.cfg.Log == nil {
		l.cfg.Log = slog.New(slog.DiscardHandler)
	}
	var outs []io.Writer
	switch {
	case cfg.Output != nil:
		outs = append(outs, cfg.Output)
	default:
		if cfg.Path != "" {
			f, err := openRotating(cfg.Path, int64(cfg.MaxSizeMB)<<20, cfg.MaxBackups)
			if err != nil {
				return nil, errs.Wrap(errs.IO, "audit.New", cfg.Path, err)
			}
			outs, l.closer = append(outs, f), f
		}
		if cfg.Stdout {
			outs = append(outs, os.Stdout)
		}
	}
	l.w = io.MultiWriter(outs...)
	l.written = prometheus.NewCounter(prometheus.CounterOpts{Name: "blockfs_audit_lines_total", Help: "Audit log lines written."})
	l.dropped = prometheus.NewCounter(prometheus.CounterOpts{Name: "blockfs_audit_dropped_total", Help: "Audit events dropped because the writer could not keep up."})
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(l.written, l.dropped)
	}
	go l.run()
	return l, nil
}

// Log records e. It never blocks on the writer: when e's buffer is full,
// e is dropped and counted.
func (l *Logger) Log(e Event) {
	if l == nil {
		return
	}
	s := &l.shard[rand.Uint32()%shards]
	s.mu.Lock()
	if s.n >= l.per {
		s.mu.Unlock()
		l.dropped.Inc()
		l.wake()
		return
	}
	s.buf = appendRecord(s.buf, &e)
	s.n++
	full := s.n >= l.per/2
	s.mu.Unlock()
	if full {
		l.wake()
	}
}

func (l *Logger) wake() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// Close writes what is buffered and closes the file.
func (l *Logger) Close() error {
	if l == nil {
		return nil
	}
	l.once.Do(func() { close(l.stop) })
	<-l.done
	if l.closer != nil {
		return l.closer.Close()
	}
	return nil
}

// Flush writes everything logged before it was called.
func (l *Logger) Flush() {
	if l == nil {
		return
	}
	l.flush()
}

func (l *Logger) run() {
	defer close(l.done)
	t := time.NewTicker(l.cfg.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-l.kick:
		case <-l.stop:
			l.flush()
			return
		}
		l.flush()
	}
}

var errShort = errors.New("short write")

// at is where a record is: its time, for ordering, and its shard buffer
// and offset.
type at struct {
	nanos int64
	buf   int
	off   int
}

// flush takes every shard's records and writes them in time order.
func (l *Logger) flush() {
	l.fmu.Lock()
	defer l.fmu.Unlock()
	bufs := l.taken[:0]
	for i := range l.shard {
		s := &l.shard[i]
		spare := l.spare[i][:0]
		s.mu.Lock()
		b := s.buf
		s.buf, s.n = spare, 0
		s.mu.Unlock()
		l.spare[i] = b // reused by the next flush once written
		bufs = append(bufs, b)
	}
	l.taken = bufs
	idx := l.idx[:0]
	for bi, b := range bufs {
		for off := 0; off < len(b); {
			_, n := readRecord(b[off:])
			idx = append(idx, at{int64(binary.LittleEndian.Uint64(b[off:])), bi, off})
			off += n
		}
	}
	l.idx = idx
	if len(idx) == 0 {
		return
	}
	slices.SortStableFunc(idx, func(a, b at) int { return cmp.Compare(a.nanos, b.nanos) })
	out := l.outBuf[:0]
	for _, a := range idx {
		r, _ := readRecord(bufs[a.buf][a.off:])
		out = r.appendLine(out)
	}
	l.outBuf = out
	if n, err := l.w.Write(out); err != nil || n < len(out) {
		if err == nil {
			err = errShort
		}
		l.cfg.Log.Warn("audit log write failed", "err", err, "lines", len(idx))
		return
	}
	l.written.Add(float64(len(idx)))
}
