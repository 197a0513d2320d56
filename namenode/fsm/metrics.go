package fsm

import "github.com/prometheus/client_golang/prometheus"

// metrics are the FSM's Prometheus collectors, on the registerer its
// Config names (no global state).
type metrics struct {
	apply prometheus.Histogram
	batch prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer, f *FSM) *metrics {
	m := &metrics{
		apply: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "blockfs_namenode_fsm_apply_duration_seconds",
			Help:    "Time to apply one batch of Raft log entries to the FSM.",
			Buckets: prometheus.ExponentialBuckets(5e-6, 2, 18),
		}),
		batch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "blockfs_namenode_fsm_apply_batch_size",
			Help:    "Log entries per FSM apply batch.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 10),
		}),
	}
	count := func(name, help string, which func(Counts) int) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 {
			return float64(which(f.Counts()))
		})
	}
	reg.MustRegister(m.apply, m.batch,
		count("blockfs_namenode_lease_holders", "Clients holding a lease.", func(c Counts) int { return c.LeaseHolders }),
		count("blockfs_namenode_files_under_construction", "Files under a lease (open for writing).", func(c Counts) int { return c.FilesUnderConstruction }),
		count("blockfs_namenode_block_recoveries_in_progress", "Block recoveries started and not yet committed.", func(c Counts) int { return c.Recoveries }),
		count("blockfs_namenode_files", "Files in the namespace.", func(c Counts) int { return c.Files }),
		count("blockfs_namenode_directories", "Directories in the namespace.", func(c Counts) int { return c.Directories }),
		count("blockfs_namenode_blocks", "Blocks in the namespace.", func(c Counts) int { return c.Blocks }),
	)
	return m
}
