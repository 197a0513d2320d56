package namenode

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/blockfs/blockfs/blocks"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/chunks"
	"github.com/blockfs/blockfs/security"
)

// Peer is one namenode of the initial cluster, as given to --peers.
type Peer struct {
	ID       string
	RaftAddr string
	GRPCAddr string
}

// Config configures a Namenode. Start from DefaultConfig and call Validate.
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
	// RaftAddr is the Raft TCP transport's bind address.
	RaftAddr string
	// AdvertiseRaft is the Raft address peers dial and the Raft
	// configuration records; defaults to the bound address. Set it to a
	// stable name where the bound IP changes across restarts.
	AdvertiseRaft string
	// RaftTransport, if set, replaces the TCP transport (tests use raft's
	// in-memory transport to cut links between chosen nodes). RaftAddr is
	// then ignored; the transport's LocalAddr is the node's Raft address.
	RaftTransport raft.Transport
	// InsecureRaft lets a node without TLS serve plaintext Raft on a
	// non-loopback address (--insecure-raft; it logs an error at start).
	// Without it such a node refuses to start: plaintext Raft has no
	// authentication, and one AppendEntries from anyone rewrites the
	// namespace. A node with TLS always runs Raft over mTLS.
	InsecureRaft bool
	// RaftHandshakeTimeout bounds each Raft connection's TLS handshake.
	RaftHandshakeTimeout time.Duration
	// HTTPAddr serves /metrics; "" disables it.
	HTTPAddr string

	// Bootstrap makes this node bootstrap a new cluster when it has no Raft
	// state: with Peers, all of them become voters (every peer may bootstrap
	// with the same list); without, a single-node cluster.
	Bootstrap bool
	Peers     []Peer
	// Join is the gRPC address of a running namenode; a node with no Raft
	// state asks it (via Admin.AddServer) to add this node.
	Join string

	// Superuser may do anything; by default the user that started the process.
	Superuser    string
	SuperGroup   string
	DefaultRepl  uint32
	DefaultBlock uint64
	// BytesPerChecksum is the cluster's checksum chunk: a writer checksums
	// every chunk of this many bytes of a block (AddBlockResponse carries
	// it). A power of two in [MinBytesPerChecksum, MaxBytesPerChecksum].
	BytesPerChecksum uint32
	// MinBlockSize and MaxBlockSize bound the block size a Create may ask
	// for, as HDFS's dfs.namenode.fs-limits.{min,max}-block-size do; the
	// block size must also be a multiple of BytesPerChecksum. Files created
	// before a change keep their block size.
	MinBlockSize   uint64
	MaxBlockSize   uint64
	MaxListPage    int
	ApplyTimeout   time.Duration
	SnapshotEvery  uint64 // Raft SnapshotThreshold
	RaftHeartbeat  time.Duration
	RaftElection   time.Duration
	Blocks         blocks.Config
	WorkInterval   time.Duration // how often liveness and replication work run
	MaxRequestSize int           // bytes; larger requests get ResourceExhausted
	// MaxInflightApplies bounds the Raft entries the leader has in flight;
	// proposals that arrive meanwhile are coalesced into one entry of at
	// most MaxBatch commands.
	MaxInflightApplies int
	MaxBatch           int

	// Security configures block tokens: Mode (per-block, per-request,
	// cached), lifetime, key rotation, clock skew. NodeID is set from ID.
	Security security.Config
	// Auth is how callers are identified: "mtls" (the default: the client
	// certificate's CN; needs TLS) or "simple" (the blockfs-user request
	// metadata, like HDFS simple auth; only when asked for, with a warning).
	Auth string
	// TLS, if set, is the server's TLS config (mTLS: it must require and
	// verify client certificates); PeerTLS is what this node uses to dial
	// other namenodes.
	TLS     *tls.Config
	PeerTLS *tls.Config
	// TrustDomain is the cluster's SPIFFE trust domain: under mTLS every
	// caller's certificate must name spiffe://<TrustDomain>/<role>/<name>.
	TrustDomain string
	// MinReplication is how many reported replicas each block of a file
	// needs before Complete closes it (HDFS's dfs.namenode.replication.min);
	// 0 closes without waiting. CompleteWait bounds how long one Complete
	// call waits for the reports before it answers Unavailable (the client
	// retries).
	MinReplication int
	CompleteWait   time.Duration
	// Leases (docs/ARCHITECTURE.md, "Leases and recovery"). A holder that
	// has not renewed for LeaseSoftLimit may lose its files to another
	// client; after LeaseHardLimit the leader recovers them. A block
	// recovery not reported within RecoveryTimeout starts again with
	// another primary. The leader checks every LeaseCheckInterval.
	LeaseSoftLimit     time.Duration
	LeaseHardLimit     time.Duration
	RecoveryTimeout    time.Duration
	LeaseCheckInterval time.Duration
	// GroupFile is the group mapping (security.GroupMapping; "" for none):
	// users' groups come only from it, reloaded by ReloadGroups (SIGHUP).
	GroupFile string

	Logger   *slog.Logger
	Registry *prometheus.Registry // nil: a fresh registry per node
}

