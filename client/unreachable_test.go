package client

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/testutil/leaktest"
)

func TestMain(m *testing.M) { leaktest.VerifyTestMain(m) }

// refusedAddr is a loopback address nothing listens on.
func refusedAddr(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	return addr
}

// TestUnreachableGivesUp: a call to namenodes that refuse the connection
// is retried, each retry told to OnRetry, and fails after
// UnreachableRetry with an Unavailable error naming the addresses and
// the refusal, not at its context's deadline; with UnreachableRetry 0 it
// retries until the context ends, as a server's client does.
func TestUnreachableGivesUp(t *testing.T) {
	a, b := refusedAddr(t), refusedAddr(t)
	cfg := DefaultConfig(a, b)
	cfg.MinBackoff, cfg.MaxBackoff, cfg.UnreachableRetry = time.Millisecond, 10*time.Millisecond, 100*time.Millisecond
	attempts := 0
	cfg.OnRetry = func(op, addr string, attempt int, err error) {
		attempts++
		if op != "GetFileInfo" || (addr != a && addr != b) || attempt != attempts || !errs.Is(err, errs.Unavailable) {
			t.Errorf("OnRetry(%q, %q, %d, %v)", op, addr, attempt, err)
		}
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = c.Stat(ctx, "/")
	if errs.KindOf(err) != errs.Unavailable || ctx.Err() != nil {
		t.Fatalf("got %v (context: %v), want Unavailable before the deadline", err, ctx.Err())
	}
	for _, want := range []string{"could not connect to any namenode", a, b, "connection refused"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if !IsUnreachable(err) {
		t.Errorf("IsUnreachable(%v) is false", err)
	}
	if attempts < 2 {
		t.Fatalf("%d retries told, want the retries that named both namenodes", attempts)
	}

	cfg.UnreachableRetry, cfg.OnRetry = 0, nil
	c2, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	short, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	if _, err := c2.Stat(short, "/"); errs.KindOf(err) != errs.Timeout || short.Err() == nil {
		t.Fatalf("with no limit: %v, want the context's Timeout", err)
	}
}
