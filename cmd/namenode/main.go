// Command namenode runs one blockfs namenode: a Raft peer holding the
// namespace, serving ClientService, DatanodeProtocol and Admin over gRPC and
// Prometheus metrics over HTTP.
//
// A three-node cluster by hand on one machine (see README.md; outside a
// trusted network drop --auth=simple and give every node --tls-* files):
//
//	namenode --id nn1 --data-dir /tmp/nn1 --grpc-addr 127.0.0.1:9001 --raft-addr 127.0.0.1:7001 --http-addr 127.0.0.1:9101 --auth=simple --bootstrap
//	namenode --id nn2 --data-dir /tmp/nn2 --grpc-addr 127.0.0.1:9002 --raft-addr 127.0.0.1:7002 --http-addr 127.0.0.1:9102 --auth=simple --join 127.0.0.1:9001
//	namenode --id nn3 --data-dir /tmp/nn3 --grpc-addr 127.0.0.1:9003 --raft-addr 127.0.0.1:7003 --http-addr 127.0.0.1:9103 --auth=simple --join 127.0.0.1:9001
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"os/user"
	"syscall"
	"time"

	"github.com/blockfs/blockfs/internal/base/chunks"
	"github.com/blockfs/blockfs/internal/node/cliflag"
	"github.com/blockfs/blockfs/namenode"
	"github.com/blockfs/blockfs/security"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "namenode:", err)
		os.Exit(1)
	}
}

