package datanode

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/blockfs/blockfs/internal/node/flow"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/datatransfer"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/base/caps"
	"github.com/blockfs/blockfs/internal/node/serve"
	"github.com/blockfs/blockfs/lbm"
	"github.com/blockfs/blockfs/security"
)

// Datanode is one running datanode: the block store, the DataService, the
// namenode actors and the command workers.
type Datanode struct {
	cfg Config
	// pace paces the copies this datanode sends (pace.go).
	pace  *pacer
	id    string
	log   *slog.Logger
	reg   *prometheus.Registry
	met   *metrics
	store *lbm.Store
	authz *security.Authorizer
	// revoked is the namenodes' deny list, as the key refresh last heard
	// it (tokens.go); the authorizer checks every call against it.
	revoked security.Revocations
	// reportIDs numbers this process's multi-part full block reports.
	reportIDs atomic.Uint64

	grpcLis  net.Listener
	grpcSrv  *serve.Server
	addr     string
	httpLis  net.Listener
	httpSrv  *http.Server
	hdfsLis  net.Listener
	hdfsDoor *datatransfer.Server
	connMu   sync.Mutex
	conns    map[string]*grpc.ClientConn
	actors   []*actor
	tokens   *tokens
	cmds     chan *api.DatanodeCommand
	inflight sync.Map // block id -> struct{}: replications running
	// inflightBytes caps the packet bytes held by write streams.
	inflightBytes *inflight
	// readBufs holds the buffer bytes ReadBlock streams reserved, per user.
	readBufs *caps.Caps
	corrupt  sync.Map     // block id -> struct{}: replicas reported corrupt
	rbws     rbwSet       // replicas being written (rbw.go)
	balance  balancePacer // paces the balancer's moves (balance.go)

	ctx      context.Context // canceled by Close
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	closed   sync.Once
	closeErr error
}

// Start opens the block store, starts serving, and starts reporting to the
// namenodes. lis, if non-nil, is the gRPC listener to use. ctx bounds only
// the startup.
func Start(ctx context.Context, cfg Config, lis net.Listener) (d *Datanode, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	reg := cfg.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	d = &Datanode{cfg: cfg, reg: reg, conns: map[string]*grpc.ClientConn{}, cmds: make(chan *api.DatanodeCommand, 256), pace: newPacer(cfg.ReplicationBandwidth)}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	self := d
	defer func() {
		if err != nil {
			self.Close()
		}
	}()
	sc := cfg.storeConfig()
	fs := sc.FS
	if fs == nil {
		fs = lbm.OSFS()
	}
	cert, err := certIdentity(cfg)
	if err != nil {
		return nil, err
	}
	want := cfg.ID
	if cert.Name != "" {
		want = cert.Name
	}
	if d.id, err = loadID(fs, cfg.DataDirs[0], want); err != nil {
		return nil, err
	}
	if cfg.Auth == AuthSimple {
		log.Warn("simple authentication: every caller is trusted to state its own user name and role in request metadata; block tokens still decide what is read and written; use --auth=mtls outside a trusted loopback network")
	}
	d.authz = security.NewAuthorizer(security.AuthConfig{Simple: cfg.Auth == AuthSimple, TrustDomain: cfg.TrustDomain, Env: authEnv{}, Registry: reg, Revoked: &d.revoked})
	d.log = log.With("datanode", d.id)
	d.inflightBytes = newInflight(cfg.MaxInflightBytes)
	d.readBufs = caps.New(int(cfg.ReadBufferBytesPerUser), int(cfg.ReadBufferBytesTotal))
	d.met = newMetrics(reg, d)
	if d.tokens, err = newTokens(d, cfg.Security); err != nil {
		return nil, err
	}
	sc.Registerer = reg
	sc.Logger = d.log
	if d.store, err = lbm.Open(ctx, sc); err != nil {
		return nil, err
	}
	if lis == nil {
		if lis, err = net.Listen("tcp", cfg.GRPCAddr); err != nil {
			return nil, errs.Wrap(errs.Unavailable, "datanode.Start", cfg.GRPCAddr, err)
		}
	}
	d.grpcLis = lis
	d.addr = cfg.AdvertiseAddr
	if d.addr == "" {
		d.addr = lis.Addr().String()
	}
	d.startGRPC()
	if err := d.startHTTP(); err != nil {
		return nil, err
	}
	if err := d.startHDFSData(); err != nil {
		return nil, err
	}
	for range cfg.CommandWorkers {
		d.wg.Add(1)
		go d.commandWorker()
	}
	for _, nn := range cfg.Namenodes {
		a := newActor(d, nn)
		d.actors = append(d.actors, a)
		d.wg.Add(1)
		go a.run()
	}
	d.wg.Add(2)
	go d.tokens.loop(d.ctx)
	go d.rbwLoop()
	st := d.store.OpenStats()
	d.log.Info("datanode started", "grpc", d.addr, "http", d.HTTPAddr(), "hdfs_data", d.HDFSDataAddr(), "blocks", st.LiveBlocks,
		"containers", st.Containers, "replay", st.Duration, "namenodes", len(cfg.Namenodes),
		"waiting_replicas", st.WaitingReplicas)
	if st.WaitingReplicas > 0 {
		d.log.Info("replicas waiting to be recovered (hsynced before the last stop)", "count", st.WaitingReplicas)
	}
	return d, nil
}