// DefaultConfig returns a Config with the defaults a production node uses.
func DefaultConfig() Config {
	return Config{
		GRPCAddr:     "127.0.0.1:9000",
		RaftAddr:     "127.0.0.1:7000",
		HTTPAddr:     "127.0.0.1:9100",
		Superuser:    "root",
		SuperGroup:   "supergroup",
		DefaultRepl:  3,
		DefaultBlock: 64 << 20,
		// HDFS's minimum is 1 MiB; ours is 1 KiB because the HDFS-1081
		// experiment (loadgen) writes files of up to 1000 blocks of 1 KiB.
		// The maximum is the datanodes' default largest block (datanode
		// Config.MaxBlockSize), so a block the namenode allows is one a
		// default datanode accepts.
		BytesPerChecksum: 512,
		MinBlockSize:     1 << 10,
		MaxBlockSize:     1 << 30,
		MaxListPage:      1000,
		ApplyTimeout:     10 * time.Second,
		SnapshotEvery:    8192,
		RaftHeartbeat:    500 * time.Millisecond,
		RaftElection:     1000 * time.Millisecond,
		Blocks:           blocks.DefaultConfig(),
		WorkInterval:     time.Second,
		MaxRequestSize:   4 << 20,

		Security:    security.DefaultConfig(),
		Auth:        AuthMTLS,
		TrustDomain: security.DefaultTrustDomain,

		MaxInflightApplies: 1,
		MaxBatch:           256,
		MinReplication:     1,
		CompleteWait:       5 * time.Second,
		LeaseSoftLimit:     time.Minute,
		LeaseHardLimit:     20 * time.Minute,
		RecoveryTimeout:    time.Minute,
		LeaseCheckInterval: 2 * time.Second,

		RaftHandshakeTimeout: 10 * time.Second,
	}
}

