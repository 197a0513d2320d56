package safemode

import (
	"strings"
	"testing"
	"time"

	"github.com/blockfs/blockfs/errs"
)

func TestMode(t *testing.T) {
	t0 := time.Unix(1000, 0)
	cfg := Config{Threshold: 0.9, Extension: 10 * time.Second, MinDatanodes: 2}
	type step struct {
		at     time.Duration // after t0
		counts Counts
		on     bool // after the update
	}
	full := Counts{Safe: 100, Total: 100, Datanodes: 3}
	tests := []struct {
		name   string
		manual bool
		steps  []step
	}{
		{"a full map at takeover leaves at once", false, []step{{0, full, false}}},
		{"an empty namespace leaves at once", false, []step{{0, Counts{Datanodes: 2}, false}}},
		{"filling: threshold, then the extension", false, []step{
			{0, Counts{Safe: 0, Total: 100, Datanodes: 3}, true},
			{time.Second, Counts{Safe: 89, Total: 100, Datanodes: 3}, true},
			{2 * time.Second, Counts{Safe: 90, Total: 100, Datanodes: 3}, true},
			{11 * time.Second, full, true},
			{12 * time.Second, full, false},
		}},
		{"a dip restarts the extension", false, []step{
			{0, Counts{Safe: 0, Total: 100, Datanodes: 3}, true},
			{time.Second, full, true},
			{5 * time.Second, Counts{Safe: 50, Total: 100, Datanodes: 3}, true},
			{6 * time.Second, full, true},
			{15 * time.Second, full, true},
			{16 * time.Second, full, false},
		}},
		{"too few datanodes", false, []step{
			{0, Counts{Safe: 100, Total: 100, Datanodes: 1}, true},
			{time.Minute, Counts{Safe: 100, Total: 100, Datanodes: 1}, true},
		}},
		{"manual stays", true, []step{{0, full, true}, {time.Hour, full, true}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := New(cfg)
			m.Leave()
			m.Enter(tc.manual)
			for i, s := range tc.steps {
				m.Update(s.counts, t0.Add(s.at))
				if m.On() != s.on {
					t.Fatalf("step %d: on %v, want %v (%s)", i, m.On(), s.on, m.Status(t0.Add(s.at)).Message)
				}
			}
		})
	}
}

// TestManualHold: a new leader's start does not lift an operator's hold;
// Leave lifts both; Refuse names the marker and is a Precondition.
func TestManualHold(t *testing.T) {
	m := New(DefaultConfig())
	m.Enter(true)
	m.Enter(false)
	m.Update(Counts{Safe: 1, Total: 1}, time.Now())
	if !m.On() || !m.Status(time.Now()).Manual {
		t.Fatal("a startup Enter lifted the manual hold")
	}
	err := m.Refuse("Create", time.Now())
	if !errs.IsSafeMode(err) || errs.KindOf(err) != errs.Precondition || !strings.Contains(err.Error(), "manually") {
		t.Fatalf("refusal: %v", err)
	}
	m.Leave()
	if m.On() || m.Status(time.Now()).Message != "Safe mode is OFF." {
		t.Fatalf("after Leave: %+v", m.Status(time.Now()))
	}
	if errs.IsSafeMode(errs.New(errs.Precondition, "Create", "/f", "other")) {
		t.Fatal("another precondition taken for safe mode")
	}
}

// TestStartsOn: a namenode starts in safe mode and needs the extension
// even if its first count is full (its log may still be replaying).
func TestStartsOn(t *testing.T) {
	m := New(Config{Threshold: 1, Extension: time.Second})
	t0 := time.Now()
	m.Update(Counts{}, t0)
	if !m.On() {
		t.Fatal("left safe mode at the first count after start")
	}
	m.Update(Counts{}, t0.Add(time.Second))
	if m.On() {
		t.Fatal("still in safe mode after the extension")
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []Config{{Threshold: -0.1}, {Threshold: 1.5}, {Threshold: 0.5, Extension: -1}, {Threshold: 0.5, MinDatanodes: -1}} {
		if errs.KindOf(c.Validate()) != errs.Invalid {
			t.Errorf("%+v accepted", c)
		}
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
}
