package namenode_test

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/internal/node/raftnet"
	"github.com/blockfs/blockfs/internal/testutil/raftnettest"
	"github.com/blockfs/blockfs/namenode"
	"github.com/blockfs/blockfs/security"
)

const rpcRefusedMetric = "blockfs_raft_rpc_refused_total"

// adminVia is an Admin client on addr as the superuser root.
func (p *raftPKI) adminVia(t testing.TB, addr string) api.AdminClient {
	t.Helper()
	_, cl := p.configs(p.ca, security.DefaultTrustDomain, security.Identity{Role: security.RoleUser, Name: "root"})
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(cl)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return api.NewAdminClient(conn)
}

// forgedAppend is finding 1's attack: an AppendEntries from sender (the
// RPC header's id, at addr) with a term far ahead, carrying a command at
// the follower's next index, committed at once.
func forgedAppend(tr raft.Transport, target raft.ServerAddress, sender, addr string, term, next uint64) error {
	var resp raft.AppendEntriesResponse
	return tr.AppendEntries(raft.ServerID(sender), target, &raft.AppendEntriesRequest{
		RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(sender), Addr: []byte(addr)},
		Term:      term, LeaderCommitIndex: next,
		Entries: []*raft.Log{{Index: next, Term: term, Type: raft.LogCommand, Data: []byte{1, 2, 3}}},
	}, &resp)
}

