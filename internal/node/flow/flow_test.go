package flow_test

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"

	"go.uber.org/goleak"
	"golang.org/x/net/http2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/blockfs/blockfs/internal/node/flow"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// pingCounter is a listener whose connections count the PING frames (not
// ACKs) the server writes: what gRPC's bandwidth estimator sends on
// receiving DATA.
type pingCounter struct {
	net.Listener
	mu    sync.Mutex
	pings int
	wg    sync.WaitGroup
}

func (l *pingCounter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	r, w := io.Pipe()
	l.wg.Go(func() {
		fr := http2.NewFramer(io.Discard, r)
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				_, _ = io.Copy(io.Discard, r)
				return
			}
			if p, ok := f.(*http2.PingFrame); ok && !p.IsAck() {
				l.mu.Lock()
				l.pings++
				l.mu.Unlock()
			}
		}
	})
	return &teeConn{Conn: c, w: w}, nil
}

type teeConn struct {
	net.Conn
	w *io.PipeWriter
}

func (c *teeConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	_, _ = c.w.Write(p[:n])
	return n, err
}

func (c *teeConn) Close() error {
	_ = c.w.Close()
	return c.Conn.Close()
}

// serverPings sends a 1 MiB request to a server made with sopts from a
// client made with dopts and returns the PINGs the server wrote.
func serverPings(t *testing.T, sopts []grpc.ServerOption, dopts []grpc.DialOption) int {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pc := &pingCounter{Listener: lis}
	srv := grpc.NewServer(append(sopts, grpc.UnknownServiceHandler(func(_ any, s grpc.ServerStream) error {
		var m wrapperspb.BytesValue
		if err := s.RecvMsg(&m); err != nil {
			return err
		}
		return s.SendMsg(&emptypb.Empty{})
	}))...)
	go func() { _ = srv.Serve(pc) }()
	conn, err := grpc.NewClient(lis.Addr().String(), append(dopts, grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := conn.Invoke(context.Background(), "/flow.Test/Put", wrapperspb.Bytes(make([]byte, 1<<20)), new(emptypb.Empty)); err != nil {
			t.Fatal(err)
		}
	}
	_ = conn.Close()
	srv.Stop()
	pc.wg.Wait()
	return pc.pings
}

// TestNoEstimatorPings: with the fixed windows a server answers DATA with
// no PING of its own; with gRPC's defaults it does (the estimator this
// package turns off), which shows the count can see them.
func TestNoEstimatorPings(t *testing.T) {
	if n := serverPings(t, nil, nil); n == 0 {
		t.Fatal("gRPC's default windows sent no PING: the counter cannot see the estimator")
	}
	if n := serverPings(t, flow.ServerOptions(), flow.DialOptions()); n != 0 {
		t.Fatalf("with fixed windows the server sent %d PINGs, want 0", n)
	}
}
