package fairshare

import (
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/base/ratelimit"
	"github.com/blockfs/blockfs/security"
)

// TestAdmission: the write rate limit refuses first, the scheduler backs
// a heavy writer off, exempt users pass both, reads are never refused;
// each refusal is an Exhausted error with a retry hint, counted by rpc.
func TestAdmission(t *testing.T) {
	l := &load{d: busy}
	reg := prometheus.NewRegistry()
	a := NewAdmission(ratelimit.Config{Rate: 1, Burst: 3, MaxKeys: 100}, Config{Busy: time.Microsecond, HalfLife: time.Second, Load: l.read},
		func(u string) bool { return u == "root" }, reg)
	user := func(n string) security.Identity { return security.Identity{Role: security.RoleUser, Name: n} }
	const mkdirs = "/blockfs.ClientService/Mkdirs"
	tests := []struct {
		who     string
		write   bool
		tick    bool // end a window before the call
		refused string
	}{
		{"alice", true, false, ""},
		{"alice", true, false, ""},
		{"alice", true, false, ""},
		{"alice", true, false, "write rate"}, // burst of 3 spent
		{"bob", false, true, ""},             // bob reads: the lightest caller
		{"alice", false, true, ""},           // reads are never refused
		{"root", true, true, ""},             // exempt
		{"root", true, false, ""},
		{"root", true, false, ""},
		{"root", true, false, ""},
	}
	for i, tt := range tests {
		if tt.tick {
			a.sched.Tick(time.Now())
		}
		err := a.Admit(user(tt.who), mkdirs, tt.write)
		if (err != nil) != (tt.refused != "") {
			t.Fatalf("call %d (%s): %v, want refused %q", i, tt.who, err, tt.refused)
		}
		if err == nil {
			continue
		}
		var e *errs.Error
		if !errors.As(err, &e) || e.Kind != errs.Exhausted || e.RetryAfter <= 0 {
			t.Fatalf("call %d: %v is not Exhausted with a retry hint", i, err)
		}
	}
	if got := testutil.ToFloat64(a.limited.WithLabelValues("Mkdirs")); got != 1 {
		t.Fatalf("rate-limited counted %v, want 1", got)
	}
	// The scheduler alone (no write rate): alice is the only writer, bob a
	// lighter caller, the server loaded. Within a few windows alice's
	// throttle (a bucket one token deep at Rate 1) backs her off.
	a = NewAdmission(ratelimit.Config{}, Config{Busy: time.Microsecond, HalfLife: time.Second, Rate: 1, Load: l.read},
		func(u string) bool { return u == "root" }, prometheus.NewRegistry())
	for range 3 {
		if err := a.Admit(user("alice"), mkdirs, true); err != nil {
			t.Fatalf("alice's write refused before any window ended: %v", err)
		}
	}
	for range 3 {
		a.Admit(user("bob"), mkdirs, false)
		a.sched.Tick(time.Now())
	}
	var err error
	for range 2 { // the first may take the bucket's one token
		err = a.Admit(user("alice"), mkdirs, true)
	}
	var e *errs.Error
	if !errors.As(err, &e) || e.Kind != errs.Exhausted || e.RetryAfter <= 0 {
		t.Fatalf("heavy alice beside bob on a loaded server: %v, want backed off with a hint", err)
	}
	if got := testutil.ToFloat64(a.backedOff.WithLabelValues("Mkdirs")); got < 1 {
		t.Fatalf("backoffs counted %v, want at least 1", got)
	}
	if err := a.Admit(user("bob"), mkdirs, true); err != nil {
		t.Fatalf("light bob's write refused: %v", err)
	}
	if err := a.Admit(user("root"), mkdirs, true); err != nil {
		t.Fatalf("the exempt superuser's write refused: %v", err)
	}
}
