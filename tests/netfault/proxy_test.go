package netfault

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Link is the shape of a slow link: each byte arrives Latency after it was
// sent, and no faster than BytesPerSec (0: no cap). The zero Link is a
// plain wire.
type Link struct {
	Latency     time.Duration
	BytesPerSec int
}

// Proxy is a userspace TCP proxy the kernel's missing netem stands in
// for: it listens inside one host's namespace and forwards every
// connection to a target dialed from the same namespace (so the Net's
// partitions still apply to it), shaping both directions as its Link
// says. The Link can be changed while connections are open.
type Proxy struct {
	Addr   string // where it listens
	target string
	host   *Host
	ln     net.Listener
	link   atomic.Pointer[Link]
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]bool
	closed bool
}

// NewProxy listens on h at listen and forwards to target.
func NewProxy(h *Host, listen, target string) (*Proxy, error) {
	ln, err := h.Listen(listen)
	if err != nil {
		return nil, err
	}
	p := &Proxy{Addr: ln.Addr().String(), target: target, host: h, ln: ln, conns: map[net.Conn]bool{}}
	p.link.Store(&Link{})
	p.wg.Go(p.accept)
	return p, nil
}

// SetLink shapes the proxy's connections from now on.
func (p *Proxy) SetLink(l Link) { p.link.Store(&l) }

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Go(func() { p.serve(c) })
	}
}

func (p *Proxy) track(c net.Conn, on bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if on && p.closed {
		return false
	}
	if on {
		p.conns[c] = true
	} else {
		delete(p.conns, c)
	}
	return true
}

func (p *Proxy) serve(in net.Conn) {
	defer in.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	out, err := p.host.DialContext(ctx, p.target)
	cancel()
	if err != nil {
		return
	}
	defer out.Close()
	if !p.track(in, true) || !p.track(out, true) {
		return
	}
	defer p.track(in, false)
	defer p.track(out, false)
	var wg sync.WaitGroup
	wg.Go(func() { p.pump(out, in) })
	p.pump(in, out)
	wg.Wait()
}

// chunk is bytes read at a time, delivered at due.
type chunk struct {
	b   []byte
	due time.Time
}

// pump copies src to dst through the Link: a reader stamps each chunk
// with its due time, a writer delivers it then, paced to the byte rate,
// so latency does not cut throughput (a long fat pipe, not a stop-and-wait
// one).
func (p *Proxy) pump(dst, src net.Conn) {
	q := make(chan chunk, 256)
	go func() {
		defer close(q)
		for {
			b := make([]byte, 16<<10)
			n, err := src.Read(b)
			if n > 0 {
				q <- chunk{b[:n], time.Now().Add(p.link.Load().Latency)}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range q {
		time.Sleep(time.Until(c.due))
		if bps := p.link.Load().BytesPerSec; bps > 0 {
			time.Sleep(time.Duration(len(c.b)) * time.Second / time.Duration(bps))
		}
		if _, err := dst.Write(c.b); err != nil {
			src.Close() // ends the reader
			for range q {
			}
			return
		}
	}
	if tc, ok := dst.(interface{ CloseWrite() error }); ok {
		tc.CloseWrite()
	}
}

// Close stops listening and cuts every connection.
func (p *Proxy) Close() error {
	err := p.ln.Close()
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}