// TestRaftBoundToMembership: namenode certificates of the cluster CA that
// may not speak Raft to a follower — one never a member, a member whose RPC
// header names the leader, a server just removed — send finding 1's
// AppendEntries. Each is refused (at the handshake, or the connection
// closed at the RPC) and counted; the follower's term, applied index and
// namespace hash stay as they were, and the cluster keeps working: it
// adds and removes a new node and replicates after.
func TestRaftBoundToMembership(t *testing.T) {
	p := newRaftPKI(t)
	c, conns := startMTLSCluster(t, p, 3, nil)
	mkdirVia(t.Context(), t, c, conns, "/data")
	converged(t, c)
	li := c.Leader()
	fi, oi := (li+1)%3, (li+2)%3
	leader, follower, other := c.Namenode(li), c.Namenode(fi), c.Namenode(oi)
	target := raft.ServerAddress(follower.RaftAddr())
	td := security.DefaultTrustDomain
	nnCert := func(name string) *tls.Certificate {
		return p.cert(p.ca, td, security.Identity{Role: security.RoleNamenode, Name: name})
	}
	for _, tc := range []struct {
		name   string
		setup  func(t *testing.T) // before the attack
		cert   *tls.Certificate
		sender func() (id, addr string)
		metric string
		labels map[string]string
	}{
		{
			name:   "never a member",
			cert:   nnCert("nn9"),
			sender: func() (string, string) { return "nn9", "127.0.0.1:1" },
			metric: refusedMetric, labels: map[string]string{"direction": "in", "reason": raftnet.ReasonNotMember},
		},
		{
			name:   "never a member posing as the leader",
			cert:   nnCert("nn9"),
			sender: func() (string, string) { return leader.ID(), leader.RaftAddr() },
			metric: refusedMetric, labels: map[string]string{"direction": "in", "reason": raftnet.ReasonNotMember},
		},
		{
			name:   "member posing as the leader",
			cert:   nnCert(other.ID()),
			sender: func() (string, string) { return leader.ID(), leader.RaftAddr() },
			metric: rpcRefusedMetric, labels: map[string]string{"rpc": "AppendEntries", "reason": raftnet.ReasonHeaderID},
		},
		{
			name:   "member giving the leader's address",
			cert:   nnCert(other.ID()),
			sender: func() (string, string) { return other.ID(), leader.RaftAddr() },
			metric: rpcRefusedMetric, labels: map[string]string{"rpc": "AppendEntries", "reason": raftnet.ReasonHeaderAddr},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := metric(t, follower, tc.metric, tc.labels)
			termBefore, appliedBefore, hashBefore := raftTerm(t, follower), follower.AppliedIndex(), follower.NamespaceHash()
			tr, err := raftnettest.Transport(tc.cert, true)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			id, addr := tc.sender()
			if err := forgedAppend(tr, target, id, addr, termBefore+1000, appliedBefore+1); err == nil {
				t.Fatal("the follower answered the forged AppendEntries")
			}
			waitFor(t, "the refusal counted", func() bool { return metric(t, follower, tc.metric, tc.labels) > before })
			unchanged(t, follower, termBefore, appliedBefore, hashBefore, leader)
		})
	}

	// A server removed from the configuration is refused at once.
	admin := p.adminVia(t, c.NamenodeAddrs()[li])
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	rm, err := admin.RemoveServer(ctx, &api.RemoveServerRequest{Id: other.ID()})
	if err != nil {
		t.Fatal(err)
	}
	// The removal is committed by a majority, which may be the leader and
	// the removed server: "at once" is once the follower has the entry.
	waitFor(t, "the follower applied the removal", func() bool { return follower.AppliedIndex() >= rm.Index })
	t.Run("removed server", func(t *testing.T) {
		labels := map[string]string{"direction": "in", "reason": raftnet.ReasonNotMember}
		before := metric(t, follower, refusedMetric, labels)
		termBefore, appliedBefore, hashBefore := raftTerm(t, follower), follower.AppliedIndex(), follower.NamespaceHash()
		tr, err := raftnettest.Transport(nnCert(other.ID()), true)
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		if err := forgedAppend(tr, target, other.ID(), other.RaftAddr(), termBefore+1000, appliedBefore+1); err == nil {
			t.Fatal("the follower answered the removed server")
		}
		// Refused at once: the forged append failed above. The counter is
		// bumped by the handler that refused it, which may run just after
		// the sender sees its connection end.
		waitFor(t, "the not-member refusal counted", func() bool { return metric(t, follower, refusedMetric, labels) > before })
		unchanged(t, follower, termBefore, appliedBefore, hashBefore, leader)
	})

	// The cluster keeps working: a new node joins and leaves.
	nn4 := startJoiner(t, p, "nn4", c.NamenodeAddrs()[li])
	mkdirVia(t.Context(), t, c, conns, "/data/with-nn4")
	waitFor(t, "nn4 catches up", func() bool { return nn4.NamespaceHash() == leader.NamespaceHash() })
	if _, err := admin.RemoveServer(ctx, &api.RemoveServerRequest{Id: "nn4"}); err != nil {
		t.Fatal(err)
	}
	hash := follower.NamespaceHash()
	mkdirVia(t.Context(), t, c, conns, "/data/after")
	waitFor(t, "the follower replicates after the attacks", func() bool {
		return follower.NamespaceHash() != hash && follower.NamespaceHash() == leader.NamespaceHash()
	})
	for _, n := range []*namenode.Namenode{leader, follower} {
		if r := metric(t, n, rpcRefusedMetric, map[string]string{"reason": raftnet.ReasonHeaderID}); n == leader && r != 0 {
			t.Errorf("the leader refused %v RPCs of its own cluster", r)
		}
	}
}

// unchanged checks a refused attack left the follower as it was (its
// applied index may only have followed the real leader).
func unchanged(t *testing.T, f *namenode.Namenode, term, applied uint64, hash [32]byte, leader *namenode.Namenode) {
	t.Helper()
	if got := raftTerm(t, f); got != term {
		t.Errorf("follower term %d -> %d", term, got)
	}
	if a := f.AppliedIndex(); a != applied && a != leader.AppliedIndex() {
		t.Errorf("follower applied index %d -> %d, leader at %d", applied, a, leader.AppliedIndex())
	}
	if f.NamespaceHash() != hash {
		t.Error("follower namespace changed")
	}
}

// startJoiner starts namenode id under mTLS, joining through the gRPC
// address via.
func startJoiner(t *testing.T, p *raftPKI, id, via string) *namenode.Namenode {
	t.Helper()
	cfg := namenode.DefaultConfig()
	cfg.ID, cfg.DataDir = id, t.TempDir()
	cfg.GRPCAddr, cfg.Raft.Addr, cfg.HTTPAddr = "127.0.0.1:0", "127.0.0.1:0", ""
	cfg.Raft.Heartbeat, cfg.Raft.Election = 200*time.Millisecond, 400*time.Millisecond
	cfg.Raft.Join = via
	p.secure(&cfg)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	n, err := namenode.Start(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}
