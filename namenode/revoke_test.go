package namenode_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/datanode"
	"github.com/blockfs/blockfs/internal/node/raftnet"
	"github.com/blockfs/blockfs/localcluster"
	"github.com/blockfs/blockfs/namenode"
	"github.com/blockfs/blockfs/security"
)

const revokedMetric = "blockfs_security_revoked_refused_total"

// leafOf parses the certificate a TLS config presents.
func leafOf(t testing.TB, cfg *tls.Config) *x509.Certificate {
	t.Helper()
	c, err := x509.ParseCertificate(cfg.Certificates[0].Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRevokedNamenodeCutOffFromRaft: the leader's namenode certificate, a
// current member, is revoked by fingerprint. The followers refuse the
// next RPC on the leader's open Raft connections (ReasonRevoked), elect a
// leader between themselves, carry the deny list to it and go on serving;
// the revoked node gets no entry after that and cannot win an election.
func TestRevokedNamenodeCutOffFromRaft(t *testing.T) {
	p := newRaftPKI(t)
	var mu sync.Mutex
	certs := map[string]*x509.Certificate{}
	c, conns := startMTLSCluster(t, p, 3, func(nc *namenode.Config) {
		mu.Lock()
		defer mu.Unlock()
		certs[nc.ID] = leafOf(t, &tls.Config{Certificates: nc.Auth.TLS.Certificates})
	})
	mkdirVia(t.Context(), t, c, conns, "/before")
	converged(t, c)

	victim := c.Leader()
	vn := c.Namenode(victim)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	mu.Lock()
	fp := security.Fingerprint(certs[vn.ID()])
	mu.Unlock()
	if _, err := p.adminVia(t, c.NamenodeAddrs()[victim]).Revoke(ctx, &api.RevokeRequest{Entry: &api.RevokedEntry{Fingerprint: fp, Reason: "key leaked"}}); err != nil {
		t.Fatal(err)
	}

	var healthy []int
	for i := range 3 {
		if i != victim {
			healthy = append(healthy, i)
		}
	}
	refused := func() float64 {
		var sum float64
		for _, i := range healthy {
			sum += metric(t, c.Namenode(i), rpcRefusedMetric, map[string]string{"reason": raftnet.ReasonRevoked})
		}
		return sum
	}
	waitFor(t, "a follower refuses an RPC of the revoked leader on its open connection", func() bool { return refused() > 0 })
	waitFor(t, "a healthy leader", func() bool {
		for _, i := range healthy {
			if c.Namenode(i).Ready() {
				return true
			}
		}
		return false
	})
	// The new leader serves, and has the deny list.
	mkdirVia(t.Context(), t, c, conns, "/after-revoke")
	var leader int
	for _, i := range healthy {
		if c.Namenode(i).IsLeader() {
			leader = i
		}
	}
	list, err := p.adminVia(t, c.NamenodeAddrs()[leader]).ListRevoked(ctx, &api.ListRevokedRequest{})
	if err != nil || len(list.Entries) != 1 || list.Entries[0].Fingerprint != fp || list.Entries[0].RevokedBy != "user/root" {
		t.Fatalf("the new leader's deny list: %v, %v", list, err)
	}
	// The healthy two agree; the revoked node never learns of the new
	// directory, and never leads again.
	waitFor(t, "the healthy namenodes converge", func() bool {
		a, b := c.Namenode(healthy[0]), c.Namenode(healthy[1])
		return a.AppliedIndex() == b.AppliedIndex() && a.NamespaceHash() == b.NamespaceHash()
	})
	hash := c.Namenode(leader).NamespaceHash()
	time.Sleep(time.Second) // elections of the revoked node, if any, run now
	if vn.NamespaceHash() == hash {
		t.Fatal("the revoked namenode got the entries written after its revocation")
	}
	if vn.IsLeader() {
		t.Fatal("the revoked namenode took leadership back")
	}
	mkdirVia(t.Context(), t, c, conns, "/still-serving") // a healthy leader, whichever
	if got := refused(); got == 0 {
		t.Fatal("no RPC refused as revoked")
	}
}

// TestRevokedUserCertificateRefused: a user certificate revoked by serial
// is refused on every namenode's gRPC port (Unauthenticated, an Open RPC
// too) and HTTP port (401), counted; the same user's reissued certificate
// and another user's certificate of the same CA keep working, and the
// refused calls change nothing. Revoking the identity then refuses the
// reissued certificate too. The list survives a change of leader, and a
// non-superuser may not change it.
func TestRevokedUserCertificateRefused(t *testing.T) {
	a := startAuthzCluster(t, 0)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	alice := security.Identity{Role: security.RoleUser, Name: "alice"}
	tlsFor := func(id security.Identity) *tls.Config {
		cfg, err := a.c.TLSFor(id)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	stolen, reissued, bob := tlsFor(alice), tlsFor(alice), tlsFor(security.Identity{Role: security.RoleUser, Name: "bob"})
	getInfo := func(cc *grpc.ClientConn) error {
		_, err := api.NewClientServiceClient(cc).GetFileInfo(ctx, &api.GetFileInfoRequest{Path: "/"})
		return err
	}
	httpGet := func(i int, cfg *tls.Config) int {
		tr := &http.Transport{TLSClientConfig: cfg}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get("https://" + a.c.Namenode(i).HTTPAddr() + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// Connections opened before the revocation.
	var stolenConns []*grpc.ClientConn
	for i := range 3 {
		stolenConns = append(stolenConns, a.conn(i, stolen))
		if err := getInfo(stolenConns[i]); err != nil {
			t.Fatalf("before revocation: %v", err)
		}
	}

	// A non-superuser may not revoke, or lift, or list.
	for _, cfg := range []*tls.Config{reissued, bob} {
		adm := api.NewAdminClient(a.conn(a.c.Leader(), cfg))
		_, err := adm.Revoke(ctx, &api.RevokeRequest{Entry: &api.RevokedEntry{Role: "user", Name: "root"}})
		if statusCode(err) != codes.PermissionDenied {
			t.Fatalf("non-superuser Revoke: %v", err)
		}
		if _, err := adm.ListRevoked(ctx, &api.ListRevokedRequest{}); statusCode(err) != codes.PermissionDenied {
			t.Fatalf("non-superuser ListRevoked: %v", err)
		}
	}

	// Revoke by serial through a follower (it forwards to the leader).
	follower := (a.c.Leader() + 1) % 3
	root := api.NewAdminClient(a.as(follower, usr, "root"))
	if _, err := root.Revoke(ctx, &api.RevokeRequest{Entry: &api.RevokedEntry{Serial: security.SerialHex(leafOf(t, stolen))}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every namenode refuses the stolen certificate", func() bool {
		for i := range 3 {
			if statusCode(getInfo(stolenConns[i])) != codes.Unauthenticated {
				return false
			}
		}
		return true
	})
	before := a.state()
	for i := range 3 {
		t.Run(fmt.Sprintf("nn%d", i+1), func(t *testing.T) {
			for _, r := range []rpc{mkdirs, getLocations, {"ClusterStatus", func(ctx context.Context, cc *grpc.ClientConn) error {
				_, err := api.NewClientServiceClient(cc).ClusterStatus(ctx, &api.ClusterStatusRequest{})
				return err
			}}} {
				for _, cc := range []*grpc.ClientConn{stolenConns[i], a.conn(i, stolen)} {
					if err := r.call(ctx, cc); statusCode(err) != codes.Unauthenticated || !strings.Contains(err.Error(), "revoked") {
						t.Fatalf("%s with the stolen certificate: %v", r.name, err)
					}
				}
			}
			if got := httpGet(i, stolen); got != http.StatusUnauthorized {
				t.Fatalf("HTTP with the stolen certificate: %d", got)
			}
			for _, cfg := range []*tls.Config{reissued, bob} {
				if err := getInfo(a.conn(i, cfg)); err != nil {
					t.Fatalf("another certificate: %v", err)
				}
				if got := httpGet(i, cfg); got != http.StatusOK {
					t.Fatalf("HTTP with another certificate: %d", got)
				}
			}
			if metric(t, a.c.Namenode(i), revokedMetric, map[string]string{"role": "user"}) < 5 {
				t.Fatal("refusals not counted")
			}
		})
	}
	if after := a.state(); after != before {
		t.Fatalf("refused calls changed the state:\n before %s\n after  %s", before, after)
	}

	// The whole principal: every certificate naming user/alice.
	if _, err := root.Revoke(ctx, &api.RevokeRequest{Entry: &api.RevokedEntry{Role: "user", Name: "alice"}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the reissued certificate refused too", func() bool {
		return statusCode(getInfo(a.conn(follower, reissued))) == codes.Unauthenticated
	})

	// A new leader keeps the list.
	old := a.c.Leader()
	if _, err := api.NewAdminClient(a.as(old, usr, "root")).TransferLeadership(ctx, &api.TransferLeadershipRequest{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a new leader", func() bool { l := a.c.Leader(); return l >= 0 && l != old && a.c.Namenode(l).Ready() })
	nl := a.c.Leader()
	if err := getInfo(a.conn(nl, stolen)); statusCode(err) != codes.Unauthenticated {
		t.Fatalf("the new leader admits the stolen certificate: %v", err)
	}
	list, err := api.NewAdminClient(a.as(nl, usr, "root")).ListRevoked(ctx, &api.ListRevokedRequest{})
	if err != nil || len(list.Entries) != 2 {
		t.Fatalf("the new leader's list: %v, %v", list, err)
	}
	// Lifting the identity entry admits the reissued certificate again,
	// the stolen one stays out.
	if _, err := api.NewAdminClient(a.as(nl, usr, "root")).Unrevoke(ctx, &api.UnrevokeRequest{Entry: &api.RevokedEntry{Role: "user", Name: "alice"}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the reissued certificate admitted again", func() bool { return getInfo(a.conn(nl, reissued)) == nil })
	if err := getInfo(a.conn(nl, stolen)); statusCode(err) != codes.Unauthenticated {
		t.Fatalf("the stolen certificate after lifting the identity: %v", err)
	}
}

// TestRevokedDatanodeRefused: a datanode certificate revoked by
// fingerprint is refused (Unauthenticated) on every DatanodeProtocol call
// on every namenode: registration, heartbeats, block reports, keys and
// the block-recovery commit; nothing changes.
func TestRevokedDatanodeRefused(t *testing.T) {
	a := startAuthzCluster(t, 0)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cfg, err := a.c.TLSFor(security.Identity{Role: security.RoleDatanode, Name: "dn7"})
	if err != nil {
		t.Fatal(err)
	}
	leader := a.c.Leader()
	if err := registerDN("dn7").call(ctx, a.conn(leader, cfg)); err != nil {
		t.Fatal(err)
	}
	if err := heartbeatDN("dn7").call(ctx, a.conn(leader, cfg)); err != nil {
		t.Fatal(err)
	}
	if _, err := api.NewAdminClient(a.as(leader, usr, "root")).Revoke(ctx, &api.RevokeRequest{Entry: &api.RevokedEntry{Fingerprint: security.Fingerprint(leafOf(t, cfg))}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every namenode refuses the datanode", func() bool {
		for i := range 3 {
			if statusCode(heartbeatDN("dn7").call(ctx, a.conn(i, cfg))) != codes.Unauthenticated {
				return false
			}
		}
		return true
	})
	before := a.state()
	cbs := rpc{"DatanodeProtocol.CommitBlockSynchronization", func(ctx context.Context, cc *grpc.ClientConn) error {
		_, err := api.NewDatanodeProtocolClient(cc).CommitBlockSynchronization(ctx, &api.CommitBlockSynchronizationRequest{DatanodeId: "dn7"})
		return err
	}}
	ibr := rpc{"DatanodeProtocol.IncrementalBlockReport", func(ctx context.Context, cc *grpc.ClientConn) error {
		_, err := api.NewDatanodeProtocolClient(cc).IncrementalBlockReport(ctx, &api.IncrementalBlockReportRequest{DatanodeId: "dn7"})
		return err
	}}
	for i := range 3 {
		for _, r := range []rpc{registerDN("dn7"), heartbeatDN("dn7"), blockReportDN("dn7"), ibr, getKeys, cbs} {
			if err := r.call(ctx, a.conn(i, cfg)); statusCode(err) != codes.Unauthenticated || !strings.Contains(err.Error(), "revoked") {
				t.Fatalf("nn%d %s: %v", i+1, r.name, err)
			}
		}
	}
	if after := a.state(); after != before {
		t.Fatalf("refused calls changed the state:\n before %s\n after  %s", before, after)
	}
	if metric(t, a.c.Namenode(leader), revokedMetric, map[string]string{"role": "datanode"}) == 0 {
		t.Fatal("refusals not counted")
	}
}

// TestRevokedClientRefusedByDatanodes: a datanode learns the deny list
// with its key refresh (GetKeys) and refuses a revoked client
// certificate on its own DataService before any block token is looked
// at; another client's certificate is still only asked for its token.
func TestRevokedClientRefusedByDatanodes(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Config{
		Namenodes: 1, Datanodes: 1, Dir: t.TempDir(), MTLS: true,
		Namenode: func(i int, nc *namenode.Config) { nc.Namespace.Superuser = "root" },
		Datanode: func(i int, dc *datanode.Config) { dc.KeyRefreshPeriod = 50 * time.Millisecond },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	a := &authzCluster{t: t, c: c}
	stolen, err := c.TLSFor(security.Identity{Role: security.RoleUser, Name: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	bob, err := c.TLSFor(security.Identity{Role: security.RoleUser, Name: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	read := func(cfg *tls.Config) error {
		cc, err := grpc.NewClient(c.DatanodeAddrs()[0], grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		s, err := api.NewDataServiceClient(cc).ReadBlock(ctx, &api.ReadBlockRequest{Block: &api.Block{Id: 1, GenStamp: 1}})
		if err != nil {
			return err
		}
		_, err = s.Recv()
		return err
	}
	if err := read(stolen); err == nil || strings.Contains(err.Error(), "revoked") {
		t.Fatalf("before revocation: %v", err)
	}
	if _, err := api.NewAdminClient(a.as(0, usr, "root")).Revoke(ctx, &api.RevokeRequest{Entry: &api.RevokedEntry{Fingerprint: security.Fingerprint(leafOf(t, stolen))}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the datanode refuses the revoked certificate", func() bool {
		err := read(stolen)
		return statusCode(err) == codes.Unauthenticated && strings.Contains(err.Error(), "revoked")
	})
	if err := read(bob); err == nil || strings.Contains(err.Error(), "revoked") {
		t.Fatalf("another user's certificate: %v", err)
	}
	mfs, err := c.Datanode(0).Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var counted float64
	for _, mf := range mfs {
		if mf.GetName() == revokedMetric {
			for _, m := range mf.GetMetric() {
				counted += m.GetCounter().GetValue()
			}
		}
	}
	if counted == 0 {
		t.Fatal("the datanode did not count the refusal")
	}
}
