package hadoopipc

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are a server's Prometheus collectors.
type Metrics struct {
	calls   *prometheus.CounterVec
	latency *prometheus.HistogramVec
	refused *prometheus.CounterVec
	conns   prometheus.Gauge
}

// NewMetrics registers a server's collectors with reg (nil: unregistered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "blockfs_hadoop_rpc_calls_total",
			Help: "Hadoop IPC calls served, by method and outcome (ok, or the exception's class).",
		}, []string{"method", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "blockfs_hadoop_rpc_seconds",
			Help:    "Time to serve a Hadoop IPC call, by method.",
			Buckets: prometheus.ExponentialBuckets(50e-6, 4, 10),
		}, []string{"method"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "blockfs_hadoop_rpc_refused_connections_total",
			Help: "Hadoop IPC connections ended by the server, by reason (handshake, bad_frame, bad_header, too_many_connections, closed).",
		}, []string{"reason"}),
		conns: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "blockfs_hadoop_rpc_connections",
			Help: "Open Hadoop IPC connections.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.calls, m.latency, m.refused, m.conns)
	}
	return m
}

func (m *Metrics) observe(method string, err error, d time.Duration) {
	outcome := "ok"
	if err != nil {
		outcome = "error"
		var e *Exception
		if errors.As(err, &e) {
			outcome = e.Class
		}
	}
	m.calls.WithLabelValues(method, outcome).Inc()
	m.latency.WithLabelValues(method).Observe(d.Seconds())
}