// loadID returns the datanode id: want if set (checked against the stored
// one), else the stored one, else a new uuid, which is then stored.
func loadID(fs lbm.FS, dir, want string) (string, error) {
	const op = "datanode.Start"
	path := filepath.Join(dir, IDFile)
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return "", errs.Wrap(errs.IO, op, dir, err)
	}
	stored := ""
	if f, err := fs.OpenFile(path, os.O_RDONLY, 0); err == nil {
		st, serr := f.Stat()
		if serr != nil {
			f.Close()
			return "", errs.Wrap(errs.IO, op, path, serr)
		}
		buf := make([]byte, st.Size())
		_, rerr := f.ReadAt(buf, 0)
		f.Close()
		if rerr != nil && rerr != io.EOF {
			return "", errs.Wrap(errs.IO, op, path, rerr)
		}
		stored = strings.TrimSpace(string(buf))
	} else if !os.IsNotExist(err) {
		return "", errs.Wrap(errs.IO, op, path, err)
	}
	switch {
	case stored != "" && want != "" && stored != want:
		return "", errs.Newf(errs.Precondition, op, path, "data dir belongs to datanode %q, not %q", stored, want)
	case stored != "":
		return stored, nil
	case want == "":
		want = newUUID()
	}
	err := lbm.WriteFileAtomic(fs, path, []byte(want+"\n"), 0o644)
	if err != nil {
		return "", errs.Wrap(errs.IO, op, path, err)
	}
	return want, nil
}

func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// conn returns a shared client connection to addr.
func (d *Datanode) conn(op, addr string) (*grpc.ClientConn, error) {
	d.connMu.Lock()
	defer d.connMu.Unlock()
	if c, ok := d.conns[addr]; ok {
		return c, nil
	}
	if d.conns == nil {
		return nil, errs.New(errs.Unavailable, op, addr, "datanode is closing")
	}
	// The last transport credentials win: DialOptions may replace these.
	// Under simple auth every call states this datanode's identity.
	opts := append(flow.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if d.cfg.Auth == AuthSimple {
		opts = append(opts, grpc.WithPerRPCCredentials(security.SimpleCredentials(security.Identity{Role: security.RoleDatanode, Name: d.id})))
	}
	opts = append(opts, d.cfg.DialOptions...)
	c, err := grpc.NewClient(addr, opts...)
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, op, addr, err)
	}
	d.conns[addr] = c
	return c, nil
}

// ID returns the datanode's id.
func (d *Datanode) ID() string { return d.id }

// Addr returns the advertised gRPC address.
func (d *Datanode) Addr() string { return d.addr }

// HTTPAddr returns the bound metrics address, or "".
func (d *Datanode) HTTPAddr() string {
	if d.httpLis == nil {
		return ""
	}
	return d.httpLis.Addr().String()
}

// Store returns the block store (tests and tools).
func (d *Datanode) Store() *lbm.Store { return d.store }

// Registry returns the node's metrics registry.
func (d *Datanode) Registry() *prometheus.Registry { return d.reg }

// Info describes this datanode as it registers.
func (d *Datanode) Info() *api.DatanodeInfo {
	capacity, used, failed := d.usage()
	return &api.DatanodeInfo{Id: d.id, Addr: d.addr, HttpAddr: d.HTTPAddr(), HdfsDataAddr: d.HDFSDataAddr(), Capacity: capacity, Used: used, FailedVolumes: failed}
}

// usage returns the capacity (of healthy dirs), used bytes and failed
// volume count. Without a configured capacity, the capacity is the used
// bytes plus the free space of the file systems of the healthy dirs.
func (d *Datanode) usage() (capacity, used uint64, failed uint32) {
	c, u := d.store.Usage()
	bad := d.store.FailedDirs()
	failed = uint32(len(bad))
	used = uint64(max(u, 0))
	healthy := len(d.cfg.DataDirs) - len(bad)
	if c > 0 {
		return uint64(c) * uint64(healthy) / uint64(len(d.cfg.DataDirs)), used, failed
	}
	isBad := map[string]bool{}
	for _, b := range bad {
		isBad[filepath.Clean(b)] = true
	}
	seen := map[syscall.Fsid]bool{}
	var free uint64
	for _, dir := range d.cfg.DataDirs {
		if isBad[filepath.Clean(dir)] {
			continue
		}
		var st syscall.Statfs_t
		if syscall.Statfs(dir, &st) != nil || seen[st.Fsid] {
			continue
		}
		seen[st.Fsid] = true
		free += st.Bavail * uint64(st.Bsize)
	}
	return used + free, used, failed
}

// Close stops serving (letting running RPCs finish for a while), stops the
// namenode actors and command workers, and closes the store. Safe to call
// twice.
func (d *Datanode) Close() error {
	d.closed.Do(func() {
		if d.hdfsDoor != nil {
			d.hdfsDoor.Close() // its writes end before the streams they feed
		}
		if d.grpcSrv != nil {
			serve.Stop(d.grpcSrv, 2*time.Second)
		} else if d.grpcLis != nil {
			d.grpcLis.Close()
		}
		if d.httpSrv != nil {
			d.httpSrv.Close()
		}
		d.cancel()
		d.wg.Wait()
		d.connMu.Lock()
		for _, c := range d.conns {
			c.Close()
		}
		d.conns = nil
		d.connMu.Unlock()
		// Streams are over: what is still being written is left as after
		// a crash (docs/ARCHITECTURE.md): its hsynced bytes come back as
		// waiting replicas at the next start.
		d.rbws.expire(time.Now().Add(time.Hour), true)
		if d.store != nil {
			d.closeErr = d.store.Close()
		}
		if d.log != nil {
			d.log.Info("datanode stopped")
		}
	})
	return d.closeErr
}
