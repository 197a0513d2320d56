package leases

import (
	"testing"
	"time"
)

func TestLeaseWatch(t *testing.T) {
	t0 := time.Now()
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	a := Holder{Client: "a", RenewedMs: 100}
	b := Holder{Client: "b", RenewedMs: 100}
	var w Watch
	steps := []struct {
		name    string
		term    uint64
		holders []Holder
		now     time.Duration
		want    map[string]time.Duration
	}{
		{"first sight starts the watch", 5, []Holder{a, b}, 0, map[string]time.Duration{"a": 0, "b": 0}},
		{"silence grows on the monotonic clock", 5, []Holder{a, b}, 3 * time.Second, map[string]time.Duration{"a": 3 * time.Second, "b": 3 * time.Second}},
		{"a renewal restarts it", 5, []Holder{{Client: "a", RenewedMs: 900}, b}, 4 * time.Second, map[string]time.Duration{"a": 0, "b": 4 * time.Second}},
		{"a holder gone is forgotten", 5, []Holder{{Client: "a", RenewedMs: 900}}, 5 * time.Second, map[string]time.Duration{"a": time.Second}},
		{"it comes back watched afresh", 5, []Holder{{Client: "a", RenewedMs: 900}, b}, 6 * time.Second, map[string]time.Duration{"a": 2 * time.Second, "b": 0}},
		{"a new leadership starts every holder afresh", 6, []Holder{{Client: "a", RenewedMs: 900}, b}, 7 * time.Second, map[string]time.Duration{"a": 0, "b": 0}},
	}
	for _, s := range steps {
		got := w.Silences(s.term, s.holders, at(s.now))
		if len(got) != len(s.want) {
			t.Fatalf("%s: %v, want %v", s.name, got, s.want)
		}
		for k, d := range s.want {
			if got[k] != d {
				t.Fatalf("%s: %s silent %v, want %v", s.name, k, got[k], d)
			}
		}
	}
}
