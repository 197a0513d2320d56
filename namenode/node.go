package namenode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/audit"
	"github.com/blockfs/blockfs/balancer"
	"github.com/blockfs/blockfs/blocks"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/hadoopipc"
	"github.com/blockfs/blockfs/internal/base/caps"
	"github.com/blockfs/blockfs/internal/node/fairshare"
	"github.com/blockfs/blockfs/internal/node/serve"
	"github.com/blockfs/blockfs/leases"
	"github.com/blockfs/blockfs/namenode/decommission"
	"github.com/blockfs/blockfs/namenode/fsm"
	"github.com/blockfs/blockfs/namenode/idrange"
	"github.com/blockfs/blockfs/namenode/proposer"
	"github.com/blockfs/blockfs/namenode/raftstore"
	"github.com/blockfs/blockfs/namenode/readindex"
	"github.com/blockfs/blockfs/namenode/reports"
	"github.com/blockfs/blockfs/namenode/safemode"
	"github.com/blockfs/blockfs/namespace"
	"github.com/blockfs/blockfs/security"
	"github.com/blockfs/blockfs/topology"
)

// Namenode is one running namenode: Raft, the FSM, the block map, and the
// gRPC and HTTP servers.
type Namenode struct {
	cfg   Config
	log   *slog.Logger
	reg   *prometheus.Registry
	met   *metrics
	fsm   *fsm.FSM
	snaps *fsm.SnapshotStore
	// audit is the audit log (audit.go); nil when off. auditAuth is how
	// callers are authenticated, as its lines say it.
	audit     *audit.Logger
	auditAuth string
	blocks    *blocks.Manager

	raft      *raft.Raft
	store     *raftboltdb.BoltStore
	transport raft.Transport
	reads     *readindex.Batcher
	proposer  *proposer.Proposer
	ids       *idrange.Cursor    // PrepareFile's ids (putfile.go)
	tickets   *security.Verifier // PutFile's check of PrepareFile's tokens
	keys      *security.KeyManager
	issuer    *security.Issuer
	revoked   *security.Revocations              // the FSM's deny list, checked on every call
	hdr       atomic.Pointer[api.ResponseHeader] // the latest reply header (server.go)
	ready     atomic.Bool                        // leader and caught up with its own term

	grpcLis  net.Listener
	grpcSrv  *serve.Server
	grpcAddr string
	httpSrv  *http.Server
	httpLis  net.Listener
	hdfsSrv  *hadoopipc.Server
	hdfsAddr string
	peers    *peerConns
	topo     *topology.Resolver
	decom    *decommission.Service
	safe     *safemode.Mode
	// leaseWatch times lease holders on the leader's monotonic clock.
	leaseWatch leases.Watch
	authz      *security.Authorizer
	admit      *fairshare.Admission // the write rate and the fair scheduler, behind authz
	groups     *security.GroupMapping
	members    memberCache
	// raftAdmit says who may speak Raft to this node (raftadmit.go); nil
	// without TLS.
	raftAdmit *raftAdmission
	// reportParts collects multi-part full block reports.
	reportParts *reports.Parts
	bal         *balancer.Runner // the leader's balancer run (balancer_door.go)
	// completeWaits caps the Complete calls waiting for reports.
	completeWaits *caps.Caps
	// receipts are the datanodes' replica receipt keys (minrepl.go).
	receipts *security.ReceiptKeys

	stop chan struct{}
	wg   sync.WaitGroup
	// recoveries are the block recoveries this leader sent (leases_leader.go).
	recoveries recoveryQueue
	closeErr   error
	closed     sync.Once
}

