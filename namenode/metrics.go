package namenode

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/blockfs/blockfs/blocks"
)

// metrics are the namenode's Prometheus collectors, registered on the
// node's own registry (no global state).
type metrics struct {
	rpc      *prometheus.HistogramVec
	fsmApply prometheus.Histogram
	fsmBatch prometheus.Histogram
	proposal prometheus.Histogram
	// recoveries counts lease recoveries this node started as leader, by
	// why: "client" (recoverLease, or a takeover) or "hard-limit" /
	// "restart" (the lease monitor).
	recoveries *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, n *Namenode) *metrics {
	m := &metrics{
		rpc: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "blockfs_namenode_rpc_duration_seconds",
			Help:    "Latency of namenode gRPC calls by method and status code.",
			Buckets: prometheus.ExponentialBuckets(50e-6, 2, 18),
		}, []string{"method", "code"}),
		fsmApply: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "blockfs_namenode_fsm_apply_duration_seconds",
			Help:    "Time to apply one batch of Raft log entries to the FSM.",
			Buckets: prometheus.ExponentialBuckets(5e-6, 2, 18),
		}),
		proposal: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "blockfs_namenode_proposal_batch_commands",
			Help:    "Commands the leader coalesced into one Raft entry.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 10),
		}),
		fsmBatch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "blockfs_namenode_fsm_apply_batch_size",
			Help:    "Log entries per FSM apply batch.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 10),
		}),
		recoveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "blockfs_namenode_lease_recoveries_total",
			Help: "Lease recoveries this namenode proposed as leader, by why: client (recoverLease or a takeover), hard-limit, or restart (a stalled recovery started again).",
		}, []string{"why"}),
	}
	gauge := func(name, help string, fn func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, fn)
	}
	counts := func(i int) func() float64 {
		return func() float64 {
			defer n.fsm.mu.RLock().RUnlock()
			f, d, b := n.fsm.st.tree.Counts()
			return float64([]int{f, d, b}[i])
		}
	}
	leases := func(which int) func() float64 {
		return func() float64 {
			defer n.fsm.mu.RLock().RUnlock()
			h, f, r := n.fsm.st.leases.Counts()
			return float64([]int{h, f, r}[which])
		}
	}
	reg.MustRegister(m.rpc, m.fsmApply, m.fsmBatch, m.proposal, m.recoveries,
		gauge("blockfs_namenode_lease_holders", "Clients holding a lease.", leases(0)),
		gauge("blockfs_namenode_files_under_construction", "Files under a lease (open for writing).", leases(1)),
		gauge("blockfs_namenode_block_recoveries_in_progress", "Block recoveries started and not yet committed.", leases(2)),
		gauge("blockfs_namenode_raft_state", "Raft state: 0 follower, 1 candidate, 2 leader, 3 shutdown.", func() float64 {
			s, _, _, _, _ := n.raftStats()
			return float64(s)
		}),
		gauge("blockfs_namenode_raft_term", "Current Raft term.", func() float64 { _, t, _, _, _ := n.raftStats(); return float64(t) }),
		gauge("blockfs_namenode_raft_commit_index", "Raft commit index.", func() float64 { _, _, c, _, _ := n.raftStats(); return float64(c) }),
		gauge("blockfs_namenode_raft_applied_index", "Index applied to the FSM.", func() float64 { _, _, _, a, _ := n.raftStats(); return float64(a) }),
		gauge("blockfs_namenode_raft_last_log_index", "Last Raft log index.", func() float64 { _, _, _, _, l := n.raftStats(); return float64(l) }),
		gauge("blockfs_namenode_files", "Files in the namespace.", counts(0)),
		gauge("blockfs_namenode_directories", "Directories in the namespace.", counts(1)),
		gauge("blockfs_namenode_blocks", "Blocks in the namespace.", counts(2)),
		blocks.NewCollector(n.blocks),
	)
	return m
}
