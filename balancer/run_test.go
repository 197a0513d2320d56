package balancer

import (
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/blockfs/blockfs/blocks"
	"github.com/blockfs/blockfs/errs"
)

// twoNodes is a block map with dn1 full of single-replica blocks and dn2
// empty; moves start but never finish (nothing answers the commands).
func twoNodes(t *testing.T) *blocks.Manager {
	t.Helper()
	m, err := blocks.New(blocks.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"dn1", "dn2"} {
		if err := m.Register(blocks.Datanode{ID: id, Addr: id + ":1", Capacity: 100 * mb}); err != nil {
			t.Fatal(err)
		}
	}
	m.Heartbeat("dn1", 100*mb, 80*mb, 0)
	for id := uint64(1); id <= 8; id++ {
		m.SetExpected(id, 1, 7, 1, false)
		m.SetPipeline(id, []string{"dn1"})
		m.IncrementalReport("dn1", []blocks.Replica{{BlockID: id, GenStamp: 1, Length: 10 * mb, Inode: 7}}, nil)
		m.SetExpected(id, 1, 7, 1, true)
	}
	return m
}

// TestRunnerRefusals: thresholds out of (0, 100] are refused; a second
// run while one runs is refused naming who started it; a closed gate
// refuses a start and fails a running run; stop ends a run and withdraws
// its moves.
func TestRunnerRefusals(t *testing.T) {
	defer goleak.VerifyNone(t)
	m := twoNodes(t)
	var mu sync.Mutex
	var closed error
	setGate := func(err error) { mu.Lock(); closed = err; mu.Unlock() }
	r := New(Config{Blocks: m, Tick: time.Millisecond, Settle: time.Millisecond, Gate: func() error { mu.Lock(); defer mu.Unlock(); return closed }})
	defer r.Close()
	for _, th := range []float64{0, -5, 100.01} {
		if _, err := r.Start(Request{Threshold: th}); !errs.Is(err, errs.Invalid) {
			t.Fatalf("threshold %v: %v", th, err)
		}
	}
	if _, err := r.Start(Request{Threshold: 10, MaxIterations: -1}); !errs.Is(err, errs.Invalid) {
		t.Fatalf("negative iterations: %v", err)
	}
	setGate(errs.New(errs.Precondition, "", "", "refused in safe mode"))
	if _, err := r.Start(Request{Threshold: 10}); !errs.Is(err, errs.Precondition) || !strings.Contains(err.Error(), "safe mode") {
		t.Fatalf("closed gate: %v", err)
	}
	setGate(nil)
	st, err := r.Start(Request{Threshold: 10, By: "user/alice"})
	if err != nil || st.State != Running || st.Request.Bandwidth != DefaultBandwidth || st.Request.MaxIterations != DefaultMaxIterations {
		t.Fatalf("start: %+v %v", st, err)
	}
	_, err = r.Start(Request{Threshold: 10, By: "user/bob"})
	if !errs.Is(err, errs.Precondition) || !strings.Contains(err.Error(), "two balancers at once") || !strings.Contains(err.Error(), "user/alice") {
		t.Fatalf("second run: %v", err)
	}
	for m.OpenMoves() == 0 {
		time.Sleep(time.Millisecond)
	}
	st, err = r.Stop()
	if err != nil || st.State != Stopped {
		t.Fatalf("stop: %+v %v", st, err)
	}
	if n := m.OpenMoves(); n != 0 {
		t.Fatalf("%d moves open after stop", n)
	}
	if _, err := r.Stop(); !errs.Is(err, errs.Precondition) {
		t.Fatalf("stop twice: %v", err)
	}
	// A gate that closes mid-run fails it with the gate's reason.
	if _, err := r.Start(Request{Threshold: 10}); err != nil {
		t.Fatal(err)
	}
	for m.OpenMoves() == 0 {
		time.Sleep(time.Millisecond)
	}
	setGate(errs.New(errs.NotLeader, "", "", "this namenode stopped leading"))
	for r.Status().State == Running {
		time.Sleep(time.Millisecond)
	}
	if st := r.Status(); st.State != Failed || !strings.Contains(st.Reason, "stopped leading") || m.OpenMoves() != 0 {
		t.Fatalf("after the gate closed: %+v, %d open moves", st, m.OpenMoves())
	}
}
