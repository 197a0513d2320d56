package hadoopipc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

const testProtocol = "org.example.TestProtocol"

// fakeHandler serves four methods: echo (a StringValue back as it came),
// release (echo as a Releaser that counts its releases in released),
// sleep (echo after the request's number of milliseconds, ended early by
// the connection's end) and fail (an exception naming the request).
type fakeHandler struct{}

func (fakeHandler) Known(m string) bool {
	return m == "echo" || m == "release" || m == "sleep" || m == "fail"
}

// released counts the releases of release's answers.
var released atomic.Int64

type releasing struct{ *wrapperspb.StringValue }

func (releasing) Release() { released.Add(1) }

func (fakeHandler) Serve(ctx context.Context, c *Call) (proto.Message, error) {
	var req wrapperspb.StringValue
	if err := proto.Unmarshal(c.Body, &req); err != nil {
		return nil, err
	}
	switch c.Method {
	case "sleep":
		var ms int
		fmt.Sscan(req.Value, &ms)
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	case "fail":
		return nil, &Exception{Class: "java.io.FileNotFoundException", Message: "File does not exist: " + req.Value}
	case "release":
		return releasing{wrapperspb.String(c.User + ":" + req.Value)}, nil
	}
	return wrapperspb.String(c.User + ":" + req.Value), nil
}

// startServer serves fakeHandler on a loopback port until the test ends.
func startServer(t *testing.T) (*Server, string) {
	t.Helper()
	cfg := DefaultConfig(testProtocol, fakeHandler{})
	cfg.MaxFrame = 4096
	cfg.HandshakeTimeout = 5 * time.Second
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(l) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; !errors.Is(err, ErrClosed) {
			t.Errorf("Serve: %v, want ErrClosed", err)
		}
	})
	return s, l.Addr().String()
}

// leakCheck verifies, after every other cleanup of t (the servers'), that
// t leaves no goroutine behind.
func leakCheck(t *testing.T) {
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
}

func dial(t *testing.T, addr, user, protocol string) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, addr, user, protocol)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func echo(ctx context.Context, c *Client, method, v string) (string, error) {
	var resp wrapperspb.StringValue
	err := c.Call(ctx, method, wrapperspb.String(v), &resp)
	return resp.Value, err
}

