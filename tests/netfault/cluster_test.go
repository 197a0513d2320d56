package netfault

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
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
	proxyPort  = 9300 // + namenode index: a host's proxy to that namenode
	diskSize   = "512m"
)

// Cluster is 3 namenodes and some datanodes, each a process in a
// namespace of its own on one Net, and a client host whose namespace the
// test's own gRPC clients dial from. The datanodes and the client reach
// the namenodes through proxies on their own hosts (slow links), and each
// datanode keeps its data on a tmpfs of its own (full disks).
type Cluster struct {
	Net     *Net
	NNHosts []*Host
	DNHosts []*Host
	Client  *Host
	NNs     []*nodeproc.Proc
	DNs     []*nodeproc.Proc
	// DNProxies[i] are datanode i's links to the namenodes, ClientProxies
	// the client host's.
	DNProxies     [][]*Proxy
	ClientProxies []*Proxy
	// Disks are the datanodes' tmpfs mount points (DataDir is below).
	Disks []string
	// ClockOffsets[i] is namenode i's --test-clock-offset at its next
	// start (nanoseconds).
	ClockOffsets [3]atomic.Int64
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
	peerList := strings.Join(peers, ",")
	proxies := func(h *Host) ([]*Proxy, error) {
		var ps []*Proxy
		for i, a := range c.NNAddrs() {
			p, err := NewProxy(h, h.Addr(proxyPort+i), a)
			if err != nil {
				return ps, err
			}
			ps = append(ps, p)
		}
		return ps, nil
	}
	if c.ClientProxies, err = proxies(c.Client); err != nil {
		return nil, err
	}
	for i, h := range c.NNHosts {
		name := fmt.Sprintf("nn%d", i+1)
		p := &nodeproc.Proc{Name: name, Bin: filepath.Join(binDir, "namenode"), DataDir: filepath.Join(dir, name),
			GRPC: h.Addr(nnGRPCPort), LogPath: filepath.Join(dir, name+".log"), Netns: h.NS, Dial: c.Client.DialContext}
		p.Args = func() []string {
			return []string{"--id", name, "--data-dir", p.DataDir, "--grpc-addr", p.GRPC, "--raft-addr", h.Addr(nnRaftPort),
				"--http-addr", "", "--bootstrap", "--peers", peerList, "--auth", "simple", "--superuser", "root",
				"--heartbeat-interval", "200ms", "--dead-after-missed", "5", "--log-level", "warn",
				"--lease-check-interval", "200ms", "--lease-soft-limit", "2s", "--lease-hard-limit", "30s", "--recovery-timeout", "3s", "--safemode-extension", "0s", "--insecure-raft",
				"--token-lifetime", tokenLifetime.String(), "--clock-skew", "1s",
				"--test-clock-offset", time.Duration(c.ClockOffsets[i].Load()).String()}
		}
		c.NNs = append(c.NNs, p)
	}
	for i, h := range c.DNHosts {
		name := fmt.Sprintf("dn%d", i+1)
		ps, err := proxies(h)
		c.DNProxies = append(c.DNProxies, ps)
		if err != nil {
			return nil, err
		}
		var nnList []string
		for _, p := range ps {
			nnList = append(nnList, p.Addr)
		}
		disk := filepath.Join(dir, name+"-disk")
		if err := os.MkdirAll(disk, 0o755); err != nil {
			return nil, err
		}
		if err := run(ctx, "mount", "-t", "tmpfs", "-o", "size="+diskSize, "tmpfs", disk); err != nil {
			return nil, err
		}
		c.Disks = append(c.Disks, disk)
		p := &nodeproc.Proc{Name: name, Bin: filepath.Join(binDir, "datanode"), DataDir: filepath.Join(disk, "data"),
			GRPC: h.Addr(dnGRPCPort), LogPath: filepath.Join(dir, name+".log"), Netns: h.NS, Dial: c.Client.DialContext}
		p.Args = func() []string {
			return []string{"--id", name, "--data-dirs", p.DataDir, "--grpc-addr", p.GRPC, "--http-addr", "",
				"--namenodes", strings.Join(nnList, ","), "--heartbeat-interval", "200ms", "--encrypt", "--clock-skew", "1s",
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

// tokenLifetime is short, so that the token checker sees tokens expire.
const tokenLifetime = 10 * time.Second

// NNAddrs are the namenodes' gRPC addresses.
func (c *Cluster) NNAddrs() []string {
	out := make([]string, len(c.NNHosts))
	for i, h := range c.NNHosts {
		out[i] = h.Addr(nnGRPCPort)
	}
	return out
}

// ClientNNAddrs are the client host's proxies to the namenodes.
func (c *Cluster) ClientNNAddrs() []string {
	out := make([]string, len(c.ClientProxies))
	for i, p := range c.ClientProxies {
		out[i] = p.Addr
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

// Close stops every process, the proxies, unmounts the disks and removes
// the namespaces.
func (c *Cluster) Close() error {
	for _, p := range append(append([]*nodeproc.Proc(nil), c.NNs...), c.DNs...) {
		p.Stop()
	}
	var errs []error
	for _, p := range append(slices.Concat(c.DNProxies...), c.ClientProxies...) {
		errs = append(errs, p.Close())
	}
	for _, d := range c.Disks {
		errs = append(errs, run(context.Background(), "umount", d))
	}
	return errors.Join(append(errs, c.Net.Close())...)
}

// transferLeadership asks the current leader, through each namenode in
// turn, to hand leadership to id, for a few seconds; it reports whether id
// leads.
func (c *Cluster) transferLeadership(ctx context.Context, id string) bool {
	deadline := time.Now().Add(8 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		conn, err := c.Dial(c.NNAddrs()[i%len(c.NNAddrs())])
		if err != nil {
			continue
		}
		cctx, cancel := context.WithTimeout(AsRoot(ctx), 2*time.Second)
		r, err := api.NewAdminClient(conn).TransferLeadership(cctx, &api.TransferLeadershipRequest{Id: id})
		cancel()
		conn.Close()
		if err == nil && r.NewLeaderId == id {
			return true
		}
		time.Sleep(200 * time.Millisecond)
	}
	return false
}