// Start opens the node's Raft state, starts serving, and bootstraps or
// joins as configured. lis, if non-nil, is the gRPC listener to use.
func Start(ctx context.Context, cfg Config, lis net.Listener) (_ *Namenode, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("namenode", cfg.ID)
	reg := cfg.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	bm, err := blocks.New(cfg.Blocks)
	if err != nil {
		return nil, err
	}
	cfg.Tokens.NodeID = cfg.ID
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Tokens.Now == nil {
		cfg.Tokens.Now = cfg.Now
	}
	km, err := security.NewKeyManager(cfg.Tokens)
	if err != nil {
		return nil, err
	}
	issuer, err := security.NewIssuer(cfg.Tokens, km, reg)
	if err != nil {
		return nil, err
	}
	groups, err := security.NewGroupMapping(cfg.Auth.GroupFile)
	if err != nil {
		return nil, err
	}
	topo, err := topology.NewResolver(cfg.TopologyFile)
	if err != nil {
		return nil, err
	}
	if cfg.Auth.Mode == AuthSimple {
		log.Warn("simple authentication: every caller is trusted to state its own user name and role (user, datanode, namenode) in request metadata; anyone who can reach this port can act as any user, the superuser, a datanode or a namenode; use --auth=mtls outside a trusted loopback network")
	}
	n := &Namenode{cfg: cfg, log: log, reg: reg, blocks: bm, keys: km, issuer: issuer, groups: groups, topo: topo, safe: safemode.New(cfg.SafeMode),
		stop: make(chan struct{}), peers: newPeerConns(cfg.Auth.PeerTLS, peerIdentity(cfg)), revoked: new(security.Revocations),
		receipts: security.NewReceiptKeys(reg)}
	n.admit = newAdmission(cfg.Limits, authEnv{n}.IsSuperuser, reg)
	n.authz = security.NewAuthorizer(security.AuthConfig{
		Simple: cfg.Auth.Mode == AuthSimple, TrustDomain: cfg.Auth.TrustDomain, Env: authEnv{n}, Registry: reg, Revoked: n.revoked,
		Redirects: security.NewRedirectVerifier(cfg.Tokens, fsmKeys{n}), Admit: n.admit.Admit, HTTPStaticUser: cfg.Auth.HTTPStaticUser,
	})
	n.met = newMetrics(reg, n)
	n.ids = idrange.New(n.reserveIDs, cfg.Now, cfg.Tokens.TokenLifetime)
	if n.tickets, err = security.NewVerifier(cfg.Tokens, fsmKeys{n}, nil); err != nil {
		return nil, err
	}
	if n.decom, err = decommission.New(decommission.Config{Blocks: bm, States: func() []*api.AdminStateEntry { return n.fsm.AdminStates() },
		Propose: n.propose, ExcludeFile: cfg.HostsExclude, Self: "namenode/" + cfg.ID, Log: log}); err != nil {
		return nil, err
	}
	reg.MustRegister(decommission.NewCollector(bm))
	if err := n.openAudit(); err != nil {
		return nil, err
	}
	n.reportParts = reports.NewParts(reports.Limits{PerDatanode: cfg.Limits.ReportBytesPerDatanode, Total: cfg.Limits.ReportBytesTotal, TTL: cfg.Limits.ReportTTL},
		func(limit string) { n.met.refused.WithLabelValues(limit).Inc() })
	n.completeWaits = caps.New(cfg.Limits.CompleteWaitsPerUser, cfg.Limits.CompleteWaitsTotal)
	n.bal = n.newBalancer()
	defer func() {
		if err != nil {
			n.Close()
		}
	}()

	if lis == nil {
		if lis, err = net.Listen("tcp", cfg.GRPCAddr); err != nil {
			return nil, errs.Wrap(errs.Unavailable, "namenode.Start", cfg.GRPCAddr, err)
		}
	}
	n.grpcLis = lis
	n.grpcAddr = cfg.AdvertiseGRPC
	if n.grpcAddr == "" {
		n.grpcAddr = lis.Addr().String()
	}
	if err := n.startRaft(); err != nil {
		return nil, err
	}
	n.reads = readindex.New(n.raft, n.fsm.AppliedIndex)
	n.proposer = proposer.New(n.applyRaft, n.met.proposal, n.cfg.Raft.MaxInflightApplies, n.cfg.Raft.MaxBatch)
	n.startGRPC()
	if err := n.startHTTP(); err != nil {
		return nil, err
	}
	if err := n.startHDFSRPC(); err != nil {
		return nil, err
	}
	n.wg.Add(8)
	go func() { defer n.wg.Done(); n.admit.Run(n.stop) }()
	go n.adminLoop()
	go n.reapReportsLoop()
	go n.watchLeadership()
	go n.workLoop()
	go n.leaseLoop()
	go n.keyLoop()
	go n.registerSelf()
	if n.raftAdmit != nil {
		n.wg.Add(1)
		go func() { defer n.wg.Done(); n.raftAdmit.loop(n.stop) }()
	}
	if n.cfg.TrashInterval > 0 {
		n.wg.Add(1)
		go n.trashLoop()
	}
	if n.cfg.Raft.Join != "" && !n.hadState() {
		if err := n.join(ctx); err != nil {
			return nil, err
		}
	}
	log.Info("namenode started", "grpc", n.grpcAddr, "raft", n.transport.LocalAddr(), "http", n.HTTPAddr())
	return n, nil
}