func TestClientCalls(t *testing.T) {
	leakCheck(t)
	_, addr := startServer(t)
	c := dial(t, addr, "alice", testProtocol)
	ctx := context.Background()
	cases := []struct {
		name, method, arg string
		want              string
		wantClass         string
	}{
		{name: "echo", method: "echo", arg: "x", want: "alice:x"},
		{name: "empty request", method: "echo", arg: "", want: "alice:"},
		{name: "handler exception", method: "fail", arg: "/nope", wantClass: "java.io.FileNotFoundException"},
		{name: "unknown method", method: "rename3", arg: "a", wantClass: NoSuchMethod},
		{name: "still usable after errors", method: "echo", arg: "y", want: "alice:y"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := echo(ctx, c, tc.method, tc.arg)
			if tc.wantClass != "" {
				var e *Exception
				if !errors.As(err, &e) || e.Class != tc.wantClass {
					t.Fatalf("err = %v, want an exception of class %s", err, tc.wantClass)
				}
				if e.Message == "" {
					t.Errorf("exception %s without a message", e.Class)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestClientReusesFrames: the reader reuses response buffers once a call
// has decoded its frame, so answers of other sizes that follow must not
// change what earlier calls decoded.
func TestClientReusesFrames(t *testing.T) {
	leakCheck(t)
	_, addr := startServer(t)
	c := dial(t, addr, "carol", testProtocol)
	cases := []struct {
		name string
		size int
	}{
		{"large", 3000}, {"small", 10}, {"empty", 0}, {"large again", 2500}, {"mid", 700},
	}
	got := make([]string, len(cases))
	for i, tc := range cases {
		v, err := echo(context.Background(), c, "echo", strings.Repeat(string(rune('a'+i)), tc.size))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got[i] = v
	}
	for i, tc := range cases {
		if want := "carol:" + strings.Repeat(string(rune('a'+i)), tc.size); got[i] != want {
			t.Errorf("%s: answer changed after later calls: %d bytes, want %d", tc.name, len(got[i]), len(want))
		}
	}
}

// TestServerReleases: a response that is a Releaser is answered as any
// other and released once written, once per call.
func TestServerReleases(t *testing.T) {
	leakCheck(t)
	_, addr := startServer(t)
	c := dial(t, addr, "dave", testProtocol)
	before := released.Load()
	const n = 5
	for i := range n {
		got, err := echo(context.Background(), c, "release", fmt.Sprint(i))
		if want := fmt.Sprintf("dave:%d", i); err != nil || got != want {
			t.Fatalf("call %d: got %q, %v; want %q", i, got, err, want)
		}
	}
	// The server releases after its write returns, which may be after
	// the client has read the answer.
	deadline := time.Now().Add(5 * time.Second)
	for released.Load()-before < n && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := released.Load() - before; got != n {
		t.Fatalf("%d releases after %d calls, want %d", got, n, n)
	}
}

// TestClientMultiplexes runs calls at once on one connection, the first
// ones slowest, so the answers come back out of order.
func TestClientMultiplexes(t *testing.T) {
	leakCheck(t)
	_, addr := startServer(t)
	c := dial(t, addr, "bob", testProtocol)
	const n = 20
	var wg sync.WaitGroup
	errc := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			arg := fmt.Sprint((n - i) * 5)
			got, err := echo(context.Background(), c, "sleep", arg)
			if err == nil && got != "bob:"+arg {
				err = fmt.Errorf("call %d: got %q, want %q", i, got, "bob:"+arg)
			}
			if err != nil {
				errc <- err
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
}

func TestClientContextAndClose(t *testing.T) {
	leakCheck(t)
	s, addr := startServer(t)
	c := dial(t, addr, "carol", testProtocol)

	// A call whose context ends returns its error; the connection goes on.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	_, err := echo(ctx, c, "sleep", "5000")
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("timed-out call: %v, want DeadlineExceeded", err)
	}
	if got, err := echo(context.Background(), c, "echo", "after"); err != nil || got != "carol:after" {
		t.Fatalf("after a timed-out call: %q, %v", got, err)
	}

	// Close ends a waiting call with ErrClientClosed, and later calls too.
	errc := make(chan error, 1)
	go func() {
		_, err := echo(context.Background(), c, "sleep", "5000")
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond) // let the call be sent (either order is checked below)
	c.Close()
	if err := <-errc; !errors.Is(err, ErrClientClosed) {
		t.Errorf("call pending at Close: %v, want ErrClientClosed", err)
	}
	if _, err := echo(context.Background(), c, "echo", "x"); !errors.Is(err, ErrClientClosed) {
		t.Errorf("call after Close: %v, want ErrClientClosed", err)
	}

	// The server's end ends the calls of its connections.
	c2 := dial(t, addr, "carol", testProtocol)
	go func() {
		_, err := echo(context.Background(), c2, "sleep", "5000")
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond)
	s.Close()
	if err := <-errc; err == nil {
		t.Error("call pending when the server closed: no error")
	}
}

func TestDialRefused(t *testing.T) {
	leakCheck(t)
	_, addr := startServer(t)
	ctx := context.Background()
	if _, err := Dial(ctx, addr, "", testProtocol); err == nil {
		t.Error("Dial with no user: no error")
	}
	// The server refuses the context: the first call says why, and says it
	// again on the next.
	c := dial(t, addr, "dave", "org.example.OtherProtocol")
	for range 2 {
		_, err := echo(ctx, c, "echo", "x")
		var e *Exception
		if !errors.As(err, &e) || e.Class != NoSuchProtocol {
			t.Fatalf("call on an unknown protocol: %v, want %s", err, NoSuchProtocol)
		}
	}
}
