package main

import (
	"math"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestPercentile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		samples []float64
		p, want float64
	}{
		{"single", []float64{7}, 99, 7},
		{"median odd", []float64{3, 1, 2}, 50, 2},
		{"median even averages middle pair", []float64{4, 1, 3, 2}, 50, 2.5},
		{"p0 is min", []float64{5, 9, 1}, 0, 1},
		{"p100 is max", []float64{5, 9, 1}, 100, 9},
		{"p99 of 1..100 interpolates", seq(100), 99, 99.01},
		{"p99 of 1..101", seq(101), 99, 100},
		{"p50 of 1..100", seq(100), 50, 50.5},
		{"clamps above 100", []float64{1, 2}, 150, 2},
	} {
		if got := Percentile(tc.samples, tc.p); !near(got, tc.want) {
			t.Errorf("%s: Percentile(%v) = %v, want %v", tc.name, tc.p, got, tc.want)
		}
	}
	if !math.IsNaN(Percentile(nil, 50)) {
		t.Error("percentile of no samples should be NaN")
	}
}

func seq(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(i + 1)
	}
	return out
}

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		samples                []float64
		mean, median, std, p99 float64
	}{
		{"constant", []float64{2, 2, 2, 2}, 2, 2, 0, 2},
		{"classic stddev", []float64{2, 4, 4, 4, 5, 5, 7, 9}, 5, 4.5, 2, 8.86},
		{"two", []float64{1, 3}, 2, 2, 1, 2.98},
		{"outlier moves mean not median", []float64{1, 1, 1, 1, 96}, 20, 1, 38, 92.2},
	} {
		s := Summarize(tc.samples)
		if s.N != len(tc.samples) || !near(s.Mean, tc.mean) || !near(s.Median, tc.median) || !near(s.StdDev, tc.std) || math.Abs(s.P99-tc.p99) > 1e-6 {
			t.Errorf("%s: Summarize = %+v, want mean %v median %v std %v p99 %v", tc.name, s, tc.mean, tc.median, tc.std, tc.p99)
		}
	}
	if s := Summarize(seq(101)); s.P25 != 26 || s.P75 != 76 {
		t.Errorf("quartiles of 1..101: p25 %v p75 %v, want 26 and 76", s.P25, s.P75)
	}
	if s := Summarize(nil); s.N != 0 || s.Mean != 0 {
		t.Errorf("empty: %+v", s)
	}
	in := []float64{3, 1, 2}
	Summarize(in)
	if in[0] != 3 {
		t.Error("Summarize sorted its input in place")
	}
}
