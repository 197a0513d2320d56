package localcluster

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/blockfs/blockfs/datanode"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/namenode"
	"github.com/blockfs/blockfs/topology"
)

// Config describes the cluster to start.
type Config struct {
	Namenodes int // default 3
	// Dir holds every node's data; "" makes a temp dir removed by Close.
	Dir string
	// Logger for all nodes; nil discards logs.
	Logger *slog.Logger
	// Namenode adjusts each namenode's config before it starts.
	Namenode func(i int, c *namenode.Config)
	// Datanodes is the number of datanodes, started after the namenodes
	// (default 0).
	Datanodes int
	// Datanode adjusts each datanode's config before it starts (set
	// c.Store.Encrypt for encryption at rest, say).
	Datanode func(i int, c *datanode.Config)

	// InmemRaft gives each namenode a raft.InmemTransport (address "nn1",
	// "nn2", ...) instead of a TCP transport, all connected, so that tests
	// can cut Raft links with Isolate, Partition and Heal. Only Raft
	// traffic goes through it: gRPC between namenodes (forwarding, read
	// index), from clients and from datanodes stays on loopback TCP, so a
	// "partitioned" node can still forward a request to the leader it
	// last knew. A restarted namenode gets a fresh transport at the same
	// address, wired as the current partition allows.
	InmemRaft bool
	// RaftObserver, with InmemRaft, is called (from Raft's goroutines, so
	// it must be quick and safe for concurrent use) for every outgoing
	// AppendEntries, InstallSnapshot and RequestVote.
	RaftObserver func(RaftEvent)

	// MTLS runs the cluster under mutual TLS with role certificates (a
	// fresh CA; namenode/<id>, datanode/<id> and user/<name> identities)
	// instead of simple auth. ClientAs and TLSFor give tests certificates.
	MTLS bool
	// Groups, if set, is the namenodes' group mapping (user -> groups).
	Groups map[string][]string
	// Racks, if above 0, spreads the datanodes over that many racks: the
	// namenodes' topology file puts datanode i (0-based) in RackOf(i).
	Racks int
	// HDFSData starts every datanode with its HDFS data transfer door on
	// 127.0.0.1:0 (Datanode.HDFSDataAddr says where).
	HDFSData bool
}

// RackOf is the rack of datanode i (0-based) under Config.Racks.
func (c *Cluster) RackOf(i int) string {
	if c.cfg.Racks <= 0 {
		return topology.DefaultRack
	}
	return fmt.Sprintf("/rack%d", i%c.cfg.Racks+1)
}

// Cluster is a running in-process cluster.
type Cluster struct {
	cfg     Config
	dir     string // the cluster's data
	tempDir bool
	log     *slog.Logger

	mu        sync.Mutex
	namenodes []*namenode.Namenode // nil where stopped
	nnConfigs []namenode.Config
	datanodes []*datanode.Datanode // nil where stopped
	dnConfigs []datanode.Config
	net       *inmemNet // with Config.InmemRaft; guarded by mu
	pki       *pki      // with Config.MTLS
	groupFile string
}

