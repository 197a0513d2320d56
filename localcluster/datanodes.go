package localcluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/blockfs/blockfs/blocks"
	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/datanode"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/namenode"
)

// DatanodeHeartbeat is the heartbeat interval of the cluster's datanodes
// (and what the namenodes expect).
const DatanodeHeartbeat = 100 * time.Millisecond

// MaxBlockSize is the largest block an in-process cluster takes: its
// datanodes' containers are this big (small, so tests fill and rotate
// them), and its namenodes refuse a Create of larger blocks.
const MaxBlockSize = 64 << 20

// setBlockTimings makes a stopped datanode dead within about a second and
// lets a replication that went nowhere be retried after a few seconds.
func setBlockTimings(nc *namenode.Config) {
	nc.Blocks.HeartbeatInterval = DatanodeHeartbeat
	nc.Blocks.DeadAfterMissed = 10 // dead after 1 s without heartbeats
	nc.Blocks.StaleAfter = 3 * DatanodeHeartbeat
	nc.Blocks.ReplicationTimeout = 5 * time.Second
	// A new leader applies its (small) log well within this; reports of a
	// block can reach a follower before it applied the AddBlock.
	nc.Blocks.UnknownReplicaGrace = 10 * time.Second
	// A restarted namenode waits this long after its block map filled
	// before it takes writes again (HDFS's extension, 30 s by default).
	nc.SafeMode.Extension = 300 * time.Millisecond
}

func (c *Cluster) startDatanodes(ctx context.Context) error {
	n := c.cfg.Datanodes
	c.datanodes = make([]*datanode.Datanode, n)
	c.dnConfigs = make([]datanode.Config, n)
	nns := c.NamenodeAddrs()
	for i := range n {
		dc := datanode.DefaultConfig()
		dc.ID = fmt.Sprintf("dn%d", i+1)
		dc.DataDirs = []string{filepath.Join(c.dir, dc.ID, "data1"), filepath.Join(c.dir, dc.ID, "data2")}
		dc.GRPCAddr = "127.0.0.1:0"
		dc.HTTPAddr = "127.0.0.1:0"
		dc.Namenodes = nns
		dc.HeartbeatInterval = DatanodeHeartbeat
		dc.RPCTimeout = 2 * time.Second
		dc.Store.Capacity = 64 << 30
		dc.Store.MaxContainerSize, dc.MaxBlockSize = MaxBlockSize, MaxBlockSize
		dc.Logger = c.log
		if c.cfg.HDFSData {
			dc.HDFSDataAddr = "127.0.0.1:0"
		}
		if err := c.secureDatanode(&dc); err != nil {
			return err
		}
		if c.cfg.Datanode != nil {
			c.cfg.Datanode(i, &dc)
		}
		c.dnConfigs[i] = dc
	}
	for i := range n {
		if err := c.startDatanode(ctx, i); err != nil {
			return err
		}
	}
	return c.WaitDatanodes(ctx)
}

func (c *Cluster) startDatanode(ctx context.Context, i int) error {
	dc := c.dnConfigs[i]
	lis, err := net.Listen("tcp", dc.GRPCAddr)
	if err != nil {
		return err
	}
	d, err := datanode.Start(ctx, dc, lis)
	if err != nil {
		lis.Close()
		return err
	}
	// Pin the ports and id so a restarted node comes back as itself.
	c.dnConfigs[i].GRPCAddr = d.Addr()
	c.dnConfigs[i].ID = d.ID()
	if d.HTTPAddr() != "" {
		c.dnConfigs[i].HTTPAddr = d.HTTPAddr()
	}
	if d.HDFSDataAddr() != "" {
		c.dnConfigs[i].HDFSDataAddr = d.HDFSDataAddr()
	}
	c.mu.Lock()
	c.datanodes[i] = d
	c.mu.Unlock()
	return nil
}

// WaitDatanodes waits until every running namenode sees every running
// datanode live.
func (c *Cluster) WaitDatanodes(ctx context.Context) error {
	for {
		ok := true
		for _, nn := range c.Namenodes() {
			for _, d := range c.Datanodes() {
				info, found := nn.Blocks().Datanode(d.ID())
				if !found || info.State != blocks.Live {
					ok = false
				}
			}
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return errs.Wrap(errs.Timeout, "wait datanodes", "", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Datanode returns datanode i, or nil if it is stopped.
func (c *Cluster) Datanode(i int) *datanode.Datanode {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.datanodes[i]
}

// Datanodes returns the running datanodes.
func (c *Cluster) Datanodes() []*datanode.Datanode {
	c.mu.Lock()
	defer c.mu.Unlock()
	return running(c.datanodes)
}

// DatanodeAddrs returns the gRPC addresses of all datanodes, running or not.
func (c *Cluster) DatanodeAddrs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, len(c.dnConfigs))
	for i, dc := range c.dnConfigs {
		out[i] = dc.GRPCAddr
	}
	return out
}

// DatanodeID returns the id of datanode i, running or not.
func (c *Cluster) DatanodeID(i int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dnConfigs[i].ID
}

// StopDatanode stops datanode i (its data stays).
func (c *Cluster) StopDatanode(i int) error {
	c.mu.Lock()
	d := c.datanodes[i]
	c.datanodes[i] = nil
	c.mu.Unlock()
	if d == nil {
		return nil
	}
	return d.Close()
}

// RestartDatanode starts a stopped datanode again with its old id,
// addresses and data directories.
func (c *Cluster) RestartDatanode(ctx context.Context, i int) error {
	if c.Datanode(i) != nil {
		return errs.Newf(errs.Precondition, "localcluster.Cluster.RestartDatanode", "", "datanode %d is running", i)
	}
	return c.startDatanode(ctx, i)
}

// Client returns a client for every namenode, as the superuser "root".
// The caller closes it.
func (c *Cluster) Client() (*client.Client, error) { return c.ClientAs("root") }

// writeTopology writes the namenodes' topology file for Config.Racks and
// returns its path, "" when the datanodes are in one rack.
func (c *Cluster) writeTopology() (string, error) {
	if c.cfg.Racks <= 0 {
		return "", nil
	}
	var b strings.Builder
	for i := range c.cfg.Datanodes {
		fmt.Fprintf(&b, "dn%d %s\n", i+1, c.RackOf(i))
	}
	path := filepath.Join(c.dir, "topology")
	return path, os.WriteFile(path, []byte(b.String()), 0o644)
}
