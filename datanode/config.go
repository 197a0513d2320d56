package datanode

import (
	"crypto/tls"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"

	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/node/serve"
	"github.com/blockfs/blockfs/lbm"
	"github.com/blockfs/blockfs/security"
)

// IDFile is the name of the file, in the first data dir, that holds the
// datanode's id so it survives restarts.
const IDFile = "datanode-id"

// BadNodeKey is the trailer key naming the pipeline member that failed a
// write. It must equal client.BadNodeKey (a test checks it); it is repeated
// here so the server does not import the client library.
const BadNodeKey = "blockfs-bad-node"

// BadOffsetKey is the trailer key giving the block offset of the chunk a
// failed write blames, when it blames one.
const BadOffsetKey = "blockfs-bad-offset"

// Config configures a Datanode. Start from DefaultConfig and call Validate
// (Start does).
type Config struct {
	// ID is the datanode's stable id. Empty: the id stored in
	// <DataDirs[0]>/datanode-id, or a new uuid written there.
	ID string
	// DataDirs are the block store's data directories.
	DataDirs []string
	// GRPCAddr is the DataService listen address ("127.0.0.1:0" picks a
	// port). Ignored when a listener is passed to Start.
	GRPCAddr string
	// AdvertiseAddr is the address namenodes hand to clients; defaults to
	// the bound address.
	AdvertiseAddr string
	// HTTPAddr serves /metrics and /healthz; "" disables it.
	HTTPAddr string
	// HDFSDataAddr serves HDFS's DataTransferProtocol (hdfsdata_door.go);
	// "" (the default) disables it. It must be a loopback address unless
	// HDFSDataInsecure is set: the door is plain TCP.
	HDFSDataAddr string
	// HDFSDataInsecure lets the HDFS data door bind a non-loopback address
	// (logged as a warning at start).
	HDFSDataInsecure bool
	// Namenodes are the gRPC addresses of every namenode; the datanode
	// registers with and reports to all of them. Empty runs a standalone
	// datanode (tests).
	Namenodes []string
	// HeartbeatInterval is the time between heartbeats to each namenode.
	HeartbeatInterval time.Duration
	// IncrementalReportDelay is how long a received or deleted replica
	// waits before its incremental block report is sent, to batch more
	// into it. 0 (the default, as HDFS's
	// dfs.blockreport.incremental.intervalMsec) sends at once: a writer's
	// Complete waits for the "received" report, and the reports still
	// batch themselves, as those arriving while one is in flight go out
	// together in the next.
	IncrementalReportDelay time.Duration
	// FollowerReportDelay is the least delay of the incremental reports to
	// a namenode that last said it is not the leader (its heartbeat or
	// registration reply): only the leader's Complete waits for them, so
	// the followers' reports gather for this long and go out together,
	// one RPC per follower per delay rather than about one per block
	// under many small writes. A follower that takes over learns the
	// blocks of the last delay that much later; a namenode not yet heard
	// from is treated as the leader. 0 sends to followers as to the
	// leader.
	FollowerReportDelay time.Duration
	// FullReportInterval sends a full block report this often besides the
	// ones at registration; 0 disables the periodic report.
	FullReportInterval time.Duration
	// ReportPartBlocks is the most replicas one full block report request
	// names; a larger report goes in parts under one report id (a report
	// must fit the namenode's request size limit, 4 MiB by default, and a
	// reported replica takes at most about 60 bytes).
	ReportPartBlocks int
	// RPCTimeout bounds each call to a namenode.
	RPCTimeout time.Duration
	// KeyRefreshPeriod is how often a background loop asks every namenode
	// for its public keys, besides the keys heartbeat replies carry.
	KeyRefreshPeriod time.Duration
	// KeyRefreshInterval is the least time between two refreshes that
	// tokens naming an unknown key ask for: however many such tokens come,
	// they share one refresh per interval.
	KeyRefreshInterval time.Duration
	// KeyRefreshTimeout bounds one namenode's answer in a refresh; the
	// namenodes are asked in parallel.
	KeyRefreshTimeout time.Duration
	// KeyRefreshWait is the longest a token check naming an unknown key
	// waits for that refresh before refusing the call as Unauthenticated.
	KeyRefreshWait time.Duration
	// ChunkSize is the size of ReadBlock messages and of the packets a
	// re-replication sends (rounded down to whole checksum chunks).
	ChunkSize int
	// ReplicationBandwidth bounds the bytes per second this datanode
	// sends in datanode-to-datanode copies (re-replication, decommission,
	// maintenance), shared by all of them (pace.go); 0, the default, is
	// unlimited: the namenode's MaxReplicationStreams bounds them then.
	ReplicationBandwidth int64
	// MaxPacketBytes bounds the data of one WriteBlock packet.
	MaxPacketBytes int
	// MaxInflightBytes caps the packet bytes all write streams together
	// hold between receiving a packet and acknowledging it; a stream that
	// would pass it stops receiving until others acknowledge.
	MaxInflightBytes int64
	// StreamIdleTimeout ends a WriteBlock call whose peer has neither sent
	// nor taken anything for this long.
	StreamIdleTimeout time.Duration
	// ReadIdleTimeout ends a ReadBlock call whose reader has taken nothing
	// (no Send completed) for this long, with DeadlineExceeded.
	ReadIdleTimeout time.Duration
	// ReadBufferBytesPerUser and ReadBufferBytesTotal bound the buffer
	// bytes ReadBlock streams may hold, per user and in all: each stream
	// reserves what it may hold (two messages) when it starts, and one
	// that does not fit is refused with ResourceExhausted.
	ReadBufferBytesPerUser, ReadBufferBytesTotal int64
	// RBWExpiry drops a replica being written that no stream, pipeline
	// recovery or block recovery claimed for this long (its writer and the
	// namenode's lease recovery both gave up on it).
	RBWExpiry time.Duration
	// MaxBlockSize bounds header.block.length of a write.
	MaxBlockSize uint64
	// CommandWorkers run delete and replicate commands.
	CommandWorkers int
	// Store configures the block store; Dirs, Registerer and Logger are
	// filled in by Start. An empty KeyFile means <DataDirs[0]>/server.key.
	Store lbm.Config
	// Security configures token verification (clock skew, maximum token
	// size, the verified-token cache). Tokens are always checked.
	Security security.Config
	// Auth is how callers are identified: AuthMTLS (the default: the
	// client certificate's SPIFFE URI; needs TLS, and the datanode's own id
	// is its certificate's name) or AuthSimple (request metadata; only when
	// asked for: a datanode without TLS refuses to start otherwise).
	Auth string
	// TrustDomain is the cluster's SPIFFE trust domain.
	TrustDomain string
	// TLS, if set, is the DataService's server TLS config (mTLS).
	TLS *tls.Config
	// DialOptions are added to every outgoing connection (to namenodes and
	// downstream datanodes); the default is insecure transport. Under mTLS
	// they must carry the datanode's certificate.
	DialOptions []grpc.DialOption

	// Serve bounds the gRPC connections (streams, pings) and the HTTP
	// requests (header, idle and progress timeouts): see serve.Limits.
	Serve serve.Limits

	Logger   *slog.Logger
	Registry *prometheus.Registry // nil: a fresh registry per node
}

