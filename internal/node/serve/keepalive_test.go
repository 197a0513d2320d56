package serve

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/net/http2"

	"github.com/blockfs/blockfs/security"
)

// TestKeepaliveEnforced: a client that pings more often than
// --grpc-keepalive-min-time allows is sent GOAWAY ENHANCE_YOUR_CALM
// "too_many_pings" and disconnected, while one pinging no faster than the
// policy keeps its connection. grpc-go's own client cannot ping faster
// than every 10 s, so the test speaks raw HTTP/2.
func TestKeepaliveEnforced(t *testing.T) {
	limits := testLimits()
	limits.KeepaliveMinTime = 200 * time.Millisecond
	authz := security.NewAuthorizer(security.AuthConfig{Simple: true, Registry: prometheus.NewRegistry()})
	srv := NewGRPC(nil, func(string, string, time.Duration) {}, authz, limits, prometheus.NewRegistry())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	GRPC(srv, lis, &wg, slog.New(slog.DiscardHandler))
	defer func() { srv.Stop(); wg.Wait() }()

	for _, tc := range []struct {
		name   string
		every  time.Duration
		pings  int
		goAway bool
		wait   time.Duration // for the GOAWAY
	}{
		{"flooding pings", 0, 10, true, 5 * time.Second},
		{"pings within the policy", 250 * time.Millisecond, 4, false, 300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", lis.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
				t.Fatal(err)
			}
			fr := http2.NewFramer(conn, conn)
			if err := fr.WriteSettings(); err != nil {
				t.Fatal(err)
			}
			frames := make(chan *goAway, 64) // nil for frames other than GOAWAY
			go func() {
				defer close(frames)
				for {
					f, err := fr.ReadFrame()
					if err != nil {
						return
					}
					if g, ok := f.(*http2.GoAwayFrame); ok {
						// The framer reuses the frame's buffer: keep a copy.
						frames <- &goAway{code: g.ErrCode, debug: bytes.Clone(g.DebugData())}
						continue
					}
					frames <- nil
				}
			}()
			var data [8]byte
			for i := range tc.pings {
				data[0] = byte(i)
				if err := fr.WritePing(false, data); err != nil {
					break // the server already closed the connection
				}
				time.Sleep(tc.every)
			}
			var got *goAway
			deadline := time.After(tc.wait)
		read:
			for {
				select {
				case f, ok := <-frames:
					if !ok {
						break read
					}
					got = f
				case <-deadline:
					break read
				}
				if got != nil {
					break
				}
			}
			if !tc.goAway {
				if got != nil {
					t.Fatalf("a client within the policy got GOAWAY %v %q", got.code, got.debug)
				}
				return
			}
			if got == nil {
				t.Fatal("a ping flood got no GOAWAY")
			}
			if got.code != http2.ErrCodeEnhanceYourCalm || string(got.debug) != "too_many_pings" {
				t.Fatalf("GOAWAY %v %q, want ENHANCE_YOUR_CALM too_many_pings", got.code, got.debug)
			}
			conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			for range frames { // the server closes the connection
			}
			var ne net.Error
			if _, err := conn.Read(make([]byte, 1)); err == nil || errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("connection still open after GOAWAY: %v", err)
			}
		})
	}
}

// goAway is what a GOAWAY frame said.
type goAway struct {
	code  http2.ErrCode
	debug []byte
}
