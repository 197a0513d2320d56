package namenode

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/blockfs/blockfs/audit"
	"github.com/blockfs/blockfs/blocks"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/namenode/config"
	"github.com/blockfs/blockfs/namenode/safemode"
	"github.com/blockfs/blockfs/security"
)

// Config configures a Namenode. Start from DefaultConfig, change what you
// need, and call Validate (Start does). Each section has its own
// DefaultXConfig and Validate.
type Config struct {
	// ID is this namenode's stable Raft server id.
	ID string
	// DataDir holds raft.db (log and stable store), snapshots/.
	DataDir string
	// GRPCAddr is the address to listen on for gRPC ("127.0.0.1:0" picks a
	// port). Ignored when a listener is passed to Start.
	GRPCAddr string
	// AdvertiseGRPC is the gRPC address other nodes and clients use; defaults
	// to the bound address.
	AdvertiseGRPC string
	// HTTPAddr serves /metrics, /healthz, the web UI and WebHDFS; ""
	// disables it.
	HTTPAddr string
	// MaxRequestSize bounds one gRPC request in bytes; larger requests get
	// ResourceExhausted.
	MaxRequestSize int
	// WorkInterval is how often liveness and replication work run.
	WorkInterval time.Duration
	// Now is the node's wall clock, stamped into commands and tokens; nil
	// means time.Now. Tests set it to make one node's clock jump; nothing
	// a namenode decides by its own clock depends on it agreeing with its
	// peers' (leases are timed on the leader's monotonic clock, leases.Watch).
	Now func() time.Time

	Raft      RaftConfig
	Namespace NamespaceConfig
	Leases    LeaseConfig
	Auth      AuthConfig
	Limits    LimitsConfig
	// Tokens configures block tokens: mode (per-block, per-request,
	// cached), lifetime, key rotation, clock skew. NodeID is set from ID.
	Tokens security.Config
	// Blocks configures the block map: liveness, placement, replication.
	Blocks blocks.Config
	// SafeMode is a new leader's safe mode (package safemode).
	SafeMode safemode.Config
	// TrashInterval is how long deleted files stay in the trash (package
	// trash; 0: no trash, deletes are for good), as HDFS's
	// fs.trash.interval; clients read it from ClusterStatus. The leader
	// checkpoints and expunges every TrashCheckpoint (0: TrashInterval).
	TrashInterval, TrashCheckpoint time.Duration
	// TopologyFile maps datanodes to racks (package topology; "" puts
	// every datanode in /default-rack), reread by ReloadTopology (SIGHUP).
	TopologyFile string
	// HostsExclude names datanodes to decommission (package decommission:
	// one id or address a line), reread by ReloadExclude (SIGHUP) and
	// Admin.RefreshNodes; "" for none.
	HostsExclude string
	// Audit configures the audit log (package audit): off unless it has
	// a path or Stdout.
	Audit audit.Config
	// HDFSRPC is the HDFS door (Hadoop IPC for HDFS clients); off unless
	// it has an address.
	HDFSRPC config.HDFSRPC

	Logger   *slog.Logger
	Registry *prometheus.Registry // nil: a fresh registry per node
}

// DefaultConfig returns a Config with the defaults a production node uses.
func DefaultConfig() Config {
	return Config{
		GRPCAddr:       "127.0.0.1:9000",
		HTTPAddr:       "127.0.0.1:9100",
		MaxRequestSize: 4 << 20,
		WorkInterval:   time.Second,
		Raft:           DefaultRaftConfig(),
		Namespace:      DefaultNamespaceConfig(),
		Leases:         DefaultLeaseConfig(),
		Auth:           DefaultAuthConfig(),
		Limits:         DefaultLimitsConfig(),
		Tokens:         security.DefaultConfig(),
		Blocks:         blocks.DefaultConfig(),
		Audit:          audit.DefaultConfig(),
		SafeMode:       safemode.DefaultConfig(),
	}
}

// Validate reports the first problem with c.
func (c *Config) Validate() error {
	switch {
	case c.ID == "":
		return badConfig("namenode.Config.Validate", "id is required")
	case c.DataDir == "":
		return badConfig("namenode.Config.Validate", "data dir is required")
	case c.MaxRequestSize <= 0:
		return badConfig("namenode.Config.Validate", "max request size must be positive")
	case c.WorkInterval <= 0:
		return badConfig("namenode.Config.Validate", "work interval must be positive")
	case c.Raft.Insecure && c.Auth.Mode != AuthSimple:
		return badConfig("namenode.Config.Validate", "insecure raft applies only to auth simple; under mtls Raft always runs over mTLS")
	case c.TrashInterval < 0 || c.TrashCheckpoint < 0 || c.TrashCheckpoint > c.TrashInterval:
		return badConfig("namenode.Config.Validate", "--trash-interval %v and --trash-checkpoint-interval %v: want 0 or more, the checkpoint interval at most the trash interval", c.TrashInterval, c.TrashCheckpoint)
	case c.Blocks.UnknownReplicaGrace < 4*time.Second: // PutFile takes a prepared file for half of it; clients keep them 2 s
		return badConfig("namenode.Config.Validate", "unknown replica grace %v: want at least 4s, or PutFiles of files prepared ahead are refused", c.Blocks.UnknownReplicaGrace)
	}
	if err := c.Raft.Validate(); err != nil {
		return err
	}
	if err := c.Namespace.Validate(); err != nil {
		return err
	}
	if err := c.Leases.Validate(); err != nil {
		return err
	}
	if err := c.Auth.Validate(); err != nil {
		return err
	}
	if err := c.Limits.Validate(); err != nil {
		return err
	}
	if err := c.Tokens.Validate(); err != nil {
		return err
	}
	if err := c.Audit.Validate(); err != nil {
		return err
	}
	if err := c.HDFSRPC.Validate(); err != nil {
		return err
	}
	if err := c.SafeMode.Validate(); err != nil {
		return err
	}
	return c.Blocks.Validate()
}

// badConfig is the error of the Validate method op.
func badConfig(op, format string, a ...any) error {
	return errs.Newf(errs.Invalid, op, "", format, a...)
}

// The configuration's sections, defined in package config.
type (
	Peer            = config.Peer
	RaftConfig      = config.Raft
	NamespaceConfig = config.Namespace
	LeaseConfig     = config.Leases
	AuthConfig      = config.Auth
	LimitsConfig    = config.Limits
	AuthMode        = config.AuthMode
)

// The authentication modes (config.AuthMode).
const (
	AuthSimple = config.AuthSimple
	AuthMTLS   = config.AuthMTLS
)

// DefaultRaftConfig returns config.DefaultRaft().
func DefaultRaftConfig() RaftConfig { return config.DefaultRaft() }

// DefaultNamespaceConfig returns config.DefaultNamespace().
func DefaultNamespaceConfig() NamespaceConfig { return config.DefaultNamespace() }

// DefaultLeaseConfig returns config.DefaultLeases().
func DefaultLeaseConfig() LeaseConfig { return config.DefaultLeases() }

// DefaultAuthConfig returns config.DefaultAuth().
func DefaultAuthConfig() AuthConfig { return config.DefaultAuth() }

// DefaultLimitsConfig returns config.DefaultLimits().
func DefaultLimitsConfig() LimitsConfig { return config.DefaultLimits() }

// ParseAuthMode parses --auth: "simple" or "mtls".
func ParseAuthMode(s string) (AuthMode, error) { return config.ParseAuthMode(s) }

// ParsePeers parses "id=raftaddr/grpcaddr,..." as given to --peers.
func ParsePeers(s string) ([]Peer, error) { return config.ParsePeers(s) }
