package namenode

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/blockfs/blockfs/audit"
	"github.com/blockfs/blockfs/blocks"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/base/chunks"
	"github.com/blockfs/blockfs/namenode/safemode"
	"github.com/blockfs/blockfs/security"
)

// Peer is one namenode of the initial cluster, as given to --peers.
type Peer struct {
	ID       string
	RaftAddr string
	GRPCAddr string
}

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
	// TopologyFile maps datanodes to racks (package topology; "" puts
	// every datanode in /default-rack), reread by ReloadTopology (SIGHUP).
	TopologyFile string
	// Audit configures the audit log (package audit): off unless it has
	// a path or Stdout.
	Audit audit.Config

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
	if c.Raft.Insecure && c.Auth.Mode != AuthSimple {
		return badConfig("namenode.Config.Validate", "insecure raft applies only to auth simple; under mtls Raft always runs over mTLS")
	}
	if err := c.Tokens.Validate(); err != nil {
		return err
	}
	if err := c.Audit.Validate(); err != nil {
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

// RaftConfig is how the namenode takes part in Raft.
type RaftConfig struct {
	// Addr is the Raft TCP transport's bind address.
	Addr string
	// Advertise is the Raft address peers dial and the Raft configuration
	// records; defaults to the bound address. Set it to a stable name
	// where the bound IP changes across restarts.
	Advertise string
	// Transport, if set, replaces the TCP transport (tests use raft's
	// in-memory transport to cut links between chosen nodes). Addr is then
	// ignored; the transport's LocalAddr is the node's Raft address.
	Transport raft.Transport
	// Insecure lets a node without TLS serve plaintext Raft on a
	// non-loopback address (--insecure-raft; it logs an error at start).
	// Without it such a node refuses to start: plaintext Raft has no
	// authentication, and one AppendEntries from anyone rewrites the
	// namespace. A node with TLS always runs Raft over mTLS.
	Insecure bool
	// HandshakeTimeout bounds each Raft connection's TLS handshake.
	HandshakeTimeout time.Duration
	// Heartbeat and Election are Raft's heartbeat and election timeouts.
	Heartbeat time.Duration
	Election  time.Duration
	// SnapshotEvery is Raft's SnapshotThreshold: log entries between
	// snapshots (and the trailing log kept after one).
	SnapshotEvery uint64
	// ApplyTimeout bounds one proposal's wait for its entry to apply.
	ApplyTimeout time.Duration
	// MaxInflightApplies bounds the Raft entries the leader has in flight;
	// proposals that arrive meanwhile are coalesced into one entry of at
	// most MaxBatch commands.
	MaxInflightApplies int
	MaxBatch           int

	// Bootstrap makes this node bootstrap a new cluster when it has no Raft
	// state: with Peers, all of them become voters (every peer may bootstrap
	// with the same list); without, a single-node cluster.
	Bootstrap bool
	Peers     []Peer
	// Join is the gRPC address of a running namenode; a node with no Raft
	// state asks it (via Admin.AddServer) to add this node.
	Join string
}

// DefaultRaftConfig returns the Raft section's defaults.
func DefaultRaftConfig() RaftConfig {
	return RaftConfig{
		Addr:               "127.0.0.1:7000",
		HandshakeTimeout:   10 * time.Second,
		Heartbeat:          500 * time.Millisecond,
		Election:           1000 * time.Millisecond,
		SnapshotEvery:      8192,
		ApplyTimeout:       10 * time.Second,
		MaxInflightApplies: 1,
		MaxBatch:           256,
	}
}

// Validate reports the first problem with the Raft section.
func (c *RaftConfig) Validate() error {
	switch {
	case c.Addr == "" && c.Transport == nil:
		return badConfig("namenode.RaftConfig.Validate", "raft address is required")
	case c.Bootstrap && c.Join != "":
		return badConfig("namenode.RaftConfig.Validate", "bootstrap and join are exclusive")
	case c.HandshakeTimeout <= 0:
		return badConfig("namenode.RaftConfig.Validate", "raft handshake timeout must be positive")
	case c.Heartbeat <= 0 || c.Election <= 0:
		return badConfig("namenode.RaftConfig.Validate", "raft heartbeat %v and election %v timeouts must be positive", c.Heartbeat, c.Election)
	case c.ApplyTimeout <= 0:
		return badConfig("namenode.RaftConfig.Validate", "apply timeout must be positive")
	case c.MaxInflightApplies <= 0 || c.MaxBatch <= 0:
		return badConfig("namenode.RaftConfig.Validate", "max in-flight applies and max batch must be positive")
	}
	for _, p := range c.Peers {
		if p.ID == "" || p.RaftAddr == "" || p.GRPCAddr == "" {
			return badConfig("namenode.RaftConfig.Validate", "peer %+v needs id, raft and grpc addresses", p)
		}
	}
	return nil
}

// NamespaceConfig is what the namespace allows and assumes: who the
// superuser is, the defaults and limits of new files, and when Complete
// may close a file.
type NamespaceConfig struct {
	// Superuser may do anything; by default "root" (cmd/namenode: the user
	// that started the process). Supergroup's members are superusers too.
	// Both must be the same on every namenode.
	Superuser  string
	Supergroup string
	// DefaultReplication and DefaultBlockSize apply to files created
	// without them.
	DefaultReplication uint32
	DefaultBlockSize   uint64
	// BytesPerChecksum is the cluster's checksum chunk: a writer checksums
	// every chunk of this many bytes of a block (AddBlockResponse carries
	// it). A power of two in [chunks.Min, chunks.Max] (internal/base/chunks).
	BytesPerChecksum uint32
	// MinBlockSize and MaxBlockSize bound the block size a Create may ask
	// for, as HDFS's dfs.namenode.fs-limits.{min,max}-block-size do; the
	// block size must also be a multiple of BytesPerChecksum. Files created
	// before a change keep their block size.
	MinBlockSize uint64
	MaxBlockSize uint64
	// MaxListPage bounds the entries of one ListStatus reply.
	MaxListPage int
	// MinReplication is how many reported replicas each block of a file
	// needs before Complete closes it (HDFS's dfs.namenode.replication.min);
	// 0 closes without waiting. CompleteWait bounds how long one Complete
	// call waits for the reports before it answers Unavailable (the client
	// retries).
	MinReplication int
	CompleteWait   time.Duration
}

// DefaultNamespaceConfig returns the namespace section's defaults.
func DefaultNamespaceConfig() NamespaceConfig {
	return NamespaceConfig{
		Superuser:          "root",
		Supergroup:         "supergroup",
		DefaultReplication: 3,
		DefaultBlockSize:   64 << 20,
		// HDFS's minimum is 1 MiB; ours is 1 KiB because the HDFS-1081
		// experiment (loadgen) writes files of up to 1000 blocks of 1 KiB.
		// The maximum is the datanodes' default largest block (datanode
		// Config.MaxBlockSize), so a block the namenode allows is one a
		// default datanode accepts.
		BytesPerChecksum: 512,
		MinBlockSize:     1 << 10,
		MaxBlockSize:     1 << 30,
		MaxListPage:      1000,
		MinReplication:   1,
		CompleteWait:     5 * time.Second,
	}
}

// Validate reports the first problem with the namespace section.
func (c *NamespaceConfig) Validate() error {
	if err := chunks.CheckSize("namenode.NamespaceConfig.Validate", c.BytesPerChecksum); err != nil {
		return err
	}
	switch {
	case c.Superuser == "":
		return badConfig("namenode.NamespaceConfig.Validate", "superuser is required")
	case c.DefaultReplication < 1 || c.DefaultReplication > 32:
		return badConfig("namenode.NamespaceConfig.Validate", "default replication %d out of 1..32", c.DefaultReplication)
	case c.MinBlockSize == 0 || c.MinBlockSize > c.MaxBlockSize:
		return badConfig("namenode.NamespaceConfig.Validate", "block size limits [%d, %d]: want 0 < min <= max", c.MinBlockSize, c.MaxBlockSize)
	case c.MaxBlockSize < uint64(c.BytesPerChecksum):
		return badConfig("namenode.NamespaceConfig.Validate", "max block size %d is below bytes per checksum %d: no block size is allowed", c.MaxBlockSize, c.BytesPerChecksum)
	case c.DefaultBlockSize == 0:
		return badConfig("namenode.NamespaceConfig.Validate", "default block size must be positive")
	case c.MaxListPage <= 0:
		return badConfig("namenode.NamespaceConfig.Validate", "max list page must be positive")
	case c.MinReplication < 0 || c.MinReplication > int(c.DefaultReplication) || (c.MinReplication > 0 && c.CompleteWait <= 0):
		return badConfig("namenode.NamespaceConfig.Validate", "min replication %d must be in 0..default replication %d, with a positive complete wait", c.MinReplication, c.DefaultReplication)
	}
	if msg := c.blockSizeProblem(c.DefaultBlockSize); msg != "" {
		return badConfig("namenode.NamespaceConfig.Validate", "default block size %d: %s", c.DefaultBlockSize, msg)
	}
	return nil
}

// blockSizeProblem says what is wrong with block size bs under c's limits,
// or returns "": the rule is internal/base/chunks' BlockSizeProblem.
func (c *NamespaceConfig) blockSizeProblem(bs uint64) string {
	return chunks.BlockSizeProblem(bs, c.MinBlockSize, c.MaxBlockSize, c.BytesPerChecksum)
}

// LeaseConfig sets the writers' lease limits (docs/ARCHITECTURE.md,
// "Leases and recovery"). A holder that has not renewed for SoftLimit may
// lose its files to another client; after HardLimit the leader recovers
// them. A block recovery not reported within RecoveryTimeout starts again
// with another primary. The leader checks every CheckInterval.
type LeaseConfig struct {
	SoftLimit       time.Duration
	HardLimit       time.Duration
	RecoveryTimeout time.Duration
	CheckInterval   time.Duration
}

// DefaultLeaseConfig returns HDFS's lease limits.
func DefaultLeaseConfig() LeaseConfig {
	return LeaseConfig{
		SoftLimit:       time.Minute,
		HardLimit:       20 * time.Minute,
		RecoveryTimeout: time.Minute,
		CheckInterval:   2 * time.Second,
	}
}

// Validate reports the first problem with the lease section.
func (c *LeaseConfig) Validate() error {
	if c.SoftLimit <= 0 || c.HardLimit < c.SoftLimit || c.RecoveryTimeout <= 0 || c.CheckInterval <= 0 {
		return badConfig("namenode.LeaseConfig.Validate", "lease limits: soft %v must be positive and at most hard %v; recovery timeout %v and check interval %v positive",
			c.SoftLimit, c.HardLimit, c.RecoveryTimeout, c.CheckInterval)
	}
	return nil
}

// AuthMode is how callers are identified.
type AuthMode uint8

// The ways of identifying callers. The zero value is mTLS.
const (
	// AuthMTLS names the caller by its client certificate's SPIFFE URI
	// (spiffe://<trust domain>/<role>/<name>); it needs TLS.
	AuthMTLS AuthMode = iota
	// AuthSimple trusts the blockfs-user and blockfs-role request
	// metadata, like HDFS simple auth: trusted loopback networks only.
	AuthSimple
)

var authModeNames = [...]string{AuthMTLS: "mtls", AuthSimple: "simple"}

func (m AuthMode) String() string {
	if int(m) < len(authModeNames) {
		return authModeNames[m]
	}
	return fmt.Sprintf("auth(%d)", m)
}

// ParseAuthMode parses "mtls" or "simple".
func ParseAuthMode(s string) (AuthMode, error) {
	for m, name := range authModeNames {
		if s == name {
			return AuthMode(m), nil
		}
	}
	return 0, errs.Newf(errs.Invalid, "namenode.ParseAuthMode", s, "auth %q: want mtls or simple", s)
}

// AuthConfig is how the namenode knows who calls it.
type AuthConfig struct {
	// Mode is how callers are identified (the default: mTLS).
	Mode AuthMode
	// TLS, if set, is the server's TLS config (mTLS: it must require and
	// verify client certificates); PeerTLS is what this node uses to dial
	// other namenodes.
	TLS     *tls.Config
	PeerTLS *tls.Config
	// TrustDomain is the cluster's SPIFFE trust domain: under mTLS every
	// caller's certificate must name spiffe://<TrustDomain>/<role>/<name>.
	TrustDomain string
	// GroupFile is the group mapping (security.GroupMapping; "" for none):
	// users' groups come only from it, reloaded by ReloadGroups (SIGHUP).
	GroupFile string
}

// DefaultAuthConfig returns mTLS in the default trust domain (the TLS
// configs are the deployment's to give).
func DefaultAuthConfig() AuthConfig {
	return AuthConfig{Mode: AuthMTLS, TrustDomain: security.DefaultTrustDomain}
}

// Validate reports the first problem with the auth section.
func (c *AuthConfig) Validate() error {
	if err := security.ValidateTrustDomain(c.TrustDomain); err != nil {
		return err
	}
	switch c.Mode {
	case AuthSimple:
	case AuthMTLS:
		if c.TLS == nil {
			return badConfig("namenode.AuthConfig.Validate", "auth mtls (the default) needs TLS: give --tls-ca, --tls-cert and --tls-key, or --auth=simple on a trusted network")
		}
		if c.PeerTLS == nil {
			return badConfig("namenode.AuthConfig.Validate", "auth mtls needs the peer TLS config too: Raft and calls to other namenodes use it")
		}
	default:
		return badConfig("namenode.AuthConfig.Validate", "auth %v: want simple or mtls", c.Mode)
	}
	return nil
}

// ParsePeers parses "id=raftaddr/grpcaddr,..." as given to --peers.
func ParsePeers(s string) ([]Peer, error) {
	var out []Peer
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		id, addrs, ok := strings.Cut(item, "=")
		raft, grpcAddr, ok2 := strings.Cut(addrs, "/")
		if !ok || !ok2 || id == "" || raft == "" || grpcAddr == "" {
			return nil, fmt.Errorf("peer %q: want id=raft_addr/grpc_addr", item)
		}
		out = append(out, Peer{ID: id, RaftAddr: raft, GRPCAddr: grpcAddr})
	}
	return out, nil
}
