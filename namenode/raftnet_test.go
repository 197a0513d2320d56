package namenode_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/internal/node/raftnet"
	"github.com/blockfs/blockfs/internal/testutil/raftnettest"
	"github.com/blockfs/blockfs/localcluster"
	"github.com/blockfs/blockfs/namenode"
	"github.com/blockfs/blockfs/security"
)

// raftPKI issues the certificates of an mTLS test cluster: namenode
// certificates named after each node's Raft id, and user certificates.
type raftPKI struct {
	t  testing.TB
	ca *security.CA
}

func newRaftPKI(t testing.TB) *raftPKI {
	t.Helper()
	ca, err := security.GenerateCA("raft test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return &raftPKI{t: t, ca: ca}
}

// configs returns the server and client TLS configs of id, issued by ca in
// trust domain td.
func (p *raftPKI) configs(ca *security.CA, td string, id security.Identity) (server, client *tls.Config) {
	p.t.Helper()
	cert, key, err := security.IssueCert(ca, td, id, []string{"127.0.0.1"})
	if err != nil {
		p.t.Fatal(err)
	}
	if id.Role != security.RoleUser {
		if server, err = security.ServerTLSConfig(ca.CertPEM, cert, key); err != nil {
			p.t.Fatal(err)
		}
	}
	if client, err = security.ClientTLSConfig(ca.CertPEM, cert, key, ""); err != nil {
		p.t.Fatal(err)
	}
	return server, client
}

// cert is a certificate for id issued by ca in trust domain td.
func (p *raftPKI) cert(ca *security.CA, td string, id security.Identity) *tls.Certificate {
	p.t.Helper()
	certPEM, keyPEM, err := security.IssueCert(ca, td, id, []string{"127.0.0.1"})
	if err != nil {
		p.t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		p.t.Fatal(err)
	}
	return &pair
}

// secure makes a namenode run under mTLS with a namenode certificate of
// its own Raft id: gRPC and Raft alike.
func (p *raftPKI) secure(c *namenode.Config) {
	srv, cl := p.configs(p.ca, security.DefaultTrustDomain, security.Identity{Role: security.RoleNamenode, Name: c.ID})
	c.Auth.Mode, c.Auth.TLS, c.Auth.PeerTLS = namenode.AuthMTLS, srv, cl
	c.Namespace.Superuser = "root"
	c.Logger = quietLogger()
}

// conns dials every namenode of c over TLS as the user root.
func (p *raftPKI) conns(c *localcluster.Cluster) []api.ClientServiceClient {
	p.t.Helper()
	_, cl := p.configs(p.ca, security.DefaultTrustDomain, security.Identity{Role: security.RoleUser, Name: "root"})
	var out []api.ClientServiceClient
	for _, addr := range c.NamenodeAddrs() {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(cl)))
		if err != nil {
			p.t.Fatal(err)
		}
		p.t.Cleanup(func() { conn.Close() })
		out = append(out, api.NewClientServiceClient(conn))
	}
	return out
}