func (n *Namenode) hadState() bool {
	last, _ := n.store.LastIndex()
	return last > 0
}

// startError is a failure of Start at step (what it was doing), with its
// cause.
func startError(k errs.Kind, path, step string, cause error) error {
	return &errs.Error{Kind: k, Op: "namenode.Start", Path: path, Msg: step, Err: cause}
}

func (n *Namenode) startRaft() error {
	cfg := n.cfg
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return startError(errs.IO, cfg.DataDir, "make the data directory", err)
	}
	logw := raftstore.LogWriter(n.log)
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.ID)
	rc.HeartbeatTimeout = cfg.Raft.Heartbeat
	rc.ElectionTimeout = cfg.Raft.Election
	rc.LeaderLeaseTimeout = cfg.Raft.Heartbeat
	rc.CommitTimeout = 5 * time.Millisecond
	rc.SnapshotThreshold = cfg.Raft.SnapshotEvery
	rc.TrailingLogs = cfg.Raft.SnapshotEvery
	rc.BatchApplyCh = true
	rc.MaxAppendEntries = 512
	rc.Logger = hclog.New(&hclog.LoggerOptions{Name: "raft", Level: hclog.Warn, Output: logw})

	store, logs, err := raftstore.Open(cfg.DataDir)
	if err != nil {
		return startError(errs.IO, cfg.DataDir, "open the raft store", err)
	}
	n.store = store
	sf, err := fsm.OpenSnapshotStore(cfg.DataDir, logw, n.log)
	if err != nil {
		return startError(errs.IO, cfg.DataDir, "open the snapshot store", err)
	}
	n.snaps = sf
	n.fsm = fsm.New(fsm.Config{Superuser: cfg.Namespace.Superuser, Supergroup: cfg.Namespace.Supergroup,
		Events: blockEventsAdapter{n.blocks}, Snapshots: sf, Registerer: n.reg, Revocations: n.revoked})
	var trans raft.Transport = cfg.Raft.Transport
	setRaft := func(*raft.Raft) {}
	if trans == nil {
		nt, set, err := n.newRaftTransport(logw)
		if err != nil {
			return err
		}
		trans, setRaft = nt, set
	}
	n.transport = trans
	has, err := raft.HasExistingState(logs, store, sf)
	if err != nil {
		return err
	}
	r, err := raft.NewRaft(rc, n.fsm, logs, store, sf, trans)
	if err != nil {
		return startError(errs.Internal, "", "start raft", err)
	}
	n.raft = r
	setRaft(r)
	if !has && cfg.Raft.Bootstrap {
		conf := raft.Configuration{}
		if len(cfg.Raft.Peers) == 0 {
			conf.Servers = []raft.Server{{ID: rc.LocalID, Address: trans.LocalAddr()}}
		}
		for _, p := range cfg.Raft.Peers {
			conf.Servers = append(conf.Servers, raft.Server{ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.RaftAddr)})
		}
		if err := r.BootstrapCluster(conf).Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
			return startError(errs.Internal, "", "bootstrap", err)
		}
	}
	return nil
}

