package datanode

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/blockfs/blockfs/lbm"
)

// metrics are per Datanode, registered on its own registry (lbm's metrics,
// including container_replay_seconds{path}, go on the same registry).
type metrics struct {
	rpc            *prometheus.HistogramVec // method, code
	readBytes      prometheus.Counter
	writeBytes     prometheus.Counter
	readSeconds    prometheus.Histogram
	writeSeconds   prometheus.Histogram
	corrupt        prometheus.Counter
	corruptPackets prometheus.Counter
	idleStreams    prometheus.Counter
	readRefused    *prometheus.CounterVec // reason: per_user, total, idle
	replications   *prometheus.CounterVec // result
	deletes        prometheus.Counter
	heartbeatFails *prometheus.CounterVec // namenode
	resumes        *prometheus.CounterVec // how: a write resumed a replica being written or finalized
	blockRecovery  *prometheus.CounterVec // result: recoveries run as primary
	// lostDownstreams counts HDFS door writes that went on without a
	// failed downstream datanode (write_survive.go).
	lostDownstreams prometheus.Counter
	// writeStreams counts finished WriteBlock calls by how they came:
	// "pipelined" forwarded to a downstream datanode, "direct" did not
	// (the pipeline's last member, or a client's side-by-side write of a
	// small block, client.Config.FanOutMax).
	writeStreams *prometheus.CounterVec // how
}

