package main

import (
	"math"
	"slices"
	"time"
)

// Summary describes a set of latency samples, in milliseconds. Every field
// is computed from the exact samples; percentiles are never averaged.
type Summary struct {
	N      int
	Mean   float64
	Median float64
	StdDev float64 // population standard deviation
	P25    float64 // the quartiles: the plot's band
	P75    float64
	P99    float64
	Min    float64
	Max    float64
}

// ms converts a duration to float milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Summarize computes the summary of samples (ms). It does not modify
// samples. An empty slice gives the zero Summary.
func Summarize(samples []float64) Summary {
	n := len(samples)
	if n == 0 {
		return Summary{}
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	var sum float64
	for _, v := range s {
		sum += v
	}
	mean := sum / float64(n)
	var sq float64
	for _, v := range s {
		sq += (v - mean) * (v - mean)
	}
	return Summary{
		N:      n,
		Mean:   mean,
		Median: percentileSorted(s, 50),
		StdDev: math.Sqrt(sq / float64(n)),
		P25:    percentileSorted(s, 25),
		P75:    percentileSorted(s, 75),
		P99:    percentileSorted(s, 99),
		Min:    s[0],
		Max:    s[n-1],
	}
}

// Percentile returns the p-th percentile (0..100) of samples, interpolating
// linearly between the closest ranks (numpy's default, Hyndman-Fan type 7).
func Percentile(samples []float64, p float64) float64 {
	s := slices.Clone(samples)
	slices.Sort(s)
	return percentileSorted(s, p)
}

func percentileSorted(s []float64, p float64) float64 {
	switch n := len(s); {
	case n == 0:
		return math.NaN()
	case n == 1:
		return s[0]
	}
	p = min(max(p, 0), 100)
	rank := p / 100 * float64(len(s)-1)
	lo := int(math.Floor(rank))
	hi := min(lo+1, len(s)-1)
	frac := rank - float64(lo)
	return s[lo] + frac*(s[hi]-s[lo])
}