// Start starts the namenodes (the first bootstraps, the rest join) and waits
// until every one of them has applied the membership.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	if cfg.Namenodes == 0 {
		cfg.Namenodes = 3
	}
	if cfg.Namenodes < 0 || cfg.Datanodes < 0 {
		return nil, errs.New(errs.Invalid, "localcluster.Start", "", "negative node count")
	}
	c := &Cluster{cfg: cfg, dir: cfg.Dir, log: cfg.Logger}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.dir == "" {
		d, err := os.MkdirTemp("", "blockfs-localcluster-")
		if err != nil {
			return nil, err
		}
		c.dir, c.tempDir = d, true
	}
	if cfg.InmemRaft {
		c.net = newInmemNet(cfg.Namenodes, cfg.RaftObserver)
	}
	if cfg.MTLS {
		var err error
		if c.pki, err = newPKI(); err != nil {
			return nil, err
		}
	}
	if err := c.writeGroups(); err != nil {
		return nil, err
	}
	topo, err := c.writeTopology()
	if err != nil {
		return nil, err
	}
	c.namenodes = make([]*namenode.Namenode, cfg.Namenodes)
	c.nnConfigs = make([]namenode.Config, cfg.Namenodes)
	for i := range cfg.Namenodes {
		nc := namenode.DefaultConfig()
		nc.ID = fmt.Sprintf("nn%d", i+1)
		nc.DataDir = filepath.Join(c.dir, nc.ID)
		nc.GRPCAddr = "127.0.0.1:0"
		nc.Raft.Addr = "127.0.0.1:0"
		nc.HTTPAddr = "127.0.0.1:0"
		nc.Raft.Heartbeat = 200 * time.Millisecond
		nc.Raft.Election = 400 * time.Millisecond
		nc.WorkInterval = 100 * time.Millisecond
		setBlockTimings(&nc)
		// Blocks no larger than the datanodes' containers: a larger block
		// size is refused at Create, not when its first block is written.
		nc.Namespace.MaxBlockSize = MaxBlockSize
		nc.Logger = c.log
		nc.TopologyFile = topo
		// In-process clusters trust loopback unless Config.MTLS asks for
		// role certificates.
		if err := c.secureNamenode(&nc); err != nil {
			return nil, err
		}
		if i == 0 {
			nc.Raft.Bootstrap = true
		}
		if cfg.Namenode != nil {
			cfg.Namenode(i, &nc)
		}
		c.nnConfigs[i] = nc
	}
	for i := range cfg.Namenodes {
		if i > 0 {
			c.nnConfigs[i].Raft.Join = c.namenodes[0].GRPCAddr()
		}
		if err := c.startNamenode(ctx, i); err != nil {
			c.Close()
			return nil, err
		}
		if i == 0 {
			if _, err := c.WaitLeader(ctx); err != nil {
				c.Close()
				return nil, err
			}
		}
	}
	if err := c.WaitConverged(ctx); err != nil {
		c.Close()
		return nil, err
	}
	if err := c.WaitTokens(ctx); err != nil {
		c.Close()
		return nil, err
	}
	if err := c.startDatanodes(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) startNamenode(ctx context.Context, i int) error {
	nc := c.nnConfigs[i]
	lis, err := net.Listen("tcp", nc.GRPCAddr)
	if err != nil {
		return err
	}
	if c.net != nil {
		c.mu.Lock()
		nc.Raft.Transport = c.net.fresh(i)
		c.mu.Unlock()
	}
	n, err := namenode.Start(ctx, nc, lis)
	if err != nil {
		return err
	}
	// Pin the ports so a restarted node comes back where its peers expect it.
	c.nnConfigs[i].GRPCAddr = n.GRPCAddr()
	c.nnConfigs[i].Raft.Addr = n.RaftAddr()
	if n.HTTPAddr() != "" {
		c.nnConfigs[i].HTTPAddr = n.HTTPAddr()
	}
	if n.HDFSRPCAddr() != "" {
		c.nnConfigs[i].HDFSRPC.Addr = n.HDFSRPCAddr()
	}
	c.mu.Lock()
	c.namenodes[i] = n
	c.mu.Unlock()
	return nil
}

// HDFSRPCAddrs returns every namenode's HDFS door address (Hadoop IPC),
// in order, as configured after start; "" for a namenode without one.
func (c *Cluster) HDFSRPCAddrs() []string {
	out := make([]string, len(c.nnConfigs))
	for i, nc := range c.nnConfigs {
		out[i] = nc.HDFSRPC.Addr
	}
	return out
}

// Namenode returns namenode i, or nil if it is stopped.
func (c *Cluster) Namenode(i int) *namenode.Namenode {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.namenodes[i]
}

// Namenodes returns the running namenodes.
func (c *Cluster) Namenodes() []*namenode.Namenode {
	c.mu.Lock()
	defer c.mu.Unlock()
	return running(c.namenodes)
}