// DefaultConfig returns the defaults a production datanode uses.
func DefaultConfig() Config {
	return Config{
		Security:               security.DefaultConfig(),
		GRPCAddr:               "127.0.0.1:9200",
		HTTPAddr:               "127.0.0.1:9300",
		HeartbeatInterval:      3 * time.Second,
		IncrementalReportDelay: 0,
		FollowerReportDelay:    50 * time.Millisecond,
		FullReportInterval:     6 * time.Hour,
		RPCTimeout:             10 * time.Second,
		ReportPartBlocks:       50000,
		KeyRefreshPeriod:       time.Minute,
		KeyRefreshInterval:     200 * time.Millisecond,
		KeyRefreshTimeout:      2 * time.Second,
		KeyRefreshWait:         time.Second,
		ChunkSize:              256 << 10,
		MaxPacketBytes:         4 << 20,
		MaxInflightBytes:       256 << 20,
		StreamIdleTimeout:      time.Minute,
		ReadIdleTimeout:        30 * time.Second,
		ReadBufferBytesPerUser: 64 << 20,
		ReadBufferBytesTotal:   256 << 20,
		RBWExpiry:              2 * time.Hour,
		MaxBlockSize:           1 << 30,
		CommandWorkers:         4,
		Store:                  lbm.DefaultConfig(),
		Auth:                   AuthMTLS,
		TrustDomain:            security.DefaultTrustDomain,
		Serve:                  serve.DefaultLimits(),
	}
}

