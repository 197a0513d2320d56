// Package config holds the sections of the namenode's configuration,
// each with its DefaultX and Validate (as hashicorp/raft's config.go
// does): Raft, the namespace, leases, authentication and the limits. The
// namenode package names them under their old names (namenode.RaftConfig
// is config.Raft), and composes them into namenode.Config.
package config

import (
	"crypto/tls"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/base/chunks"
	"github.com/blockfs/blockfs/internal/node/fairshare"
	"github.com/blockfs/blockfs/internal/node/serve"
	"github.com/blockfs/blockfs/namenode/reports"
	"github.com/blockfs/blockfs/namespace"
	"github.com/blockfs/blockfs/security"
)

// Peer is one namenode of the initial cluster, as given to --peers.
type Peer struct {
	ID       string
	RaftAddr string
	GRPCAddr string
}

// Raft is how the namenode takes part in Raft.
type Raft struct {
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

// DefaultRaft returns the Raft section's defaults.
func DefaultRaft() Raft {
	return Raft{
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
func (c *Raft) Validate() error {
	switch {
	case c.Addr == "" && c.Transport == nil:
		return badConfig("config.Raft.Validate", "raft address is required")
	case c.Bootstrap && c.Join != "":
		return badConfig("config.Raft.Validate", "bootstrap and join are exclusive")
	case c.HandshakeTimeout <= 0:
		return badConfig("config.Raft.Validate", "raft handshake timeout must be positive")
	case c.Heartbeat <= 0 || c.Election <= 0:
		return badConfig("config.Raft.Validate", "raft heartbeat %v and election %v timeouts must be positive", c.Heartbeat, c.Election)
	case c.ApplyTimeout <= 0:
		return badConfig("config.Raft.Validate", "apply timeout must be positive")
	case c.MaxInflightApplies <= 0 || c.MaxBatch <= 0:
		return badConfig("config.Raft.Validate", "max in-flight applies and max batch must be positive")
	}
	for _, p := range c.Peers {
		if p.ID == "" || p.RaftAddr == "" || p.GRPCAddr == "" {
			return badConfig("config.Raft.Validate", "peer %+v needs id, raft and grpc addresses", p)
		}
	}
	return nil
}

// Namespace is what the namespace allows and assumes: who the
// superuser is, the defaults and limits of new files, and when Complete
// may close a file.
type Namespace struct {
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
	// MaxXAttrsPerInode and MaxXAttrSize are HDFS's
	// dfs.namenode.fs-limits.max-xattrs-per-inode (user-visible
	// attributes of one inode) and max-xattr-size (bytes of one
	// attribute's name, without its prefix, and value).
	MaxXAttrsPerInode int
	MaxXAttrSize      int
}

// DefaultNamespace returns the namespace section's defaults.
func DefaultNamespace() Namespace {
	return Namespace{
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
		// HDFS's defaults.
		MaxXAttrsPerInode: 32,
		MaxXAttrSize:      16384,
	}
}

// Validate reports the first problem with the namespace section.
func (c *Namespace) Validate() error {
	if err := chunks.CheckSize("config.Namespace.Validate", c.BytesPerChecksum); err != nil {
		return err
	}
	switch {
	case c.Superuser == "":
		return badConfig("config.Namespace.Validate", "superuser is required")
	case c.DefaultReplication < 1 || c.DefaultReplication > 32:
		return badConfig("config.Namespace.Validate", "default replication %d out of 1..32", c.DefaultReplication)
	case c.MinBlockSize == 0 || c.MinBlockSize > c.MaxBlockSize:
		return badConfig("config.Namespace.Validate", "block size limits [%d, %d]: want 0 < min <= max", c.MinBlockSize, c.MaxBlockSize)
	case c.MaxBlockSize < uint64(c.BytesPerChecksum):
		return badConfig("config.Namespace.Validate", "max block size %d is below bytes per checksum %d: no block size is allowed", c.MaxBlockSize, c.BytesPerChecksum)
	case c.DefaultBlockSize == 0:
		return badConfig("config.Namespace.Validate", "default block size must be positive")
	case c.MaxListPage <= 0:
		return badConfig("config.Namespace.Validate", "max list page must be positive")
	case c.MinReplication < 0 || c.MinReplication > int(c.DefaultReplication) || (c.MinReplication > 0 && c.CompleteWait <= 0):
		return badConfig("config.Namespace.Validate", "min replication %d must be in 0..default replication %d, with a positive complete wait", c.MinReplication, c.DefaultReplication)
	case c.MaxXAttrsPerInode < 1 || c.MaxXAttrsPerInode > namespace.CapXAttrsPerInode:
		return badConfig("config.Namespace.Validate", "max xattrs per inode %d out of 1..%d", c.MaxXAttrsPerInode, namespace.CapXAttrsPerInode)
	case c.MaxXAttrSize < 1 || c.MaxXAttrSize > namespace.CapXAttrSize:
		return badConfig("config.Namespace.Validate", "max xattr size %d out of 1..%d (HDFS's cap)", c.MaxXAttrSize, namespace.CapXAttrSize)
	}
	if msg := c.BlockSizeProblem(c.DefaultBlockSize); msg != "" {
		return badConfig("config.Namespace.Validate", "default block size %d: %s", c.DefaultBlockSize, msg)
	}
	return nil
}

// BlockSizeProblem says what is wrong with block size bs under c's limits,
// or returns "": the rule is internal/base/chunks' BlockSizeProblem.
func (c *Namespace) BlockSizeProblem(bs uint64) string {
	return chunks.BlockSizeProblem(bs, c.MinBlockSize, c.MaxBlockSize, c.BytesPerChecksum)
}

// Leases sets the writers' lease limits (docs/ARCHITECTURE.md,
// "Leases and recovery"). A holder that has not renewed for SoftLimit may
// lose its files to another client; after HardLimit the leader recovers
// them. A block recovery not reported within RecoveryTimeout starts again
// with another primary. The leader checks every CheckInterval.
type Leases struct {
	SoftLimit       time.Duration
	HardLimit       time.Duration
	RecoveryTimeout time.Duration
	CheckInterval   time.Duration
}

// DefaultLeases returns HDFS's lease limits.
func DefaultLeases() Leases {
	return Leases{
		SoftLimit:       time.Minute,
		HardLimit:       20 * time.Minute,
		RecoveryTimeout: time.Minute,
		CheckInterval:   2 * time.Second,
	}
}

// Validate reports the first problem with the lease section.
func (c *Leases) Validate() error {
	if c.SoftLimit <= 0 || c.HardLimit < c.SoftLimit || c.RecoveryTimeout <= 0 || c.CheckInterval <= 0 {
		return badConfig("config.Leases.Validate", "lease limits: soft %v must be positive and at most hard %v; recovery timeout %v and check interval %v positive",
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
	return 0, errs.Newf(errs.Invalid, "config.ParseAuthMode", s, "auth %q: want mtls or simple", s)
}

// Auth is how the namenode knows who calls it.
type Auth struct {
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
	// HTTPStaticUser is, under simple auth, the user the web UI serves a
	// browser that names none as (security.AuthConfig.HTTPStaticUser;
	// HDFS's hadoop.http.staticuser.user). "" refuses it (401). Unused
	// under mTLS.
	HTTPStaticUser string
}

// DefaultHTTPStaticUser is HDFS's static web user.
const DefaultHTTPStaticUser = "dr.who"

// DefaultAuth returns mTLS in the default trust domain (the TLS
// configs are the deployment's to give).
func DefaultAuth() Auth {
	return Auth{Mode: AuthMTLS, TrustDomain: security.DefaultTrustDomain, HTTPStaticUser: DefaultHTTPStaticUser}
}

// Validate reports the first problem with the auth section.
func (c *Auth) Validate() error {
	if err := security.ValidateTrustDomain(c.TrustDomain); err != nil {
		return err
	}
	if c.HTTPStaticUser != "" {
		if err := security.ValidateName(c.HTTPStaticUser); err != nil {
			return badConfig("config.Auth.Validate", "--http-static-user %q: %v", c.HTTPStaticUser, err)
		}
	}
	switch c.Mode {
	case AuthSimple:
	case AuthMTLS:
		if c.TLS == nil {
			return badConfig("config.Auth.Validate", "auth mtls (the default) needs TLS: give --tls-ca, --tls-cert and --tls-key, or --auth=simple on a trusted network")
		}
		if c.PeerTLS == nil {
			return badConfig("config.Auth.Validate", "auth mtls needs the peer TLS config too: Raft and calls to other namenodes use it")
		}
	default:
		return badConfig("config.Auth.Validate", "auth %v: want simple or mtls", c.Mode)
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

// Limits bounds what one caller (a user, a datanode, a connection)
// may hold of the namenode, so that none can exhaust it for the others.
// Each refusal answers ResourceExhausted and is counted in /metrics
// (docs/OPERATIONS.md, "Limits").
type Limits struct {
	// Serve bounds the gRPC connections (streams, pings) and the HTTP
	// requests (header, idle and progress timeouts).
	Serve serve.Limits
	// ReportBytesPerDatanode and ReportBytesTotal bound the memory the
	// unfinished multi-part block reports hold (package reports), per
	// datanode and over all of them; a part past either drops that
	// datanode's report. ReportTTL drops a report not finished within it,
	// checked every ReportTTL/4 whether or not more parts arrive.
	ReportBytesPerDatanode int64
	ReportBytesTotal       int64
	ReportTTL              time.Duration
	// CompleteWaitsPerUser and CompleteWaitsTotal bound the Complete calls
	// waiting for replica reports (Namespace.MinReplication), per user and
	// in all; one past either is refused (minrepl.go).
	CompleteWaitsPerUser int
	CompleteWaitsTotal   int
	// WriteRatePerUser (calls/s; 0 = off) and WriteBurstPerUser are each
	// user's token bucket for the namespace-mutating RPCs (security.Rule
	// Write), tracked for at most WriteRateUsers users at once.
	WriteRatePerUser, WriteBurstPerUser, WriteRateUsers int
	// Fair is the fair scheduler (package fairshare) that backs off the
	// writes of users heavier than others while the namenode is loaded;
	// its Rate and MaxUsers are taken from the write rate above.
	Fair fairshare.Config
}

// DefaultLimits returns the limits' defaults.
func DefaultLimits() Limits {
	rep, fair := reports.DefaultLimits(), fairshare.DefaultConfig()
	return Limits{
		Serve:                  serve.DefaultLimits(),
		ReportBytesPerDatanode: rep.PerDatanode,
		ReportBytesTotal:       rep.Total,
		ReportTTL:              rep.TTL,
		CompleteWaitsPerUser:   64,
		CompleteWaitsTotal:     1024,
		WriteRatePerUser:       1000,
		WriteBurstPerUser:      2000,
		WriteRateUsers:         100000,
		Fair:                   fairshare.Config{Busy: fair.Busy, HalfLife: fair.HalfLife},
	}
}

// Validate reports the first problem with the limits section.
func (c *Limits) Validate() error {
	const op = "config.Limits.Validate"
	if err := c.Serve.Validate(op); err != nil {
		return err
	}
	switch {
	case c.ReportBytesPerDatanode <= 0 || c.ReportBytesTotal < c.ReportBytesPerDatanode:
		return badConfig(op, "report bytes: per datanode %d must be positive and at most the total %d", c.ReportBytesPerDatanode, c.ReportBytesTotal)
	case c.ReportTTL <= 0:
		return badConfig(op, "report ttl must be positive")
	case c.CompleteWaitsPerUser <= 0 || c.CompleteWaitsTotal < c.CompleteWaitsPerUser:
		return badConfig(op, "complete waits: per user %d must be positive and at most the total %d", c.CompleteWaitsPerUser, c.CompleteWaitsTotal)
	case c.WriteRatePerUser < 0 || c.WriteRatePerUser > 0 && (c.WriteBurstPerUser <= 0 || c.WriteRateUsers <= 0):
		return badConfig(op, "write rate %d/s must be >= 0, and when on its burst %d and users %d positive", c.WriteRatePerUser, c.WriteBurstPerUser, c.WriteRateUsers)
	case c.Fair.Busy < 0 || c.Fair.Busy > 0 && c.Fair.HalfLife < fairshare.Window:
		return badConfig(op, "fair scheduler: busy %v must be >= 0, and when on its half-life %v at least %v", c.Fair.Busy, c.Fair.HalfLife, fairshare.Window)
	}
	return nil
}

// badConfig is the error of the Validate method op.
func badConfig(op, format string, a ...any) error {
	return errs.Newf(errs.Invalid, op, "", format, a...)
}
