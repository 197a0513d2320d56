package netfault

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/internal/testutil/nodeproc"
	"github.com/blockfs/blockfs/namenode"
)

// Ports every node uses on its own address (each host is alone on it).
const (
	nnGRPCPort = 9100
	nnRaftPort = 9101
	dnGRPCPort = 9200
)

// Cluster is 3 namenodes and some datanodes, each a process in a
// namespace of its own on one Net, and a client host whose namespace the
// test's own gRPC clients dial from.
type Cluster struct {
	Net     *Net
	NNHosts []*Host
	DNHosts []*Host
	Client  *Host
	NNs     []*nodeproc.Proc
	DNs     []*nodeproc.Proc
}

// StartCluster starts the cluster from the binaries in binDir, its data
// and logs under dir, and waits until every namenode listens. Close stops
// it and removes its namespaces.
func StartCluster(ctx context.Context, binDir, dir string, datanodes int) (_ *Cluster, err error) {
	n, err := NewNet(ctx)
	if err != nil {
		return nil, err
	}
	c := &Cluster{Net: n}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	for i := range 3 {
		h, err := n.AddHost(ctx, fmt.Sprintf("nn%d", i+1))
		if err != nil {
			return nil, err
		}
		c.NNHosts = append(c.NNHosts, h)
	}
	for i := range datanodes {
		h, err := n.AddHost(ctx, fmt.Sprintf("dn%d", i+1))
		if err != nil {
			return nil, err
		}
		c.DNHosts = append(c.DNHosts, h)
	}
	if c.Client, err = n.AddHost(ctx, "cl1"); err != nil {
		return nil, err
	}
	var peers []string
	for i, h := range c.NNHosts {
		peers = append(peers, fmt.Sprintf("nn%d=%s/%s", i+1, h.Addr(nnRaftPort), h.Addr(nnGRPCPort)))
	}
	peerList, nnList := strings.Join(peers, ","), strings.Join(c.NNAddrs(), ",")
	for i, h := range c.NNHosts {
		name := fmt.Sprintf("nn%d", i+1)
		p := &nodeproc.Proc{Name: name, Bin: filepath.Join(binDir, "namenode"), DataDir: filepath.Join(dir, name),
			GRPC: h.Addr(nnGRPCPort), LogPath: filepath.Join(dir, name+".log"), Netns: h.NS, Dial: c.Client.DialContext}
		p.Args = func() []string {
			return []string{"--id", name, "--data-dir", p.DataDir, "--grpc-addr", p.GRPC, "--raft-addr", h.Addr(nnRaftPort),
				"--http-addr", "", "--bootstrap", "--peers", peerList, "--auth", "simple", "--superuser", "root",
				"--heartbeat-interval", "200ms", "--dead-after-missed", "5", "--log-level", "warn",
				"--lease-check-interval", "200ms", "--recovery-timeout", "3s", "--safemode-extension", "0s", "--insecure-raft"}
		}
		c.NNs = append(c.NNs, p)
	}
	for i, h := range c.DNHosts {
		name := fmt.Sprintf("dn%d", i+1)
		p := &nodeproc.Proc{Name: name, Bin: filepath.Join(binDir, "datanode"), DataDir: filepath.Join(dir, name),
			GRPC: h.Addr(dnGRPCPort), LogPath: filepath.Join(dir, name+".log"), Netns: h.NS, Dial: c.Client.DialContext}
		p.Args = func() []string {
			return []string{"--id", name, "--data-dirs", p.DataDir, "--grpc-addr", p.GRPC, "--http-addr", "",
				"--namenodes", nnList, "--heartbeat-interval", "200ms", "--encrypt",
				"--container-max-blocks", "16", "--log-level", "warn", "--auth", "simple"}
		}
		c.DNs = append(c.DNs, p)
	}
	for _, p := range append(append([]*nodeproc.Proc(nil), c.NNs...), c.DNs...) {
		if err := os.MkdirAll(p.DataDir, 0o755); err != nil {
			return nil, err
		}
		if err := p.Start(); err != nil {
			return nil, err
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, p := range append(append([]*nodeproc.Proc(nil), c.NNs...), c.DNs...) {
		if err := p.WaitListening(wctx); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// NNAddrs are the namenodes' gRPC addresses.
func (c *Cluster) NNAddrs() []string {
	out := make([]string, len(c.NNHosts))
	for i, h := range c.NNHosts {
		out[i] = h.Addr(nnGRPCPort)
	}
	return out
}

// Dial returns a connection to addr from the client host.
func (c *Cluster) Dial(addr string) (*grpc.ClientConn, error) {
	return grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(c.Client.DialContext))
}

// AsRoot is ctx carrying the superuser's name (simple auth).
func AsRoot(ctx context.Context) context.Context {
	return metadata.AppendToOutgoingContext(ctx, namenode.UserKey, "root")
}

// Leader asks every namenode whom it follows and returns the index of the
// one a majority names, or -1.
func (c *Cluster) Leader(ctx context.Context, nns []api.ClientServiceClient) int {
	votes := map[string]int{}
	for _, nn := range nns {
		cctx, cancel := context.WithTimeout(AsRoot(ctx), time.Second)
		st, err := nn.ClusterStatus(cctx, &api.ClusterStatusRequest{})
		cancel()
		if err == nil && st.LeaderId != "" {
			votes[st.LeaderId]++
		}
	}
	for id, v := range votes {
		if v >= 2 {
			for i, p := range c.NNs {
				if p.Name == id {
					return i
				}
			}
		}
	}
	return -1
}

// Close stops every process and removes the namespaces.
func (c *Cluster) Close() error {
	for _, p := range append(append([]*nodeproc.Proc(nil), c.NNs...), c.DNs...) {
		p.Stop()
	}
	return c.Net.Close()
}