// Validate reports the first problem with c.
func (c *Config) Validate() error {
	bad := func(format string, a ...any) error {
		return errs.Newf(errs.Invalid, "namenode config", "", format, a...)
	}
	switch {
	case c.ID == "":
		return bad("id is required")
	case c.DataDir == "":
		return bad("data dir is required")
	case c.RaftAddr == "" && c.RaftTransport == nil:
		return bad("raft address is required")
	case c.Bootstrap && c.Join != "":
		return bad("bootstrap and join are exclusive")
	case c.DefaultRepl < 1 || c.DefaultRepl > 32:
		return bad("default replication %d out of 1..32", c.DefaultRepl)
	case c.BytesPerChecksum < MinBytesPerChecksum || c.BytesPerChecksum > MaxBytesPerChecksum || c.BytesPerChecksum&(c.BytesPerChecksum-1) != 0:
		return bad("bytes per checksum %d: want a power of two in [%d, %d]", c.BytesPerChecksum, MinBytesPerChecksum, MaxBytesPerChecksum)
	case c.MinBlockSize == 0 || c.MinBlockSize > c.MaxBlockSize:
		return bad("block size limits [%d, %d]: want 0 < min <= max", c.MinBlockSize, c.MaxBlockSize)
	case c.MaxBlockSize < uint64(c.BytesPerChecksum):
		return bad("max block size %d is below bytes per checksum %d: no block size is allowed", c.MaxBlockSize, c.BytesPerChecksum)
	case c.DefaultBlock == 0:
		return bad("default block size must be positive")
	case c.MaxListPage <= 0:
		return bad("max list page must be positive")
	case c.ApplyTimeout <= 0:
		return bad("apply timeout must be positive")
	case c.WorkInterval <= 0:
		return bad("work interval must be positive")
	case c.MaxRequestSize <= 0:
		return bad("max request size must be positive")
	case c.MaxInflightApplies <= 0 || c.MaxBatch <= 0:
		return bad("max in-flight applies and max batch must be positive")
	case c.LeaseSoftLimit <= 0 || c.LeaseHardLimit < c.LeaseSoftLimit || c.RecoveryTimeout <= 0 || c.LeaseCheckInterval <= 0:
		return bad("lease limits: soft %v must be positive and at most hard %v; recovery timeout %v and check interval %v positive",
			c.LeaseSoftLimit, c.LeaseHardLimit, c.RecoveryTimeout, c.LeaseCheckInterval)
	case c.MinReplication < 0 || c.MinReplication > int(c.DefaultRepl) || (c.MinReplication > 0 && c.CompleteWait <= 0):
		return bad("min replication %d must be in 0..default replication %d, with a positive complete wait", c.MinReplication, c.DefaultRepl)
	}
	if msg := c.blockSizeProblem(c.DefaultBlock); msg != "" {
		return bad("default block size %d: %s", c.DefaultBlock, msg)
	}
	if err := security.ValidateTrustDomain(c.TrustDomain); err != nil {
		return err
	}
	switch c.Auth {
	case AuthSimple:
	case AuthMTLS:
		if c.TLS == nil {
			return bad("auth mtls (the default) needs TLS: give --tls-ca, --tls-cert and --tls-key, or --auth=simple on a trusted network")
		}
	default:
		return bad("auth %q: want simple or mtls", c.Auth)
	}
	switch {
	case c.RaftHandshakeTimeout <= 0:
		return bad("raft handshake timeout must be positive")
	case c.Auth == AuthMTLS && c.PeerTLS == nil:
		return bad("auth mtls needs the peer TLS config too: Raft and calls to other namenodes use it")
	case c.InsecureRaft && c.Auth != AuthSimple:
		return bad("insecure raft applies only to auth simple; under mtls Raft always runs over mTLS")
	}
	for _, p := range c.Peers {
		if p.ID == "" || p.RaftAddr == "" || p.GRPCAddr == "" {
			return bad("peer %+v needs id, raft and grpc addresses", p)
		}
	}
	if err := c.Security.Validate(); err != nil {
		return err
	}
	return c.Blocks.Validate()
}

// Bounds of Config.BytesPerChecksum.
const (
	MinBytesPerChecksum = 64
	MaxBytesPerChecksum = 1 << 20
)

// blockSizeProblem says what is wrong with block size bs under c's limits,
// or returns "": the rule is internal/chunks' BlockSizeProblem.
func (c *Config) blockSizeProblem(bs uint64) string {
	return chunks.BlockSizeProblem(bs, c.MinBlockSize, c.MaxBlockSize, c.BytesPerChecksum)
}

// Ways of identifying callers (Config.Auth).
const (
	AuthSimple = "simple"
	AuthMTLS   = "mtls"
)

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