// join asks the cluster at cfg.Join to add this node, retrying until ctx ends.
func (n *Namenode) join(ctx context.Context) error {
	req := &api.AddServerRequest{
		Id: n.cfg.ID, RaftAddr: string(n.transport.LocalAddr()), GrpcAddr: n.grpcAddr, HttpAddr: n.HTTPAddr(),
	}
	backoff := 100 * time.Millisecond
	for {
		conn, err := n.peers.get("AddServer", n.cfg.Raft.Join)
		if err == nil && n.raftAdmit != nil {
			// Admit the cluster's servers before asking it to replicate here.
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err = n.raftAdmit.seedFrom(cctx, api.NewClientServiceClient(conn))
			cancel()
		}
		if err == nil {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			_, err = api.NewAdminClient(conn).AddServer(cctx, req)
			cancel()
			if err == nil {
				n.log.Info("joined cluster", "via", n.cfg.Raft.Join)
				return nil
			}
		}
		n.log.Warn("join failed, retrying", "via", n.cfg.Raft.Join, "err", err)
		select {
		case <-ctx.Done():
			return startError(errs.Unavailable, n.cfg.Raft.Join, "join", err)
		case <-n.stop:
			return errs.New(errs.Unavailable, "namenode.Start", n.cfg.Raft.Join, "node stopped")
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// watchLeadership tracks whether this node is a leader that has caught up
// with its own term (Barrier), and registers members it knows about.
func (n *Namenode) watchLeadership() {
	defer n.wg.Done()
	for {
		select {
		case <-n.stop:
			return
		case isLeader := <-n.raft.LeaderCh():
			n.ready.Store(false)
			if !isLeader {
				continue
			}
			if err := n.raft.Barrier(n.cfg.Raft.ApplyTimeout).Error(); err != nil {
				n.log.Warn("leader barrier failed", "err", err)
				continue
			}
			// A leader that heard the datanodes all along as a follower
			// leaves safe mode at once; one whose map is still filling
			// stays read-only until it is not (safemode.go).
			n.safe.Enter(false)
			n.updateSafeMode()
			n.ready.Store(true)
			n.log.Info("leader ready", "term", n.raft.CurrentTerm(), "safe_mode", n.safe.On())
			n.registerMembers()
		}
	}
}

// registerMembers makes sure the member table (Raft id -> gRPC address)
// has this node and every configured peer.
func (n *Namenode) registerMembers() {
	want := []*api.Member{{Id: n.cfg.ID, RaftAddr: string(n.transport.LocalAddr()), GrpcAddr: n.grpcAddr, HttpAddr: n.HTTPAddr(), Voter: true}}
	for _, p := range n.cfg.Raft.Peers {
		if p.ID != n.cfg.ID {
			want = append(want, &api.Member{Id: p.ID, RaftAddr: p.RaftAddr, GrpcAddr: p.GRPCAddr, Voter: true})
		}
	}
	for _, m := range want {
		cur, _ := n.fsm.Member(m.Id)
		if cur != nil && (m.Id != n.cfg.ID || cur.GrpcAddr == m.GrpcAddr) {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), n.cfg.Raft.ApplyTimeout)
		_, _, err := n.propose(ctx, "SetMember", fsm.CmdSetMember, &api.SetMemberCommand{Member: m})
		cancel()
		if err != nil {
			n.log.Warn("register member", "id", m.Id, "err", err)
		}
	}
}

// registerSelf makes sure the member table has this node's own gRPC and
// HTTP addresses (peers bootstrapped from --peers are registered by the
// leader without an HTTP address). It retries until the entry is right.
func (n *Namenode) registerSelf() {
	defer n.wg.Done()
	self := &api.Member{Id: n.cfg.ID, RaftAddr: string(n.transport.LocalAddr()), GrpcAddr: n.grpcAddr, HttpAddr: n.HTTPAddr(), Voter: true}
	for {
		cur, _ := n.fsm.Member(n.cfg.ID)
		if cur != nil && cur.GrpcAddr == self.GrpcAddr && cur.HttpAddr == self.HttpAddr {
			return
		}
		if n.raft.Leader() != "" {
			ctx, cancel := context.WithTimeout(context.Background(), n.cfg.Raft.ApplyTimeout)
			_, _, err := n.propose(ctx, "SetMember", fsm.CmdSetMember, &api.SetMemberCommand{Member: self})
			cancel()
			if err != nil {
				n.log.Debug("register own member entry", "err", err)
			}
		}
		select {
		case <-n.stop:
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// workLoop runs datanode liveness on every node, and replication and
// invalidation planning on the leader.
func (n *Namenode) workLoop() {
	n.every(n.cfg.WorkInterval, func() {
		n.blocks.CheckLiveness()
		// Every namenode tracks its own map (status and fsck read it);
		// only the leader plans from it.
		if !n.updateSafeMode() && n.isReadyLeader() {
			n.blocks.ComputeWork()
		}
	})
}

// every runs fn every interval until the node stops; a goroutine of
// n.wg (its caller has Added it).
func (n *Namenode) every(interval time.Duration, fn func()) {
	defer n.wg.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
			fn()
		}
	}
}

func (n *Namenode) isReadyLeader() bool {
	return n.raft.State() == raft.Leader && n.ready.Load()
}

// ID returns the node's Raft id.
func (n *Namenode) ID() string { return n.cfg.ID }

// GRPCAddr returns the address clients dial.
func (n *Namenode) GRPCAddr() string { return n.grpcAddr }

// RaftAddr returns the Raft transport address.
func (n *Namenode) RaftAddr() string { return string(n.transport.LocalAddr()) }

// HTTPAddr returns the metrics address, or "".
func (n *Namenode) HTTPAddr() string {
	if n.httpLis == nil {
		return ""
	}
	return n.httpLis.Addr().String()
}

// IsLeader reports whether this node is the Raft leader.
func (n *Namenode) IsLeader() bool { return n.raft != nil && n.raft.State() == raft.Leader }

// Ready reports whether this node is a leader ready to serve.
func (n *Namenode) Ready() bool { return n.isReadyLeader() }

// AppliedIndex returns the FSM's applied index.
func (n *Namenode) AppliedIndex() uint64 { return n.fsm.AppliedIndex() }

// Blocks returns the node's block map.
func (n *Namenode) Blocks() *blocks.Manager { return n.blocks }

// Registry returns the node's metrics registry.
func (n *Namenode) Registry() *prometheus.Registry { return n.reg }

// NamespaceHash returns a deterministic hash of the namespace and the
// lease table: equal on namenodes that applied the same log.
func (n *Namenode) NamespaceHash() [32]byte {
	return n.fsm.Hash()
}

// WaitApplied waits until the node has applied idx.
func (n *Namenode) WaitApplied(ctx context.Context, idx uint64) error {
	if !n.fsm.WaitApplied(ctx.Done(), idx) {
		return errs.Wrap(errs.Timeout, "namenode.Namenode.WaitApplied", fmt.Sprint(idx), ctx.Err())
	}
	return nil
}

// Close stops serving and shuts Raft down. It is safe to call twice.
func (n *Namenode) Close() error {
	n.closed.Do(func() {
		close(n.stop)
		n.bal.Close()
		if n.grpcSrv != nil {
			serve.Stop(n.grpcSrv, 2*time.Second)
		} else if n.grpcLis != nil {
			n.grpcLis.Close()
		}
		if n.httpSrv != nil {
			n.httpSrv.Close()
		}
		if n.proposer != nil {
			n.proposer.Close()
		}
		if n.raft != nil {
			if err := n.raft.Shutdown().Error(); err != nil {
				n.closeErr = err
			}
		}
		if n.hdfsSrv != nil { // after Raft: its clients fail over once no follower hears from this leader
			n.hdfsSrv.Close()
		}
		if c, ok := n.transport.(io.Closer); ok {
			c.Close()
		}
		if n.store != nil {
			n.store.Close()
		}
		n.peers.close()
		n.wg.Wait()
		if err := n.audit.Close(); err != nil && n.closeErr == nil {
			n.closeErr = err
		}
	})
	return n.closeErr
}

// blockEventsAdapter feeds FSM block changes into the block map.
type blockEventsAdapter struct{ m *blocks.Manager }

func (a blockEventsAdapter) Expect(b namespace.Block, inode namespace.ID, repl uint32, complete bool) {
	a.m.SetExpected(b.ID, b.GenStamp, uint64(inode), repl, complete)
}

func (a blockEventsAdapter) Forget(bs []namespace.Block) {
	ids := make([]uint64, len(bs))
	for i, b := range bs {
		ids[i] = b.ID
	}
	a.m.Forget(ids...)
}

// ClientServer returns the node's ClientService implementation, for
// in-process callers (benchmarks, embedding) that skip the network.
func (n *Namenode) ClientServer() api.ClientServiceServer { return newClientService(n) }

// reapReportsLoop drops expired unfinished reports every quarter TTL
// until the namenode stops, whether or not more reports arrive.
func (n *Namenode) reapReportsLoop() {
	defer n.wg.Done()
	t := time.NewTicker(n.cfg.Limits.ReportTTL / 4)
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case now := <-t.C:
			n.reportParts.Reap(now)
		}
	}
}
