package fairshare

import (
	"math"
	"runtime/metrics"
	"time"
)

// schedProbe reads the Go runtime's histogram of the time goroutines
// spent runnable before they ran (/sched/latencies:seconds) and gives the
// p99 of the events since its last read: near zero while the process has
// a CPU for all its work, rising as soon as work queues for one. It is
// the whole process's figure, so it counts every server a process holds
// (localcluster's three namenodes share it) and the load of the machine
// it runs on, not only this server's callers. The p99, not a lower
// quantile: what hurts a light caller's tail is a burst of work (a Raft
// commit applied on three nodes) that leaves most wakeups prompt, and the
// tail of the scheduling latency is where such bursts show.
type schedProbe struct {
	sample []metrics.Sample
	prev   []uint64
}

const schedLatencies = "/sched/latencies:seconds"

func newSchedProbe() *schedProbe {
	p := &schedProbe{sample: []metrics.Sample{{Name: schedLatencies}}}
	p.read()
	return p
}

// read returns the p99 scheduling latency since the last read, and
// whether there were at least minSamples events to take it from. Only
// Tick calls it, one at a time.
func (p *schedProbe) read() (time.Duration, bool) {
	metrics.Read(p.sample)
	if p.sample[0].Value.Kind() != metrics.KindFloat64Histogram {
		return 0, false
	}
	h := p.sample[0].Value.Float64Histogram()
	if len(p.prev) != len(h.Counts) {
		p.prev = make([]uint64, len(h.Counts))
	}
	var n uint64
	for i, c := range h.Counts {
		n += c - p.prev[i]
	}
	d := quantile(h, p.prev, n, 0.99)
	copy(p.prev, h.Counts)
	return d, n >= minSamples
}

// quantile is the q quantile of the counts of h above prev (n in all):
// the upper bound of the bucket the ceil(q*n)th event falls in, 0 if
// there is none.
func quantile(h *metrics.Float64Histogram, prev []uint64, n uint64, q float64) time.Duration {
	if n == 0 {
		return 0
	}
	want := max(1, uint64(math.Ceil(q*float64(n))))
	var seen uint64
	for i, c := range h.Counts {
		seen += c - prev[i]
		if seen >= want {
			return time.Duration(min(h.Buckets[i+1], 3600) * float64(time.Second))
		}
	}
	return 0
}
