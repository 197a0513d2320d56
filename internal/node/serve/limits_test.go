package serve

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	"github.com/blockfs/blockfs/security"
)

// serveForTest serves a gRPC server with l (simple auth; register adds
// services, nil for none) on loopback until t ends, and returns it and a
// dialer of new connections to it (closed when t ends).
func serveForTest(t *testing.T, l Limits, reg prometheus.Registerer, register func(*Server)) (*Server, func() *grpc.ClientConn) {
	t.Helper()
	authz := security.NewAuthorizer(security.AuthConfig{Simple: true, Registry: prometheus.NewRegistry()})
	srv := NewGRPC(nil, func(string, string, time.Duration) {}, authz, l, reg)
	if register != nil {
		register(srv)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	GRPC(srv, lis, &wg, slog.New(slog.DiscardHandler))
	t.Cleanup(func() { srv.Stop(); wg.Wait() })
	return srv, func() *grpc.ClientConn {
		cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		return cc
	}
}

// testLimits are small limits for the tests.
func testLimits() Limits {
	l := DefaultLimits()
	l.MaxConcurrentStreams = 2
	l.HTTPProgressTimeout = 50 * time.Millisecond
	return l
}

// TestMaxConcurrentStreams: a connection holding its limit of streams gets
// no more (the next call waits and the refusal is counted), another
// connection is still served, and the waiting call runs once a stream
// ends.
func TestMaxConcurrentStreams(t *testing.T) {
	reg := prometheus.NewRegistry()
	_, dial := serveForTest(t, testLimits(), reg, nil)
	ctx, cancel := context.WithCancel(metadata.AppendToOutgoingContext(context.Background(), security.UserKey, "alice"))
	defer cancel()
	a := healthpb.NewHealthClient(dial())
	var held []context.CancelFunc
	for range 2 { // Watch streams stay open until canceled
		sctx, scancel := context.WithCancel(ctx)
		held = append(held, scancel)
		w, err := a.Watch(sctx, &healthpb.HealthCheckRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Recv(); err != nil { // the stream is open on the server
			t.Fatal(err)
		}
	}
	third := make(chan error, 1)
	go func() {
		_, err := a.Check(ctx, &healthpb.HealthCheckRequest{})
		third <- err
	}()
	// Another connection is served while the first is full.
	b := healthpb.NewHealthClient(dial())
	if _, err := b.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("another connection: %v", err)
	}
	select {
	case err := <-third:
		t.Fatalf("a third stream on a full connection ran: %v", err)
	default:
	}
	if got := metricValue(t, reg, "blockfs_grpc_streams_at_limit_total"); got != 1 {
		t.Fatalf("streams at limit %v, want 1", got)
	}
	held[0]() // one stream ends: the waiting call runs
	if err := <-third; err != nil {
		t.Fatalf("the waiting call: %v", err)
	}
	held[1]()
}

// metricValue sums the counters of reg's metric family name.
func metricValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var v float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				v += m.GetCounter().GetValue()
			}
		}
	}
	return v
}

// TestHTTPStalledBody: a request whose body stops arriving fails its
// handler's read after the progress timeout (counted), and the server
// serves other requests meanwhile; a body that keeps moving is read
// whole however long it takes.
func TestHTTPStalledBody(t *testing.T) {
	reg := prometheus.NewRegistry()
	authz := security.NewAuthorizer(security.AuthConfig{Simple: true, Registry: prometheus.NewRegistry()})
	read := make(chan error, 1)
	var wg sync.WaitGroup
	srv, lis, err := StartHTTP(HTTPConfig{
		Addr: "127.0.0.1:0", Registry: reg, Authz: authz, Limits: testLimits(),
		Routes: map[string]Route{"GET /{$}": {Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n, err := io.Copy(io.Discard, r.Body)
			read <- err
			if err == nil {
				fmt.Fprint(w, n)
			}
		})}},
	}, &wg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Close(); wg.Wait() }()

	// A CREATE-like upload that sends 5 of its 1000 bytes and stalls.
	conn, err := net.Dial("tcp", lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /?user.name=alice HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nhello")
	if err := <-read; !isTimeout(err) {
		t.Fatalf("stalled body read: %v, want a deadline error", err)
	}
	if got := metricValue(t, reg, "blockfs_http_stalled_total"); got != 1 {
		t.Fatalf("stalled %v, want 1", got)
	}
	resp, err := http.Get("http://" + lis.Addr().String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("healthz during a stall: %d", resp.StatusCode)
	}

	// A body that moves in pieces, each within the timeout, is read whole:
	// each piece is sent only after the server has taken the last (the
	// pipe blocks until it is read).
	pr, pw := io.Pipe()
	go func() {
		for range 8 {
			pw.Write([]byte(strings.Repeat("x", 100)))
		}
		pw.Close()
	}()
	req, _ := http.NewRequest("GET", "http://"+lis.Addr().String()+"/?user.name=alice", bufio.NewReader(pr))
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := <-read; err != nil || string(b) != "800" {
		t.Fatalf("moving body: %v, %q", err, b)
	}
	http.DefaultClient.CloseIdleConnections()
}
