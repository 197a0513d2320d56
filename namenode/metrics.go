package namenode

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/blockfs/blockfs/blocks"
)

// metrics are the namenode's Prometheus collectors, registered on the
// node's own registry (no global state).
type metrics struct {
	rpc      *prometheus.HistogramVec
	proposal prometheus.Histogram
	// recoveries counts lease recoveries this node started as leader, by
	// why: "client" (recoverLease, or a takeover) or "hard-limit" /
	// "restart" (the lease monitor).
	recoveries *prometheus.CounterVec
	// refused counts the requests a limit (LimitsConfig) refused, by
	// limit.
	refused *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, n *Namenode) *metrics {
	m := &metrics{
		rpc: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "blockfs_namenode_rpc_duration_seconds",
			Help:    "Latency of namenode gRPC calls by method and status code.",
			Buckets: prometheus.ExponentialBuckets(50e-6, 2, 18),
		}, []string{"method", "code"}),
		proposal: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "blockfs_namenode_proposal_batch_commands",
			Help:    "Commands the leader coalesced into one Raft entry.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 10),
		}),
		recoveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "blockfs_namenode_lease_recoveries_total",
			Help: "Lease recoveries this namenode proposed as leader, by why: client (recoverLease or a takeover), hard-limit, or restart (a stalled recovery started again).",
		}, []string{"why"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "blockfs_namenode_limit_refusals_total",
			Help: "Requests refused with ResourceExhausted by a limit, by limit: report_bytes_per_datanode, report_bytes_total, complete_waits_per_user, complete_waits_total.",
		}, []string{"limit"}),
	}
	gauge := func(name, help string, fn func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, fn)
	}
	reg.MustRegister(m.rpc, m.proposal, m.recoveries, m.refused,
		gauge("blockfs_namenode_raft_state", "Raft state: 0 follower, 1 candidate, 2 leader, 3 shutdown.", func() float64 {
			s, _, _, _, _ := n.raftStats()
			return float64(s)
		}),
		gauge("blockfs_namenode_raft_term", "Current Raft term.", func() float64 { _, t, _, _, _ := n.raftStats(); return float64(t) }),
		gauge("blockfs_namenode_raft_commit_index", "Raft commit index.", func() float64 { _, _, c, _, _ := n.raftStats(); return float64(c) }),
		gauge("blockfs_namenode_raft_applied_index", "Index applied to the FSM.", func() float64 { _, _, _, a, _ := n.raftStats(); return float64(a) }),
		gauge("blockfs_namenode_raft_last_log_index", "Last Raft log index.", func() float64 { _, _, _, _, l := n.raftStats(); return float64(l) }),
		gauge("blockfs_namenode_complete_waits", "Complete calls waiting for replica reports now.", func() float64 {
			if n.completeWaits == nil {
				return 0
			}
			return float64(n.completeWaits.InUse())
		}),
		blocks.NewCollector(n.blocks),
	)
	return m
}