func newMetrics(reg *prometheus.Registry, d *Datanode) *metrics {
	lat := prometheus.ExponentialBuckets(1e-4, 2, 18)
	m := &metrics{
		rpc: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "blockfs", Subsystem: "datanode", Name: "rpc_seconds",
			Help: "DataService RPC latency by method and status code.", Buckets: lat,
		}, []string{"method", "code"}),
		readBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "blockfs", Subsystem: "datanode", Name: "read_bytes_total",
			Help: "Block bytes sent to readers.",
		}),
		writeBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "blockfs", Subsystem: "datanode", Name: "write_bytes_total",
			Help: "Block bytes stored by writes and replication.",
		}),
		readSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "blockfs", Subsystem: "datanode", Name: "read_block_seconds",
			Help: "Latency of successful ReadBlock calls.", Buckets: lat,
		}),
		writeSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "blockfs", Subsystem: "datanode", Name: "write_block_seconds",
			Help: "Latency of successful WriteBlock calls (whole pipeline acknowledged).", Buckets: lat,
		}),
		corrupt: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "blockfs", Subsystem: "datanode", Name: "corrupt_replicas_total",
			Help: "Local replicas found corrupt (CRC mismatch) and reported to the namenodes.",
		}),
		corruptPackets: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "blockfs", Subsystem: "datanode", Name: "corrupt_packets_total",
			Help: "WriteBlock packets refused because a chunk did not match its CRC32C (damaged on the way here).",
		}),
		idleStreams: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "blockfs", Subsystem: "datanode", Name: "idle_streams_total",
			Help: "WriteBlock and ReadBlock calls ended because the peer was idle past the stream idle timeout.",
		}),
		readRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "blockfs", Subsystem: "datanode", Name: "read_refused_total",
			Help: "ReadBlock calls refused or ended by a read limit, by reason: per_user and total (--read-buffer-bytes-*: ResourceExhausted at the start), idle (--read-idle-timeout: DeadlineExceeded).",
		}, []string{"reason"}),
		replications: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "blockfs", Subsystem: "datanode", Name: "replications_total",
			Help: "Replica transfers run for replicate commands and TransferBlock, by result.",
		}, []string{"result"}),
		deletes: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "blockfs", Subsystem: "datanode", Name: "deleted_blocks_total",
			Help: "Replicas deleted on a namenode's command.",
		}),
		heartbeatFails: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "blockfs", Subsystem: "datanode", Name: "heartbeat_failures_total",
			Help: "Failed heartbeats, by namenode address.",
		}, []string{"namenode"}),
		resumes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "blockfs", Subsystem: "datanode", Name: "write_resumes_total",
			Help: "Writes that resumed a local replica (pipeline recovery, append), by what it was: rbw (being written) or finalized (copied into a new version).",
		}, []string{"replica"}),
		blockRecovery: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "blockfs", Subsystem: "datanode", Name: "block_recoveries_total",
			Help: "Block recoveries this datanode ran as primary, by result: committed, deleted (no replica held the block), failed.",
		}, []string{"result"}),
		lostDownstreams: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "blockfs", Subsystem: "datanode", Name: "write_lost_downstreams_total",
			Help: "HDFS data transfer door writes that went on without a downstream datanode that failed (the block is re-replicated once complete).",
		}),
	}
	m.writeStreams = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "blockfs", Subsystem: "datanode", Name: "write_streams_total",
		Help: "Successful WriteBlock calls, by whether they forwarded to a downstream datanode (pipelined) or not (direct).",
	}, []string{"how"})
	reg.MustRegister(m.lostDownstreams, m.writeStreams)
	reg.MustRegister(m.rpc, m.readBytes, m.writeBytes, m.readSeconds, m.writeSeconds, m.corrupt, m.corruptPackets, m.idleStreams, m.readRefused,
		m.replications, m.deletes, m.heartbeatFails, m.resumes, m.blockRecovery)
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "blockfs", Subsystem: "datanode", Name: "inflight_bytes",
			Help: "Packet bytes write streams hold between receipt and acknowledgement (capped by --max-inflight-bytes).",
		}, func() float64 { return float64(d.inflightBytes.used.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "blockfs", Subsystem: "datanode", Name: "inflight_limit_bytes",
			Help: "The cap on in-flight packet bytes (--max-inflight-bytes).",
		}, func() float64 { return float64(d.inflightBytes.max) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "blockfs", Subsystem: "datanode", Name: "read_buffer_bytes",
			Help: "Buffer bytes ReadBlock streams hold reserved (capped by --read-buffer-bytes-per-user and --read-buffer-bytes-total).",
		}, func() float64 { return float64(d.readBufs.InUse()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "blockfs", Subsystem: "datanode", Name: "replicas_being_written",
			Help: "Replicas being written (RBW): open streams and replicas left for pipeline or block recovery.",
		}, func() float64 { return float64(d.rbws.len()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "blockfs", Subsystem: "datanode", Name: "failed_volumes",
			Help: "Data directories marked failed by the block store.",
		}, func() float64 { return float64(len(d.storeOrNil().FailedDirs())) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "blockfs", Subsystem: "datanode", Name: "blocks",
			Help: "Replicas held.",
		}, func() float64 { return float64(d.storeOrNil().NumBlocks()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "blockfs", Subsystem: "datanode", Name: "replay_seconds",
			Help: "Wall time of the block store's startup replay.",
		}, func() float64 { return d.storeOrNil().OpenStats().Duration.Seconds() }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "blockfs", Subsystem: "datanode", Name: "replay_containers",
			Help:        "Containers replayed at startup, by replay path.",
			ConstLabels: prometheus.Labels{"path": "inmem"},
		}, func() float64 { return float64(d.storeOrNil().OpenStats().InmemContainers) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "blockfs", Subsystem: "datanode", Name: "replay_containers",
			Help:        "Containers replayed at startup, by replay path.",
			ConstLabels: prometheus.Labels{"path": "streaming"},
		}, func() float64 { return float64(d.storeOrNil().OpenStats().StreamingContainers) }),
	)
	return m
}

// safeStore wraps a possibly nil store for the gauge funcs.
type safeStore struct{ s *lbm.Store }

func (d *Datanode) storeOrNil() safeStore { return safeStore{d.store} }

func (s safeStore) FailedDirs() []string {
	if s.s == nil {
		return nil
	}
	return s.s.FailedDirs()
}

func (s safeStore) NumBlocks() int {
	if s.s == nil {
		return 0
	}
	return len(s.s.Blocks())
}

func (s safeStore) OpenStats() lbm.OpenStats {
	if s.s == nil {
		return lbm.OpenStats{}
	}
	return s.s.OpenStats()
}