// Ways of identifying callers (Config.Auth), as on the namenode.
const (
	AuthSimple = "simple"
	AuthMTLS   = "mtls"
)

// Validate reports the first problem with c.
func (c *Config) Validate() error {
	bad := func(format string, a ...any) error {
		return errs.Newf(errs.Invalid, "datanode.Config.Validate", "", format, a...)
	}
	switch {
	case len(c.DataDirs) == 0:
		return bad("at least one data dir is required")
	case c.HeartbeatInterval <= 0:
		return bad("heartbeat interval must be positive")
	case c.IncrementalReportDelay < 0:
		return bad("incremental report delay must be >= 0")
	case c.FollowerReportDelay < 0:
		return bad("follower report delay must be >= 0")
	case c.FullReportInterval < 0:
		return bad("full report interval must be >= 0")
	case c.RPCTimeout <= 0:
		return bad("rpc timeout must be positive")
	case c.ReportPartBlocks <= 0:
		return bad("report part blocks must be positive")
	case c.KeyRefreshPeriod <= 0 || c.KeyRefreshInterval <= 0 || c.KeyRefreshTimeout <= 0 || c.KeyRefreshWait <= 0:
		return bad("key refresh period, interval, timeout and wait must be positive")
	case c.ReplicationBandwidth < 0:
		return bad("replication bandwidth %d must be 0 (unlimited) or positive", c.ReplicationBandwidth)
	case c.ChunkSize <= 0 || c.ChunkSize > 4<<20-1024:
		return bad("chunk size must be in (0, 4 MiB)")
	case c.MaxPacketBytes < 4<<10 || c.MaxPacketBytes > maxRecvMsg-64<<10:
		return bad("max packet bytes must be in [4 KiB, %d]", maxRecvMsg-64<<10)
	case c.MaxInflightBytes < 2*int64(c.MaxPacketBytes):
		return bad("max in-flight bytes %d must be at least two packets (2 x %d)", c.MaxInflightBytes, c.MaxPacketBytes)
	case c.RBWExpiry <= 0:
		return bad("rbw expiry %v must be positive", c.RBWExpiry)
	case c.StreamIdleTimeout <= 0 || c.ReadIdleTimeout <= 0:
		return bad("stream and read idle timeouts must be positive")
	case c.ReadBufferBytesPerUser < int64(readReservation(c.ChunkSize)) || c.ReadBufferBytesTotal < c.ReadBufferBytesPerUser:
		return bad("read buffer bytes: per user %d must hold one stream (%d) and be at most the total %d", c.ReadBufferBytesPerUser, readReservation(c.ChunkSize), c.ReadBufferBytesTotal)
	case c.MaxBlockSize == 0:
		return bad("max block size must be positive")
	case c.Store.MaxContainerSize > 0 && c.MaxBlockSize > uint64(c.Store.MaxContainerSize):
		// A block lives in one container: a larger one would be taken
		// and then fail at its first byte past the container's size.
		return bad("max block size %d is larger than a container (%d bytes): no container could hold such a block", c.MaxBlockSize, c.Store.MaxContainerSize)
	case c.CommandWorkers < 1:
		return bad("command workers must be >= 1")
	}
	for _, a := range c.Namenodes {
		if a == "" {
			return bad("empty namenode address")
		}
	}
	if err := c.Serve.Validate("datanode.Config.Validate"); err != nil {
		return err
	}
	if err := security.ValidateTrustDomain(c.TrustDomain); err != nil {
		return err
	}
	switch c.Auth {
	case AuthSimple:
	case AuthMTLS:
		if c.TLS == nil || len(c.TLS.Certificates) == 0 {
			return bad("auth mtls (the default) needs TLS: give --tls-ca, --tls-cert and --tls-key, or --auth=simple on a trusted network")
		}
	default:
		return bad("auth %q: want simple or mtls", c.Auth)
	}
	if err := c.Security.Validate(); err != nil {
		return err
	}
	sc := c.storeConfig()
	return sc.Validate()
}

func (c *Config) storeConfig() lbm.Config {
	sc := c.Store
	sc.Dirs = c.DataDirs
	if sc.KeyFile == "" && len(c.DataDirs) > 0 {
		sc.KeyFile = filepath.Join(c.DataDirs[0], "server.key")
	}
	return sc
}
