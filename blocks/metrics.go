package blocks

import "github.com/prometheus/client_golang/prometheus"

type collector struct {
	m       *Manager
	nodes   *prometheus.Desc
	refused *prometheus.Desc
	gauge   []gaugeDesc
}

type gaugeDesc struct {
	desc *prometheus.Desc
	val  func(*Stats) float64
}

// NewCollector returns a collector exporting m's Stats as gauges, computed at
// scrape time: blockfs_blocks_datanodes{state}, capacity and used bytes,
// blocks, replicas and the length of every queue, and the counter
// blockfs_blocks_refused_total{reason} of Refusals. Register it with a
// prometheus.Registerer; it holds no state of its own.
func NewCollector(m *Manager) prometheus.Collector {
	g := func(name, help string, val func(*Stats) float64) gaugeDesc {
		return gaugeDesc{prometheus.NewDesc("blockfs_blocks_"+name, help, nil, nil), val}
	}
	return &collector{
		m:     m,
		nodes: prometheus.NewDesc("blockfs_blocks_datanodes", "Registered datanodes by state.", []string{"state"}, nil),
		refused: prometheus.NewDesc("blockfs_blocks_refused_total",
			"Datanode and bad-block reports refused or ignored, by reason (register_conflict, bad_report, bad_block_report, unrequested_verified, recovery_commit).",
			[]string{"reason"}, nil),
		gauge: []gaugeDesc{
			g("capacity_bytes", "Capacity of live datanodes.", func(s *Stats) float64 { return float64(s.Capacity) }),
			g("used_bytes", "Bytes used on live datanodes.", func(s *Stats) float64 { return float64(s.Used) }),
			g("expected", "Blocks the namespace expects.", func(s *Stats) float64 { return float64(s.Blocks) }),
			g("replicas", "Good replicas of expected blocks on live datanodes.", func(s *Stats) float64 { return float64(s.Replicas) }),
			g("under_replicated", "Blocks waiting to be scheduled for replication.", func(s *Stats) float64 { return float64(s.UnderReplicated) }),
			g("over_replicated", "Blocks with more good replicas than expected.", func(s *Stats) float64 { return float64(s.OverReplicated) }),
			g("pending_replication", "Replications scheduled and not yet completed, with blocks whose replicas a writer left still being written (until they report).", func(s *Stats) float64 { return float64(s.PendingReplication) }),
			g("pending_deletion", "Replica deletions not yet sent to datanodes.", func(s *Stats) float64 { return float64(s.PendingDeletion) }),
			g("corrupt_replicas", "Corrupt or stale replicas not yet scheduled for deletion.", func(s *Stats) float64 { return float64(s.Corrupt) }),
			g("unknown", "Reported blocks the namespace does not know.", func(s *Stats) float64 { return float64(s.Unknown) }),
			g("suspect", "Blocks with a replica a client reported bad, awaiting re-verification.", func(s *Stats) float64 { return float64(s.Suspect) }),
			g("verifying", "Blocks with a verify command outstanding.", func(s *Stats) float64 { return float64(s.Verifying) }),
			g("mis_replicated", "Blocks whose replicas sit in fewer racks than the placement policy wants.", func(s *Stats) float64 { return float64(s.MisReplicated) }),
		},
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.nodes
	ch <- c.refused
	for _, g := range c.gauge {
		ch <- g.desc
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	st := c.m.Stats()
	ch <- prometheus.MustNewConstMetric(c.nodes, prometheus.GaugeValue, float64(st.Live), "live")
	ch <- prometheus.MustNewConstMetric(c.nodes, prometheus.GaugeValue, float64(st.Dead), "dead")
	for _, g := range c.gauge {
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, g.val(&st))
	}
	for r := Refusal(0); r < numRefusals; r++ {
		ch <- prometheus.MustNewConstMetric(c.refused, prometheus.CounterValue, float64(c.m.Refused(r)), r.String())
	}
}
