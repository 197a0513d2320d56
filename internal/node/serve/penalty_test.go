package serve

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/time/rate"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/security"
)

// TestPenaltyBudget: the debt a connection and its caller run up past the
// budget, how it is paid off, and that it stops at maxDebt. Time is given,
// not read.
func TestPenaltyBudget(t *testing.T) {
	box := newPenaltyBox(Limits{RefusalRate: 10, RefusalBurst: 5}, nil)
	conn := func() *penalizedConn {
		return &penalizedConn{box: box, lim: rate.NewLimiter(box.rate, box.burst), closed: make(chan struct{})}
	}
	t0 := time.Unix(1000, 0)
	a, a2, b := conn(), conn(), conn()
	for range 5 {
		a.charge("user:alice", t0)
	}
	if d := a.debt(t0); d != 0 {
		t.Fatalf("within the burst: debt %v, want 0", d)
	}
	for range 5 {
		a.charge("user:alice", t0)
	}
	if d := a.debt(t0); d != 500*time.Millisecond {
		t.Fatalf("5 refusals past the burst at 10/s: debt %v, want 500ms", d)
	}
	if d := a.debt(t0.Add(200 * time.Millisecond)); d != 300*time.Millisecond {
		t.Fatalf("200ms later: debt %v, want 300ms", d)
	}
	// Another connection of the same caller owes the caller's debt from
	// its first refusal on; another caller owes nothing.
	a2.charge("user:alice", t0)
	if d := a2.debt(t0); d != 600*time.Millisecond {
		t.Fatalf("alice's second connection: debt %v, want the caller's 600ms", d)
	}
	b.charge("user:bob", t0)
	if d := b.debt(t0); d != 0 {
		t.Fatalf("bob: debt %v, want 0", d)
	}
	for range 1000 {
		a.charge("user:alice", t0)
	}
	if d := a.debt(t0); d > maxDebt+time.Second/10 {
		t.Fatalf("debt %v grew past maxDebt %v", d, maxDebt)
	}
}

// TestRefusedConnectionIsSlowed: a client refused in a loop is read more
// slowly (the delay counter rises) once past its budget, while another
// caller's connection to the same server is never delayed; a server with
// the budget off delays nobody.
func TestRefusedConnectionIsSlowed(t *testing.T) {
	for _, tc := range []struct {
		name      string
		rate      float64
		wantDelay bool
	}{
		{"budget", 20, true},
		{"off", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			l := testLimits()
			l.MaxConcurrentStreams = 16
			l.RefusalRate, l.RefusalBurst = tc.rate, 5
			srv, dial := serveForTest(t, l, reg, func(s *Server) { api.RegisterAdminServer(s, api.UnimplementedAdminServer{}) })
			as := func(user string) context.Context {
				return metadata.AppendToOutgoingContext(context.Background(), security.UserKey, user)
			}
			delayed := func() float64 { return testutil.ToFloat64(srv.box.delayed) }

			// bob's connection: served, never delayed.
			bob := healthpb.NewHealthClient(dial())
			if _, err := bob.Check(as("bob"), &healthpb.HealthCheckRequest{}); err != nil {
				t.Fatal(err)
			}
			// alice asks for safe mode, which only the superuser may, 40 times.
			alice := api.NewAdminClient(dial())
			for range 40 {
				_, err := alice.SafeMode(as("alice"), &api.SafeModeRequest{})
				if status.Code(err) != codes.PermissionDenied {
					t.Fatalf("alice: %v, want PermissionDenied", err)
				}
			}
			if got := delayed() > 0; got != tc.wantDelay {
				t.Fatalf("alice's connection delayed %v s after 40 refusals, want delayed=%v", delayed(), tc.wantDelay)
			}
			for range 20 {
				if _, err := bob.Check(as("bob"), &healthpb.HealthCheckRequest{}); err != nil {
					t.Fatal(err)
				}
			}
			// Of the two connections, only alice's was ever delayed.
			var conns, slowed int
			srv.box.conns.Range(func(_, v any) bool {
				conns++
				if v.(*penalizedConn).delays.Load() > 0 {
					slowed++
				}
				return true
			})
			if want := map[bool][2]int{true: {2, 1}, false: {0, 0}}[tc.wantDelay]; [2]int{conns, slowed} != want {
				t.Fatalf("%d connections tracked, %d of them delayed; want %v", conns, slowed, want)
			}
		})
	}
}

// TestDelegatedRefusalsNotCharged: a datanode's connection carries many
// WebHDFS users' delegated calls, so their refusals are not charged to it;
// its own are, as any caller's.
func TestDelegatedRefusalsNotCharged(t *testing.T) {
	box := newPenaltyBox(Limits{RefusalRate: 1, RefusalBurst: 1}, nil)
	c := &penalizedConn{box: box, lim: rate.NewLimiter(box.rate, box.burst), closed: make(chan struct{})}
	ctx := context.WithValue(context.Background(), penaltyKey{}, c)
	dn := security.WithIdentity(ctx, security.Identity{Role: security.RoleDatanode, Name: "dn1"})
	asAlice := security.WithRedirect(security.WithIdentity(ctx, security.Identity{Role: security.RoleUser, Name: "alice"}), security.Redirect{User: "alice"})
	for range 10 {
		observeRefusal(asAlice, codes.PermissionDenied)
	}
	if d := c.debt(time.Now()); d != 0 {
		t.Fatalf("after 10 delegated refusals the datanode's connection owes %v, want 0", d)
	}
	for range 10 {
		observeRefusal(dn, codes.NotFound) // not a refusal
	}
	if d := c.debt(time.Now()); d != 0 {
		t.Fatalf("NotFound charged: debt %v", d)
	}
	for range 10 {
		observeRefusal(dn, codes.PermissionDenied)
	}
	if d := c.debt(time.Now()); d == 0 {
		t.Fatal("the datanode's own refusals were not charged")
	}
}