// startMTLSCluster starts n namenodes under mTLS on loopback TCP.
func startMTLSCluster(t testing.TB, p *raftPKI, n int, adjust func(*namenode.Config)) (*localcluster.Cluster, []api.ClientServiceClient) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Config{Namenodes: n, Dir: t.TempDir(), Namenode: func(i int, nc *namenode.Config) {
		p.secure(nc)
		if adjust != nil {
			adjust(nc)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, p.conns(c)
}

// mkdirVia creates path through the leader, as whoever ctx (or the
// connection's certificate) says, retrying while leadership moves.
func mkdirVia(ctx context.Context, t testing.TB, c *localcluster.Cluster, conns []api.ClientServiceClient, path string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		l, err := c.WaitLeader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, err = conns[l].Mkdirs(ctx, &api.MkdirsRequest{Path: path, Parents: true})
		if err == nil {
			return
		}
		if statusCode(err) != codes.Unavailable || ctx.Err() != nil {
			t.Fatalf("mkdirs %s: %v", path, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func converged(t testing.TB, c *localcluster.Cluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
}

// metric sums the samples of a node's metric whose labels include want.
func metric(t testing.TB, n *namenode.Namenode, name string, want map[string]string) float64 {
	t.Helper()
	mfs, err := n.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	samples:
		for _, m := range mf.GetMetric() {
			for k, v := range want {
				found := false
				for _, lp := range m.GetLabel() {
					found = found || lp.GetName() == k && lp.GetValue() == v
				}
				if !found {
					continue samples
				}
			}
			switch {
			case m.GetCounter() != nil:
				sum += m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				sum += m.GetGauge().GetValue()
			}
		}
	}
	return sum
}

const refusedMetric = "blockfs_raft_conn_refused_total"

func raftTerm(t testing.TB, n *namenode.Namenode) uint64 {
	return uint64(metric(t, n, "blockfs_namenode_raft_term", nil))
}

// TestRaftMTLSCluster: three namenodes with good certificates replicate
// over Raft on mTLS and survive the loss of their leader, without refusing
// one another once.
func TestRaftMTLSCluster(t *testing.T) {
	p := newRaftPKI(t)
	c, conns := startMTLSCluster(t, p, 3, nil)
	mkdirVia(t.Context(), t, c, conns, "/before")
	converged(t, c)

	old := c.Leader()
	if err := c.StopNamenode(old); err != nil {
		t.Fatal(err)
	}
	mkdirVia(t.Context(), t, c, conns, "/after-failover")
	converged(t, c)
	if l := c.Leader(); l == old {
		t.Fatalf("stopped node %d still leads", old)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.RestartNamenode(ctx, old); err != nil {
		t.Fatal(err)
	}
	converged(t, c) // the old leader catches up over mTLS
	for i, n := range c.Namenodes() {
		if r := metric(t, n, refusedMetric, nil); r != 0 {
			t.Errorf("namenode %d refused %v Raft connections from its peers", i, r)
		}
	}
}

// raftAttack is one Raft RPC sent with a term far ahead of the cluster's.
type raftAttack struct {
	name string
	send func(tr raft.Transport, target raft.ServerAddress, term uint64) error
}

func raftAttacks() []raftAttack {
	hdr := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("mallory"), Addr: []byte("127.0.0.1:1")}
	return []raftAttack{
		{"AppendEntries", func(tr raft.Transport, target raft.ServerAddress, term uint64) error {
			var resp raft.AppendEntriesResponse
			return tr.AppendEntries("victim", target, &raft.AppendEntriesRequest{
				RPCHeader: hdr, Term: term, LeaderCommitIndex: 1 << 20,
				Entries: []*raft.Log{{Index: 1, Term: term, Type: raft.LogCommand, Data: []byte{1, 2, 3}}},
			}, &resp)
		}},
		{"RequestVote", func(tr raft.Transport, target raft.ServerAddress, term uint64) error {
			var resp raft.RequestVoteResponse
			return tr.RequestVote("victim", target, &raft.RequestVoteRequest{
				RPCHeader: hdr, Term: term, LastLogIndex: 1 << 40, LastLogTerm: term, LeadershipTransfer: true,
			}, &resp)
		}},
		{"InstallSnapshot", func(tr raft.Transport, target raft.ServerAddress, term uint64) error {
			data := bytes.Repeat([]byte{0xff}, 32<<10)
			var resp raft.InstallSnapshotResponse
			return tr.InstallSnapshot("victim", target, &raft.InstallSnapshotRequest{
				RPCHeader: hdr, SnapshotVersion: raft.SnapshotVersionMax, Term: term,
				LastLogIndex: 1 << 40, LastLogTerm: term, Size: int64(len(data)),
			}, &resp, bytes.NewReader(data))
		}},
	}
}

// TestRaftOutsidersRefused: outsiders on a follower's Raft port — plain
// TCP, TLS without a certificate, user and datanode certificates of the
// cluster CA, a namenode certificate of another CA or of another trust
// domain — send AppendEntries (with a command), RequestVote and
// InstallSnapshot with a far higher term. Every one is refused and counted
// by reason; the follower's term, applied index and namespace stay as they
// were; a silent connection is closed at the handshake timeout; and the
// cluster keeps replicating.
func TestRaftOutsidersRefused(t *testing.T) {
	p := newRaftPKI(t)
	c, conns := startMTLSCluster(t, p, 3, func(nc *namenode.Config) { nc.Raft.HandshakeTimeout = 500 * time.Millisecond })
	mkdirVia(t.Context(), t, c, conns, "/data")
	converged(t, c)
	li := c.Leader()
	fi := (li + 1) % 3
	leader, follower := c.Namenode(li), c.Namenode(fi)
	target := raft.ServerAddress(follower.RaftAddr())
	termBefore, appliedBefore, hashBefore := raftTerm(t, follower), follower.AppliedIndex(), follower.NamespaceHash()
	attackTerm := termBefore + 1000

	silent, err := net.Dial("tcp", string(target))
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()

	other, err := security.GenerateCA("someone else's CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	td := security.DefaultTrustDomain
	outsiders := []struct {
		name   string
		cert   *tls.Certificate
		useTLS bool
		reason string
	}{
		{"plain TCP", nil, false, raftnet.ReasonNotTLS},
		{"TLS without a certificate", nil, true, raftnet.ReasonNoCertificate},
		{"user root of the cluster CA", p.cert(p.ca, td, security.Identity{Role: security.RoleUser, Name: "root"}), true, raftnet.ReasonRole},
		{"datanode of the cluster CA", p.cert(p.ca, td, security.Identity{Role: security.RoleDatanode, Name: "dn1"}), true, raftnet.ReasonRole},
		{"namenode of another CA", p.cert(other, td, security.Identity{Role: security.RoleNamenode, Name: leader.ID()}), true, raftnet.ReasonUntrusted},
		{"namenode of another trust domain", p.cert(p.ca, "elsewhere", security.Identity{Role: security.RoleNamenode, Name: leader.ID()}), true, raftnet.ReasonIdentity},
	}
	want := map[string]float64{}
	for _, o := range outsiders {
		for _, a := range raftAttacks() {
			t.Run(o.name+"/"+a.name, func(t *testing.T) {
				tr, err := raftnettest.Transport(o.cert, o.useTLS)
				if err != nil {
					t.Fatal(err)
				}
				defer tr.Close()
				if err := a.send(tr, target, attackTerm); err == nil {
					t.Fatal("the follower answered an outsider")
				}
			})
			want[o.reason]++
		}
	}
	want[raftnet.ReasonTimeout]++ // the silent connection
	waitFor(t, "every refusal counted", func() bool {
		for reason, n := range want {
			if metric(t, follower, refusedMetric, map[string]string{"direction": "in", "reason": reason}) < n {
				return false
			}
		}
		return true
	})
	for reason, n := range want {
		if got := metric(t, follower, refusedMetric, map[string]string{"direction": "in", "reason": reason}); got != n {
			t.Errorf("refused{reason=%s} = %v, want %v", reason, got, n)
		}
	}
	if _, err := silent.Read(make([]byte, 1)); err == nil {
		t.Error("the silent connection is still open")
	}

	// Nothing landed: no term from the outsiders, no entry, no namespace change.
	if term := raftTerm(t, follower); term != termBefore {
		t.Errorf("follower term %d -> %d", termBefore, term)
	}
	if a := follower.AppliedIndex(); a != appliedBefore && a != leader.AppliedIndex() {
		t.Errorf("follower applied index %d -> %d, leader at %d", appliedBefore, a, leader.AppliedIndex())
	}
	if follower.NamespaceHash() != hashBefore {
		t.Error("follower namespace changed")
	}
	if c.Leader() != li {
		t.Error("leadership moved")
	}

	// The cluster keeps working.
	mkdirVia(t.Context(), t, c, conns, "/data/after")
	converged(t, c)
	if follower.NamespaceHash() == hashBefore {
		t.Error("follower did not apply the write made after the attacks")
	}
	if n := metric(t, leader, refusedMetric, nil); n != 0 {
		t.Errorf("leader refused %v connections; it was not attacked", n)
	}
}

// TestRaftPlaintextControl shows the attack above is real: against a
// plaintext Raft port one AppendEntries from outside moves a follower to
// the outsider's term.
func TestRaftPlaintextControl(t *testing.T) {
	x := startCluster(t, 3, func(i int, c *namenode.Config) { c.Logger = quietLogger() })
	f := x.c.Namenode(x.follower())
	attackTerm := raftTerm(t, f) + 1000
	tr, err := raftnettest.Transport(nil, false)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	var resp raft.AppendEntriesResponse
	// No entries: a heartbeat is enough to take over the term.
	err = tr.AppendEntries("victim", raft.ServerAddress(f.RaftAddr()), &raft.AppendEntriesRequest{
		RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("mallory"), Addr: []byte("127.0.0.1:1")},
		Term:      attackTerm,
	}, &resp)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Term < attackTerm {
		t.Fatalf("plaintext follower answered term %d; the outsider's %d did not land", resp.Term, attackTerm)
	}
}

// waitFor polls cond until it holds or the test's deadline passes.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("gave up waiting: %s", what)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestRaftAddServerNeedsItsOwnCertificate: a node that joins as nn4 but
// serves Raft with the certificate of another namenode is added to the
// configuration (AddServer takes the id) yet gets no entry: the leader
// dials nn4's address, finds a certificate not naming nn4, and refuses.
func TestRaftAddServerNeedsItsOwnCertificate(t *testing.T) {
	p := newRaftPKI(t)
	c, _ := startMTLSCluster(t, p, 3, nil)
	li := c.Leader()
	leader := c.Namenode(li)

	cfg := namenode.DefaultConfig()
	cfg.ID, cfg.DataDir = "nn4", t.TempDir()
	cfg.GRPCAddr, cfg.Raft.Addr, cfg.HTTPAddr = "127.0.0.1:0", "127.0.0.1:0", ""
	cfg.Raft.Heartbeat, cfg.Raft.Election = 200*time.Millisecond, 400*time.Millisecond
	cfg.Raft.Join = c.NamenodeAddrs()[li]
	p.secure(&cfg)
	// It dials as nn4 (so AddServer admits it) but serves as nn5.
	cfg.Auth.TLS, _ = p.configs(p.ca, security.DefaultTrustDomain, security.Identity{Role: security.RoleNamenode, Name: "nn5"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	impostor, err := namenode.Start(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer impostor.Close()

	waitFor(t, "the leader refuses nn4's certificate", func() bool {
		return metric(t, leader, refusedMetric, map[string]string{"direction": "out", "reason": raftnet.ReasonName}) > 0
	})
	if a := impostor.AppliedIndex(); a != 0 {
		t.Fatalf("the impostor applied up to %d", a)
	}
}
