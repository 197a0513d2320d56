// Command datanode runs one blockfs datanode: it stores block replicas in a
// log-block-container store, serves DataService over gRPC and Prometheus
// metrics over HTTP, and registers with, heartbeats to and reports blocks
// to every namenode.
//
// Every flag can also be set from the environment as BLOCKFS_DN_<FLAG>
// (upper case, dashes as underscores); flags win. For example:
//
//	datanode --data-dirs /data/1,/data/2 --grpc-addr 127.0.0.1:9201 --http-addr 127.0.0.1:9301 \
//	  --namenodes 127.0.0.1:9001,127.0.0.1:9002,127.0.0.1:9003
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/blockfs/blockfs/datanode"
	"github.com/blockfs/blockfs/internal/node/cliflag"
	"github.com/blockfs/blockfs/lbm"
	"github.com/blockfs/blockfs/security"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "datanode:", err)
		os.Exit(1)
	}
}

func parse(args []string) (datanode.Config, string, error) {
	cfg := datanode.DefaultConfig()
	fs := flag.NewFlagSet("datanode", flag.ContinueOnError)
	f := cliflag.New(fs, "BLOCKFS_DN_")
	var dirs, nns, logLevel string
	var threshold, budget, maxBytes, capacity uint64
	maxBlocks := cfg.Store.MaxBlocksPerContainer
	f.String(&cfg.ID, "id", "", "datanode id (default: the id stored in <first data dir>/datanode-id, or a new uuid stored there)")
	f.String(&dirs, "data-dirs", "", "comma-separated data directories for block containers (required)")
	f.String(&cfg.GRPCAddr, "grpc-addr", cfg.GRPCAddr, "gRPC listen address of the DataService")
	f.String(&cfg.AdvertiseAddr, "advertise-addr", "", "gRPC address namenodes hand to clients (default: the bound address)")
	f.String(&cfg.HTTPAddr, "http-addr", cfg.HTTPAddr, "HTTP address for /metrics and /healthz (empty disables)")
	f.String(&cfg.HDFSDataAddr, "hdfs-data-addr", "", "address of the HDFS DataTransferProtocol door, where unmodified HDFS clients read and write blocks (empty, the default, disables it); plain TCP, a block token its only credential: loopback only unless --hdfs-data-insecure")
	f.Bool(&cfg.HDFSDataInsecure, "hdfs-data-insecure", false, "let --hdfs-data-addr bind a non-loopback address: block tokens and data then cross the network unencrypted (logged as a warning)")
	f.String(&nns, "namenodes", "", "comma-separated gRPC addresses of every namenode (required); the datanode reports to all of them")
	f.Duration(&cfg.HeartbeatInterval, "heartbeat-interval", cfg.HeartbeatInterval, "time between heartbeats to each namenode (match the namenodes' --heartbeat-interval)")
	f.Bool(&cfg.Store.Encrypt, "encrypt", false, "encrypt new block and metadata files at rest (AES-256-CTR, per-file keys wrapped by the server key)")
	f.String(&cfg.Store.KeyFile, "key-file", "", "server key file, created with mode 0600 if missing (default <first data dir>/server.key)")
	f.Uint64(&threshold, "inmem-replay-threshold", uint64(cfg.Store.InmemReplayThreshold), "bytes: a container metadata file up to this size is replayed from one read into memory at startup; 0 = always streaming replay")
	f.Uint64(&budget, "replay-memory-budget", uint64(cfg.Store.ReplayMemoryBudget), "bytes of metadata held in memory by concurrent in-memory replays; containers that do not fit stream")
	f.Uint64(&maxBytes, "container-max-bytes", uint64(cfg.Store.MaxContainerSize), "bytes: a container whose data file reaches this size is full")
	f.Int(&maxBlocks, "container-max-blocks", maxBlocks, "blocks after which a container is full (0 = unlimited)")
	f.Uint64(&cfg.MaxBlockSize, "max-block-size", cfg.MaxBlockSize, "largest block in bytes a write may declare; at most --container-max-bytes, since a block lives in one container (match the namenodes' --max-block-size)")
	var streaming string
	f.String(&streaming, "streaming-replay", "pread", "reader for metadata replayed by streaming (files above --inmem-replay-threshold, or beyond the memory budget): pread (Kudu's two reads per record) or buffered (1 MiB sequential window)")
	f.Bool(&cfg.Store.FailOnCorruptContainer, "fail-on-corrupt-container", false, "refuse to start when any container's metadata is corrupt (default: set that container aside, renamed, serve the rest, and let the namenode re-replicate its blocks)")
	f.Uint64(&capacity, "capacity", 0, "bytes of capacity to report (0 = used bytes plus the free space of the data dirs' file systems)")
	var inflight uint64
	f.Uint64(&inflight, "max-inflight-bytes", uint64(cfg.MaxInflightBytes), "bytes of WriteBlock packets held across all streams between receipt and ack; a stream past it stops receiving (back-pressure) until others are acked")
	f.Int64(&cfg.ReplicationBandwidth, "replication-bandwidth", cfg.ReplicationBandwidth, "bytes per second this datanode sends in datanode-to-datanode copies (re-replication, decommission), shared by all of them; 0 = unlimited")
	f.Int(&cfg.MaxPacketBytes, "max-packet-bytes", cfg.MaxPacketBytes, "largest WriteBlock packet (data bytes) taken")
	f.Duration(&cfg.RBWExpiry, "rbw-expiry", cfg.RBWExpiry, "drop a replica being written that no stream or recovery claimed for this long")
	f.Duration(&cfg.StreamIdleTimeout, "stream-idle-timeout", cfg.StreamIdleTimeout, "end a WriteBlock whose peer neither sends nor takes anything for this long")
	f.Duration(&cfg.ReadIdleTimeout, "read-idle-timeout", cfg.ReadIdleTimeout, "end a ReadBlock whose reader takes nothing for this long (DeadlineExceeded), freeing its buffers")
	f.Int64(&cfg.ReadBufferBytesPerUser, "read-buffer-bytes-per-user", cfg.ReadBufferBytesPerUser, "bytes of buffers one user's ReadBlock streams may hold (a stream of 256 KiB chunks holds about 2.3 MiB while its reader stalls); a stream past it is refused (ResourceExhausted)")
	f.Int64(&cfg.ReadBufferBytesTotal, "read-buffer-bytes-total", cfg.ReadBufferBytesTotal, "bytes of buffers all ReadBlock streams together may hold")
	var tlsCA, tlsCert, tlsKey string
	f.Duration(&cfg.Security.ClockSkew, "clock-skew", cfg.Security.ClockSkew, "allowed clock difference for token times")
	f.Duration(&cfg.KeyRefreshPeriod, "key-refresh-period", cfg.KeyRefreshPeriod, "how often to ask every namenode for its token-signing public keys")
	f.Duration(&cfg.KeyRefreshInterval, "key-refresh-interval", cfg.KeyRefreshInterval, "least time between two refreshes asked for by tokens naming an unknown key")
	f.Duration(&cfg.KeyRefreshTimeout, "key-refresh-timeout", cfg.KeyRefreshTimeout, "bound on one namenode's answer in a key refresh")
	f.Duration(&cfg.KeyRefreshWait, "key-refresh-wait", cfg.KeyRefreshWait, "longest a request with an unknown key waits for a refresh before it is refused")
	f.String(&tlsCA, "tls-ca", "", "cluster CA certificate (PEM) for mTLS (to namenodes, peers and clients)")
	f.String(&tlsCert, "tls-cert", "", "this node's certificate (PEM) for mTLS")
	f.String(&tlsKey, "tls-key", "", "this node's private key (PEM) for mTLS")
	f.String(&cfg.Auth, "auth", cfg.Auth, "how callers are identified: mtls (certificates; needs --tls-*) or simple (request metadata, trusted network only)")
	f.String(&cfg.TrustDomain, "trust-domain", cfg.TrustDomain, "the cluster's SPIFFE trust domain: certificates name spiffe://<trust-domain>/<role>/<name>")
	cfg.Serve.RegisterFlags(f)
	f.String(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	if err := f.Parse(args); err != nil {
		return cfg, "", err
	}
	cfg.DataDirs = cliflag.SplitList(dirs)
	cfg.Namenodes = cliflag.SplitList(nns)
	if len(cfg.DataDirs) == 0 {
		return cfg, "", fmt.Errorf("--data-dirs is required")
	}
	if len(cfg.Namenodes) == 0 {
		return cfg, "", fmt.Errorf("--namenodes is required")
	}
	if cfg.Store.KeyFile == "" {
		cfg.Store.KeyFile = filepath.Join(cfg.DataDirs[0], "server.key")
	}
	switch streaming {
	case "pread":
		cfg.Store.StreamingReplay = lbm.StreamingPread
	case "buffered":
		cfg.Store.StreamingReplay = lbm.StreamingBuffered
	default:
		return cfg, "", fmt.Errorf("--streaming-replay %q: want pread or buffered", streaming)
	}
	cfg.Store.InmemReplayThreshold = int64(threshold)
	cfg.Store.ReplayMemoryBudget = int64(budget)
	cfg.Store.MaxContainerSize = int64(maxBytes)
	cfg.Store.MaxBlocksPerContainer = maxBlocks
	cfg.Store.Capacity = int64(capacity)
	cfg.MaxInflightBytes = int64(inflight)
	if tlsCA != "" || tlsCert != "" || tlsKey != "" {
		server, client, err := security.TLSFromFiles(tlsCA, tlsCert, tlsKey)
		if err != nil {
			return cfg, "", err
		}
		cfg.TLS = server
		cfg.DialOptions = append(cfg.DialOptions, grpc.WithTransportCredentials(credentials.NewTLS(client)))
	}
	return cfg, logLevel, cfg.Validate()
}

func run(args []string) error {
	cfg, logLevel, err := parse(args)
	if err != nil {
		if err == flag.ErrHelp {
			return nil
		}
		return err
	}
	if cfg.Logger, err = cliflag.Logger(logLevel); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	d, err := datanode.Start(ctx, cfg, nil)
	if err != nil {
		return err
	}
	<-ctx.Done()
	cfg.Logger.Info("shutting down")
	return d.Close()
}