// parse builds the namenode's configuration from args (and BLOCKFS_NN_*
// variables). It returns flag.ErrHelp for --help.
func parse(args []string) (namenode.Config, error) {
	cfg := namenode.DefaultConfig()
	if u, err := user.Current(); err == nil {
		cfg.Namespace.Superuser = u.Username
	}
	fs := flag.NewFlagSet("namenode", flag.ContinueOnError)
	f := cliflag.New(fs, "BLOCKFS_NN_")
	var peers, logLevel string
	f.String(&cfg.ID, "id", "", "this namenode's Raft server id (required)")
	f.String(&cfg.DataDir, "data-dir", "", "directory for the Raft log, stable store and snapshots (required)")
	f.String(&cfg.GRPCAddr, "grpc-addr", cfg.GRPCAddr, "gRPC listen address")
	f.String(&cfg.AdvertiseGRPC, "advertise-grpc", "", "gRPC address peers and clients use (default: the bound address)")
	f.String(&cfg.Raft.Advertise, "advertise-raft", "", "Raft address peers dial and the Raft configuration records (default: the bound address); a stable DNS name where the IP changes, as in a Kubernetes StatefulSet")
	f.String(&cfg.Raft.Addr, "raft-addr", cfg.Raft.Addr, "Raft address: mutual TLS between namenode certificates when --tls-* are given; without TLS, plaintext and loopback only (see --insecure-raft)")
	f.Bool(&cfg.Raft.Insecure, "insecure-raft", false, "with --auth=simple and no TLS, serve plaintext Raft on a non-loopback --raft-addr anyway: unauthenticated, anyone who reaches the port can rewrite the namespace (logged as an error at start)")
	f.String(&cfg.HDFSRPC.Addr, "hdfs-rpc-addr", "", "address of the HDFS door: Hadoop IPC (ClientNamenodeProtocol) for unmodified HDFS clients, with Hadoop's simple authentication only; loopback unless --hdfs-rpc-insecure (empty: off)")
	f.Bool(&cfg.HDFSRPC.Insecure, "hdfs-rpc-insecure", false, "serve the HDFS door on a non-loopback --hdfs-rpc-addr anyway: simple authentication believes the user a client names, so anyone who reaches the port can act as anyone, the superuser included (logged as a warning at start)")
	f.String(&cfg.HTTPAddr, "http-addr", cfg.HTTPAddr, "HTTP address for /metrics, /healthz and the web UI (HTTPS when --tls-* are given; empty disables)")
	f.Bool(&cfg.Raft.Bootstrap, "bootstrap", false, "bootstrap a new cluster if this node has no Raft state (with --peers: all peers as voters)")
	f.String(&peers, "peers", "", "initial cluster for --bootstrap: id=raft_addr/grpc_addr,... (every peer may pass the same list)")
	f.String(&cfg.Raft.Join, "join", "", "gRPC address of a running namenode to join through, if this node has no Raft state")
	var bootstrapID string
	f.String(&bootstrapID, "bootstrap-id", "", "the namenode that bootstraps: the node whose --id this is bootstraps (ignoring --join), every other one joins (ignoring --bootstrap); lets identical arguments serve every pod of a StatefulSet")
	f.String(&cfg.Namespace.Superuser, "superuser", cfg.Namespace.Superuser, "user with all permissions (default: the user running the namenode)")
	f.String(&cfg.Namespace.Supergroup, "supergroup", cfg.Namespace.Supergroup, "group of the superuser, owner group of /")
	var repl int
	f.Int(&repl, "default-replication", int(cfg.Namespace.DefaultReplication), "replication of files created without one")
	f.Uint64(&cfg.Namespace.DefaultBlockSize, "default-block-size", cfg.Namespace.DefaultBlockSize, "block size in bytes of files created without one")
	f.Uint64(&cfg.Namespace.MinBlockSize, "min-block-size", cfg.Namespace.MinBlockSize, "smallest block size in bytes a file may be created with")
	f.Uint64(&cfg.Namespace.MaxBlockSize, "max-block-size", cfg.Namespace.MaxBlockSize, "largest block size in bytes a file may be created with (datanodes accept blocks up to 1 GiB by default)")
	var bpc uint64
	f.Uint64(&bpc, "bytes-per-checksum", uint64(cfg.Namespace.BytesPerChecksum), "bytes per checksum chunk that writers use: a power of two in [64, 1 MiB]; block sizes must be multiples of it")
	f.Duration(&cfg.Leases.SoftLimit, "lease-soft-limit", cfg.Leases.SoftLimit, "after this long without a renewal another client may take over a writer's files (HDFS's soft limit)")
	f.Duration(&cfg.Leases.HardLimit, "lease-hard-limit", cfg.Leases.HardLimit, "after this long without a renewal the leader recovers and closes a writer's files (HDFS's hard limit)")
	f.Duration(&cfg.Leases.RecoveryTimeout, "recovery-timeout", cfg.Leases.RecoveryTimeout, "a block recovery not reported within this starts again with another primary datanode")
	var clockOffset time.Duration
	f.Duration(&clockOffset, "test-clock-offset", 0, "FOR TESTS ONLY: add this to the node's wall clock (its commands' times and its tokens' iat/exp), to test clock jumps and skew between namenodes (tests/netfault)")
	f.Duration(&cfg.Leases.CheckInterval, "lease-check-interval", cfg.Leases.CheckInterval, "how often the leader looks for expired leases and stalled recoveries")
	f.Int(&cfg.Namespace.MinReplication, "min-replication", cfg.Namespace.MinReplication, "replicas each block must have reported before Complete closes its file (HDFS dfs.namenode.replication.min; 0: do not wait)")
	f.Int(&cfg.Namespace.MaxXAttrsPerInode, "max-xattrs-per-inode", cfg.Namespace.MaxXAttrsPerInode, "user-visible extended attributes one inode may have (HDFS's dfs.namenode.fs-limits.max-xattrs-per-inode), at most 128")
	f.Int(&cfg.Namespace.MaxXAttrSize, "max-xattr-size", cfg.Namespace.MaxXAttrSize, "bytes of one extended attribute's name (without its prefix) and value (HDFS's dfs.namenode.fs-limits.max-xattr-size), at most 32768")
	f.Duration(&cfg.Namespace.CompleteWait, "complete-wait", cfg.Namespace.CompleteWait, "how long one Complete waits for those reports before answering Unavailable (the client retries)")
	f.Uint64(&cfg.Raft.SnapshotEvery, "snapshot-threshold", cfg.Raft.SnapshotEvery, "Raft log entries between snapshots")
	f.Duration(&cfg.Blocks.HeartbeatInterval, "heartbeat-interval", cfg.Blocks.HeartbeatInterval, "expected datanode heartbeat interval")
	var trashMin, trashCheckMin float64
	f.Float64(&trashMin, "trash-interval", 0, "minutes deleted files stay in /user/<user>/.Trash before the leader expunges them (HDFS fs.trash.interval; 0: no trash, dfs rm deletes for good)")
	f.Float64(&trashCheckMin, "trash-checkpoint-interval", 0, "minutes between the leader's trash checkpoints (0: the trash interval)")
	f.Float64(&cfg.SafeMode.Threshold, "safemode-threshold", cfg.SafeMode.Threshold, "fraction of complete blocks that must have a replica reported before a new leader leaves safe mode (HDFS dfs.namenode.safemode.threshold-pct)")
	f.Duration(&cfg.SafeMode.Extension, "safemode-extension", cfg.SafeMode.Extension, "how long safe mode lasts once the threshold is met, for the reports still on their way (a leader whose map is already full leaves at once)")
	f.Int(&cfg.SafeMode.MinDatanodes, "safemode-min-datanodes", cfg.SafeMode.MinDatanodes, "live datanodes a new leader needs, besides the block threshold, to leave safe mode")
	f.Int(&cfg.Blocks.DeadAfterMissed, "dead-after-missed", cfg.Blocks.DeadAfterMissed, "missed heartbeats after which a datanode is dead")
	var tokenMode, tlsCA, tlsCert, tlsKey string
	f.String(&tokenMode, "token-mode", cfg.Tokens.Mode.String(), "block tokens: per-block (one signature per block, the HDFS baseline), per-request (one per response), cached (per-request, reused)")
	f.Duration(&cfg.Tokens.TokenLifetime, "token-lifetime", cfg.Tokens.TokenLifetime, "lifetime of every block token")
	f.Duration(&cfg.Tokens.KeyRotation, "key-rotation", cfg.Tokens.KeyRotation, "how often this namenode makes a new token-signing key")
	f.Duration(&cfg.Tokens.ClockSkew, "clock-skew", cfg.Tokens.ClockSkew, "allowed clock difference for token times")
	var auth string
	f.String(&auth, "auth", cfg.Auth.Mode.String(), "caller identity: mtls (the client certificate's spiffe://<trust-domain>/<role>/<name> URI SAN; needs --tls-ca, --tls-cert, --tls-key) or simple (the blockfs-user and blockfs-role request metadata, as HDFS simple auth; trusted networks only, logs a warning)")
	f.String(&cfg.Auth.TrustDomain, "trust-domain", cfg.Auth.TrustDomain, "the cluster's SPIFFE trust domain: certificates name spiffe://<trust-domain>/<role>/<name>")
	f.String(&cfg.TopologyFile, "topology-file", "", "file mapping datanodes (id, host:port or host) to racks, one 'key /dc/rack' a line; reread on SIGHUP; unnamed datanodes are in /default-rack")
	f.String(&cfg.HostsExclude, "hosts-exclude", "", "file naming datanodes to decommission (like dfs.hosts.exclude), one datanode id or host:port a line, # comments; reread on 'dfs admin refreshNodes' and SIGHUP; a file that does not parse is refused and the old list kept")
	f.String(&cfg.Auth.HTTPStaticUser, "http-static-user", cfg.Auth.HTTPStaticUser, "with --auth=simple, the user the web UI shows a browser that names no user.name as (its overview, and browsing with only that user's permissions), as HDFS's hadoop.http.staticuser.user; empty: such a browser gets 401; ignored under mtls")
	f.String(&cfg.Auth.GroupFile, "group-mapping", "", "file mapping users to groups (lines 'user = group1, group2'); reread on SIGHUP; users' groups come only from here")
	f.String(&tlsCA, "tls-ca", "", "cluster CA certificate (PEM) for mTLS")
	f.String(&tlsCert, "tls-cert", "", "this node's certificate (PEM) for mTLS")
	f.String(&tlsKey, "tls-key", "", "this node's private key (PEM) for mTLS")
	f.String(&cfg.Audit.Path, "audit-log", "", "audit log file: one line per namespace operation, allowed or refused, in HDFS's FSNamesystem.audit shape (empty: no file)")
	f.Int(&cfg.Audit.MaxSizeMB, "audit-log-max-size-mb", cfg.Audit.MaxSizeMB, "size in MiB at which the audit log is rotated to <file>.1")
	f.Int(&cfg.Audit.MaxBackups, "audit-log-max-backups", cfg.Audit.MaxBackups, "rotated audit logs kept (0: all)")
	f.Bool(&cfg.Audit.Stdout, "audit-stdout", false, "write the audit log to standard output too")
	cfg.Limits.Serve.RegisterFlags(f)
	f.Int64(&cfg.Limits.ReportBytesPerDatanode, "report-bytes-per-datanode", cfg.Limits.ReportBytesPerDatanode, "bytes an unfinished multi-part block report of one datanode may hold; a part past it is refused (ResourceExhausted) and the report dropped")
	f.Int64(&cfg.Limits.ReportBytesTotal, "report-bytes-total", cfg.Limits.ReportBytesTotal, "bytes all unfinished multi-part block reports together may hold")
	f.Int(&cfg.Limits.CompleteWaitsPerUser, "complete-waits-per-user", cfg.Limits.CompleteWaitsPerUser, "Complete calls of one user that may wait for replica reports at once; one more is refused (ResourceExhausted)")
	f.Int(&cfg.Limits.CompleteWaitsTotal, "complete-waits-total", cfg.Limits.CompleteWaitsTotal, "Complete calls of all users that may wait for replica reports at once")
	f.Int(&cfg.Limits.WriteRatePerUser, "write-rate-per-user", cfg.Limits.WriteRatePerUser, "namespace-mutating calls (Mkdirs, Create, AddBlock, Complete, Delete, Rename, ...) one user may make per second, a token bucket per user on each namenode; a call past it is refused (ResourceExhausted with a retry hint); 0 = no limit")
	f.Int(&cfg.Limits.WriteBurstPerUser, "write-burst-per-user", cfg.Limits.WriteBurstPerUser, "calls one user may make at once above --write-rate-per-user (the bucket's size)")
	f.Int(&cfg.Limits.WriteRateUsers, "write-rate-users", cfg.Limits.WriteRateUsers, "users whose write buckets are tracked at once; past it idle users (bucket full) are forgotten first, then the least recently seen")
	f.Duration(&cfg.Limits.Fair.Busy, "fair-busy", cfg.Limits.Fair.Busy, "the fair scheduler: while the p99 goroutine scheduling latency of a 100 ms window is above this (the namenode is loaded) and users of different shares of recent writes are calling, the writes of the users heavier than the lightest caller are throttled (refused with ResourceExhausted and a retry hint past their throttled rate), the throttle halving each loaded window; 0 = off")
	f.Duration(&cfg.Limits.Fair.HalfLife, "fair-half-life", cfg.Limits.Fair.HalfLife, "the time over which a user's score (its recent writes) in the fair scheduler halves")
	f.Duration(&cfg.Limits.ReportTTL, "report-ttl", cfg.Limits.ReportTTL, "drop a multi-part block report not finished within this (checked every quarter of it)")
	f.String(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	if err := f.Parse(args); err != nil {
		return cfg, err
	}
	if bootstrapID != "" {
		cfg.Raft.Bootstrap = cfg.ID == bootstrapID
		if cfg.Raft.Bootstrap {
			cfg.Raft.Join = ""
		}
	}
	cfg.Namespace.DefaultReplication = uint32(repl)
	cfg.TrashInterval = time.Duration(trashMin * float64(time.Minute))
	cfg.TrashCheckpoint = time.Duration(trashCheckMin * float64(time.Minute))
	// Checked here, before the narrowing to uint32 could turn a huge value
	// into a valid one.
	if err := chunks.CheckSize("--bytes-per-checksum", bpc); err != nil {
		return cfg, err
	}
	cfg.Namespace.BytesPerChecksum = uint32(bpc)
	var err error
	if cfg.Auth.Mode, err = namenode.ParseAuthMode(auth); err != nil {
		return cfg, err
	}
	mode, err := security.ParseMode(tokenMode)
	if err != nil {
		return cfg, err
	}
	cfg.Tokens.Mode = mode
	if tlsCA != "" || tlsCert != "" || tlsKey != "" {
		if cfg.Auth.TLS, cfg.Auth.PeerTLS, err = security.TLSFromFiles(tlsCA, tlsCert, tlsKey); err != nil {
			return cfg, err
		}
	}
	if peers != "" {
		p, err := namenode.ParsePeers(peers)
		if err != nil {
			return cfg, err
		}
		cfg.Raft.Peers = p
	}
	if cfg.Logger, err = cliflag.Logger(logLevel); err != nil {
		return cfg, err
	}
	if clockOffset != 0 {
		cfg.Now = func() time.Time { return time.Now().Add(clockOffset) }
		cfg.Logger.Warn("--test-clock-offset is set: this namenode's clock is shifted; never use it outside tests", "offset", clockOffset)
	}
	return cfg, nil
}

func run(args []string) error {
	cfg, err := parse(args)
	if err != nil {
		if err == flag.ErrHelp {
			return nil
		}
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	n, err := namenode.Start(ctx, cfg, nil)
	if err != nil {
		return err
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for ctx.Err() == nil {
		select {
		case <-hup:
			if err := n.ReloadGroups(); err != nil {
				cfg.Logger.Error("reload group mapping; the old mapping stays", "err", err)
			}
			if err := n.ReloadTopology(); err != nil {
				cfg.Logger.Error("reload topology; the old topology stays", "err", err)
			}
			if err := n.ReloadExclude(); err != nil {
				cfg.Logger.Error("reload exclude file; the old list stays", "err", err)
			}
		case <-ctx.Done():
		}
	}
	cfg.Logger.Info("shutting down")
	return n.Close()
}
