package lbm

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are per Store; nothing is global. They are registered on
// Config.Registerer when it is non-nil.
type metrics struct {
	replaySeconds *prometheus.HistogramVec // per container, label path
	openSeconds   prometheus.Gauge
	containers    prometheus.Gauge
	corruptReads  prometheus.Counter
	bytesRead     prometheus.Counter
	bytesWritten  prometheus.Counter
	failedDirs    prometheus.Gauge
	fullDirs      prometheus.Gauge
	truncations   prometheus.Counter
	setAside      prometheus.Counter
	groupBlocks   prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		replaySeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "blockfs", Subsystem: "lbm", Name: "container_replay_seconds",
			Help:    "Time to replay one container's metadata at startup, by replay path (streaming, buffered-streaming, inmem).",
			Buckets: prometheus.ExponentialBuckets(1e-5, 4, 12),
		}, []string{"path"}),
		openSeconds: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "blockfs", Subsystem: "lbm", Name: "open_seconds",
			Help: "Wall time of the last Open (listing, replay, repair).",
		}),
		containers: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "blockfs", Subsystem: "lbm", Name: "containers",
			Help: "Number of open containers.",
		}),
		corruptReads: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "blockfs", Subsystem: "lbm", Name: "corrupt_reads_total",
			Help: "Block reads that failed their CRC32C check.",
		}),
		bytesRead: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "blockfs", Subsystem: "lbm", Name: "read_bytes_total",
			Help: "Block and chunk CRC table bytes read from data files.",
		}),
		bytesWritten: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "blockfs", Subsystem: "lbm", Name: "written_bytes_total",
			Help: "Block bytes written to data files.",
		}),
		failedDirs: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "blockfs", Subsystem: "lbm", Name: "failed_dirs",
			Help: "Data directories marked failed.",
		}),
		fullDirs: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "blockfs", Subsystem: "lbm", Name: "full_dirs",
			Help: "Data directories that answered a write with ENOSPC and have taken no block since (new blocks go elsewhere; retried every FullRetry).",
		}),
		truncations: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "blockfs", Subsystem: "lbm", Name: "metadata_tail_truncations_total",
			Help: "Torn metadata tails truncated at startup.",
		}),
		setAside: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "blockfs", Subsystem: "lbm", Name: "containers_set_aside_total",
			Help: "Containers whose metadata replay found corruption, renamed aside at startup (their blocks are reported lost).",
		}),
		groupBlocks: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "blockfs", Subsystem: "lbm", Name: "group_commit_blocks",
			Help:    "Small blocks stored by one group commit (Config.GroupCommitMax): the commits that shared its data and metadata syncs.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 9),
		}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.replaySeconds, m.openSeconds, m.containers,
			m.corruptReads, m.bytesRead, m.bytesWritten, m.failedDirs, m.fullDirs, m.truncations, m.setAside, m.groupBlocks} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}