// running returns the non-nil (started) nodes of xs.
func running[T any](xs []*T) []*T {
	var out []*T
	for _, x := range xs {
		if x != nil {
			out = append(out, x)
		}
	}
	return out
}

// NamenodeAddrs returns the gRPC addresses of all namenodes, running or not.
func (c *Cluster) NamenodeAddrs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, len(c.nnConfigs))
	for i, nc := range c.nnConfigs {
		out[i] = nc.GRPCAddr
	}
	return out
}

// Leader returns the index of the ready leader, or -1.
func (c *Cluster) Leader() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, n := range c.namenodes {
		if n != nil && n.Ready() {
			return i
		}
	}
	return -1
}

// WaitLeader waits until some running namenode is a ready leader.
func (c *Cluster) WaitLeader(ctx context.Context) (int, error) {
	for {
		if i := c.Leader(); i >= 0 {
			return i, nil
		}
		select {
		case <-ctx.Done():
			return -1, errs.Wrap(errs.Timeout, "wait leader", "", ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// WaitConverged waits until every running namenode has applied the leader's
// applied index and their namespace hashes agree. A hash encodes the whole
// namespace (a quarter of a second at a million files), so the leader's is
// computed once a try, and a lone namenode, which has nothing to agree
// with, computes none.
func (c *Cluster) WaitConverged(ctx context.Context) error {
	for {
		li, err := c.WaitLeader(ctx)
		if err != nil {
			return err
		}
		leader := c.Namenode(li)
		if leader == nil {
			continue
		}
		target := leader.AppliedIndex()
		ok := true
		var want *[32]byte // the leader's hash, computed once a try and only if there is a follower
		for _, n := range c.Namenodes() {
			if n == leader {
				continue
			}
			if n.AppliedIndex() < target {
				ok = false
				break
			}
			if want == nil {
				h := leader.NamespaceHash()
				want = &h
			}
			if n.NamespaceHash() != *want {
				ok = false
				break
			}
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return errs.Wrap(errs.Timeout, "wait converged", "", ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// WaitTokens waits until every running namenode has published its
// token-signing key, so it can answer GetBlockLocations and AddBlock.
func (c *Cluster) WaitTokens(ctx context.Context) error {
	for {
		ready := true
		for _, n := range c.Namenodes() {
			if !n.TokensReady() {
				ready = false
			}
		}
		if ready {
			return nil
		}
		select {
		case <-ctx.Done():
			return errs.Wrap(errs.Timeout, "wait tokens", "", ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// StopNamenode stops namenode i (its data stays).
func (c *Cluster) StopNamenode(i int) error {
	c.mu.Lock()
	n := c.namenodes[i]
	c.namenodes[i] = nil
	if n != nil && c.net != nil {
		// Peers see a stopped node as unreachable at once, as a TCP peer
		// refusing connections.
		c.net.gone(i)
	}
	c.mu.Unlock()
	if n == nil {
		return nil
	}
	return n.Close()
}

// RestartNamenode starts a stopped namenode again on its old addresses and
// data directory.
func (c *Cluster) RestartNamenode(ctx context.Context, i int) error {
	if c.Namenode(i) != nil {
		return errs.Newf(errs.Precondition, "localcluster.Cluster.RestartNamenode", "", "namenode %d is running", i)
	}
	c.nnConfigs[i].Raft.Bootstrap = false
	return c.startNamenode(ctx, i)
}

// Dir returns the cluster's data directory.
func (c *Cluster) Dir() string { return c.dir }

// Close stops every node and removes a temp dir.
func (c *Cluster) Close() error {
	var first error
	for i := range c.datanodes {
		if err := c.StopDatanode(i); err != nil && first == nil {
			first = err
		}
	}
	for i := range c.namenodes {
		if err := c.StopNamenode(i); err != nil && first == nil {
			first = err
		}
	}
	if c.tempDir {
		os.RemoveAll(c.dir)
	}
	return first
}
