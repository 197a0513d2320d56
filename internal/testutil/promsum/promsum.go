// Package promsum sums a metric over several registries, for tests that
// count what servers did: a counter's or a gauge's value, or a
// histogram's sample count, over the series whose label matches.
package promsum

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Sum returns metric name summed over gs, over the series whose label
// label satisfies match: counters and gauges by value, histograms by
// sample count.
func Sum(t testing.TB, gs []prometheus.Gatherer, name, label string, match func(string) bool) float64 {
	t.Helper()
	var sum float64
	for _, g := range gs {
		mfs, err := g.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == label && match(l.GetValue()) {
						sum += m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
					}
				}
			}
		}
	}
	return sum
}
