package namenode_test

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/localcluster"
	"github.com/blockfs/blockfs/namenode"
	"github.com/blockfs/blockfs/security"
)

var (
	nnRole = security.RoleNamenode
	dnRole = security.RoleDatanode
	usr    = security.RoleUser
)

// authzCluster is an mTLS cluster of three namenodes and one datanode with
// role certificates, and a way to call any RPC as any certificate.
type authzCluster struct {
	t *testing.T
	c *localcluster.Cluster
}

func startAuthzCluster(t *testing.T, datanodes int) *authzCluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Config{
		Namenodes: 3, Datanodes: datanodes, Dir: t.TempDir(), MTLS: true,
		Groups:   map[string][]string{"ops": {"supergroup"}, "alice": {"staff"}},
		Namenode: func(i int, nc *namenode.Config) { nc.Namespace.Superuser = "root" },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &authzCluster{t: t, c: c}
}

// conn dials namenode i presenting cfg.
func (a *authzCluster) conn(i int, cfg *tls.Config) *grpc.ClientConn {
	a.t.Helper()
	cc, err := grpc.NewClient(a.c.NamenodeAddrs()[i], grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		a.t.Fatal(err)
	}
	a.t.Cleanup(func() { cc.Close() })
	return cc
}

// as dials namenode i with a role certificate of the cluster's CA.
func (a *authzCluster) as(i int, role security.Role, name string) *grpc.ClientConn {
	a.t.Helper()
	cfg, err := a.c.TLSFor(security.Identity{Role: role, Name: name})
	if err != nil {
		a.t.Fatal(err)
	}
	return a.conn(i, cfg)
}

// state is what an attack must not change: the namespace and the members.
func (a *authzCluster) state() string {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.c.WaitConverged(ctx); err != nil {
		a.t.Fatal(err)
	}
	n := a.c.Namenode(a.c.Leader())
	st, err := api.NewClientServiceClient(a.as(0, usr, "root")).ClusterStatus(ctx, &api.ClusterStatusRequest{})
	if err != nil {
		a.t.Fatal(err)
	}
	var ids []string
	for _, m := range st.Members {
		ids = append(ids, m.Id)
	}
	return fmt.Sprintf("%x members=%s", n.NamespaceHash(), strings.Join(ids, ","))
}

// denied sums blockfs_auth_denied_total over every namenode.
func (a *authzCluster) denied() float64 {
	a.t.Helper()
	var sum float64
	for _, n := range a.c.Namenodes() {
		mfs, err := n.Registry().Gather()
		if err != nil {
			a.t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "blockfs_auth_denied_total" {
				for _, m := range mf.Metric {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}

func quick() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 5*time.Second)
}

// rpc is one call to make as an attacker.
type rpc struct {
	name string
	call func(ctx context.Context, cc *grpc.ClientConn) error
}

var (
	addServerAlice = rpc{"Admin.AddServer(alice)", func(ctx context.Context, cc *grpc.ClientConn) error {
		_, err := api.NewAdminClient(cc).AddServer(ctx, &api.AddServerRequest{Id: "alice", RaftAddr: "127.0.0.1:1", GrpcAddr: "127.0.0.1:2"})
		return err
	}}
	removeServer = rpc{"Admin.RemoveServer(nn3)", func(ctx context.Context, cc *grpc.ClientConn) error {
		_, err := api.NewAdminClient(cc).RemoveServer(ctx, &api.RemoveServerRequest{Id: "nn3"})
		return err
	}}
	snapshot = rpc{"Admin.Snapshot", func(ctx context.Context, cc *grpc.ClientConn) error {
		_, err := api.NewAdminClient(cc).Snapshot(ctx, &api.SnapshotRequest{})
		return err
	}}
	revokeNN1 = rpc{"Admin.Revoke(namenode:nn1)", func(ctx context.Context, cc *grpc.ClientConn) error {
		_, err := api.NewAdminClient(cc).Revoke(ctx, &api.RevokeRequest{Entry: &api.RevokedEntry{Role: "namenode", Name: "nn1"}})
		return err
	}}
	unrevokeNN1 = rpc{"Admin.Unrevoke(namenode:nn1)", func(ctx context.Context, cc *grpc.ClientConn) error {
		_, err := api.NewAdminClient(cc).Unrevoke(ctx, &api.UnrevokeRequest{Entry: &api.RevokedEntry{Role: "namenode", Name: "nn1"}})
		return err
	}}
	listRevoked = rpc{"Admin.ListRevoked", func(ctx context.Context, cc *grpc.ClientConn) error {
		_, err := api.NewAdminClient(cc).ListRevoked(ctx, &api.ListRevokedRequest{})
		return err
	}}
	decommission = rpc{"Admin.Decommission(dn1)", func(ctx context.Context, cc *grpc.ClientConn) error {
		_, err := api.NewAdminClient(cc).Decommission(ctx, &api.DecommissionRequest{Datanodes: []string{"dn1"}})
		return err
	}}
	recommission = rpc{"Admin.Recommission(dn1)", func(ctx context.Context, cc *grpc.ClientConn) error {
		_, err := api.NewAdminClient(cc).Recommission(ctx, &api.RecommissionRequest{Datanodes: []string{"dn1"}})
		return err
	}}
	maintenance = rpc{"Admin.Maintenance(dn1)", func(ctx context.Context, cc *grpc.ClientConn) error {
		_, err := api.NewAdminClient(cc).Maintenance(ctx, &api.MaintenanceRequest{Datanodes: []string{"dn1"}, UntilUnixMs: 1 << 50})
		return err
	}}
	refreshNodes = rpc{"Admin.RefreshNodes", func(ctx context.Context, cc *grpc.ClientConn) error {
		_, err := api.NewAdminClient(cc).RefreshNodes(ctx, &api.RefreshNodesRequest{})
		return err
	}}
	startBalancer = rpc{"Admin.StartBalancer", func(ctx context.Context, cc *grpc.ClientConn) error {
		_, err := api.NewAdminClient(cc).StartBalancer(ctx, &api.StartBalancerRequest{Threshold: 10, ForwardedFor: "user/root"})
		return err
	}}
	stopBalancer = rpc{"Admin.StopBalancer", func(ctx context.Context, cc *grpc.ClientConn) error {
		_, err := api.NewAdminClient(cc).StopBalancer(ctx, &api.StopBalancerRequest{})
		return err
	}}
	applyMkdirs = rpc{"NamenodeInternal.Apply(mkdirs)", func(ctx context.Context, cc *grpc.ClientConn) error {
		b, _ := proto.Marshal(&api.MkdirsCommand{Path: "/pwned", Perm: 0o777, Parents: true})
		_, err := api.NewNamenodeInternalClient(cc).Apply(ctx, &api.ApplyRequest{Command: append([]byte{1}, b...)})
		return err
	}}
	readIndex = rpc{"NamenodeInternal.ReadIndex", func(ctx context.Context, cc *grpc.ClientConn) error {
		_, err := api.NewNamenodeInternalClient(cc).ReadIndex(ctx, &api.ReadIndexRequest{})
		return err
	}}
	registerDN = func(id string) rpc {
		return rpc{"DatanodeProtocol.Register(" + id + ")", func(ctx context.Context, cc *grpc.ClientConn) error {
			_, err := api.NewDatanodeProtocolClient(cc).Register(ctx, &api.RegisterRequest{Node: &api.DatanodeInfo{Id: id, Addr: "127.0.0.1:9", Capacity: 1 << 50}})
			return err
		}}
	}
	heartbeatDN = func(id string) rpc {
		return rpc{"DatanodeProtocol.Heartbeat(" + id + ")", func(ctx context.Context, cc *grpc.ClientConn) error {
			_, err := api.NewDatanodeProtocolClient(cc).Heartbeat(ctx, &api.HeartbeatRequest{DatanodeId: id, Capacity: 1 << 50})
			return err
		}}
	}
	blockReportDN = func(id string) rpc {
		return rpc{"DatanodeProtocol.BlockReport(" + id + ")", func(ctx context.Context, cc *grpc.ClientConn) error {
			_, err := api.NewDatanodeProtocolClient(cc).BlockReport(ctx, &api.BlockReportRequest{DatanodeId: id,
				Blocks: []*api.ReportedBlock{{Block: &api.Block{Id: 1, GenStamp: 1, Length: 1}, InodeId: 2}}})
			return err
		}}
	}
	getKeys = rpc{"DatanodeProtocol.GetKeys", func(ctx context.Context, cc *grpc.ClientConn) error {
		_, err := api.NewDatanodeProtocolClient(cc).GetKeys(ctx, &api.GetKeysRequest{})
		return err
	}}
	mkdirs = rpc{"ClientService.Mkdirs", func(ctx context.Context, cc *grpc.ClientConn) error {
		_, err := api.NewClientServiceClient(cc).Mkdirs(ctx, &api.MkdirsRequest{Path: "/dn-was-here", Parents: true})
		return err
	}}
	getLocations = rpc{"ClientService.GetBlockLocations", func(ctx context.Context, cc *grpc.ClientConn) error {
		_, err := api.NewClientServiceClient(cc).GetBlockLocations(ctx, &api.GetBlockLocationsRequest{Path: "/"})
		return err
	}}
	// The HDFS snapshot methods: a user's; a datanode is refused.
	allowSnap = rpc{"ClientService.AllowSnapshot", func(ctx context.Context, cc *grpc.ClientConn) error {
		_, err := api.NewClientServiceClient(cc).AllowSnapshot(ctx, &api.AllowSnapshotRequest{Path: "/"})
		return err
	}}
	disallowSnap = rpc{"ClientService.DisallowSnapshot", func(ctx context.Context, cc *grpc.ClientConn) error {
		_, err := api.NewClientServiceClient(cc).DisallowSnapshot(ctx, &api.DisallowSnapshotRequest{Path: "/"})
		return err
	}}
	createSnap = rpc{"ClientService.CreateSnapshot", func(ctx context.Context, cc *grpc.ClientConn) error {
		_, err := api.NewClientServiceClient(cc).CreateSnapshot(ctx, &api.CreateSnapshotRequest{Path: "/", Name: "s"})
		return err
	}}
	deleteSnap = rpc{"ClientService.DeleteSnapshot", func(ctx context.Context, cc *grpc.ClientConn) error {
		_, err := api.NewClientServiceClient(cc).DeleteSnapshot(ctx, &api.DeleteSnapshotRequest{Path: "/", Name: "s"})
		return err
	}}
	renameSnap = rpc{"ClientService.RenameSnapshot", func(ctx context.Context, cc *grpc.ClientConn) error {
		_, err := api.NewClientServiceClient(cc).RenameSnapshot(ctx, &api.RenameSnapshotRequest{Path: "/", OldName: "s", NewName: "t"})
		return err
	}}
	listSnapDirs = rpc{"ClientService.GetSnapshottableDirListing", func(ctx context.Context, cc *grpc.ClientConn) error {
		_, err := api.NewClientServiceClient(cc).GetSnapshottableDirListing(ctx, &api.GetSnapshottableDirListingRequest{})
		return err
	}}
)

// TestAuthzRefusesWrongRoles: every class of caller that the old control
// plane let through is refused with PermissionDenied naming the role the
// call needs, on the leader and on a follower; nothing changes, and every
// refusal is counted.
func TestAuthzRefusesWrongRoles(t *testing.T) {
	a := startAuthzCluster(t, 0)
	before, deniedBefore := a.state(), a.denied()
	cases := []struct {
		role security.Role
		name string
		rpc  rpc
		need string
	}{
		// A user certificate: no Admin, no Apply, no DatanodeProtocol.
		{usr, "alice", addServerAlice, "superuser"},
		{usr, "alice", removeServer, "superuser"},
		{usr, "alice", snapshot, "superuser"},
		{usr, "alice", revokeNN1, "superuser"},
		{usr, "alice", unrevokeNN1, "superuser"},
		{usr, "alice", listRevoked, "superuser"},
		{usr, "alice", decommission, "superuser"},
		{usr, "alice", recommission, "superuser"},
		{usr, "alice", maintenance, "superuser"},
		{usr, "alice", refreshNodes, "superuser"},
		{dnRole, "dn1", decommission, "role user or namenode"},
		{usr, "alice", startBalancer, "superuser"},
		{usr, "alice", stopBalancer, "superuser"},
		{usr, "alice", applyMkdirs, "role namenode"},
		{usr, "alice", readIndex, "role namenode"},
		{usr, "alice", registerDN("alice"), "role datanode"},
		{usr, "alice", heartbeatDN("dn1"), "role datanode"},
		{usr, "alice", blockReportDN("dn1"), "role datanode"},
		{usr, "alice", getKeys, "role datanode"},
		// A datanode certificate is not a user, not an admin, not a
		// namenode, and speaks only for itself.
		{dnRole, "dn1", mkdirs, "role user"},
		{dnRole, "dn1", getLocations, "role user"},
		{dnRole, "dn1", allowSnap, "role user"},
		{dnRole, "dn1", disallowSnap, "role user"},
		{dnRole, "dn1", createSnap, "role user"},
		{dnRole, "dn1", deleteSnap, "role user"},
		{dnRole, "dn1", renameSnap, "role user"},
		{dnRole, "dn1", listSnapDirs, "role user"},
		{nnRole, "nn9", createSnap, "role user"},
		{dnRole, "dn1", snapshot, "role user or namenode"},
		{dnRole, "dn1", revokeNN1, "role user or namenode"},
		{dnRole, "dn1", startBalancer, "role user or namenode"},
		{nnRole, "nn9", startBalancer, "not a namenode of this cluster"},
		{dnRole, "dn1", applyMkdirs, "role namenode"},
		{dnRole, "dn9", heartbeatDN("dn1"), "only speak for itself"},
		{dnRole, "dn9", registerDN("dn1"), "only speak for itself"},
		{dnRole, "dn9", blockReportDN("dn1"), "only speak for itself"},
		// A namenode certificate that is not a member of the cluster.
		{nnRole, "nn9", applyMkdirs, "not a namenode of this cluster"},
		{nnRole, "nn9", readIndex, "not a namenode of this cluster"},
		{nnRole, "nn9", removeServer, "not a namenode of this cluster"},
		{nnRole, "nn9", addServerAlice, "not a namenode of this cluster"},
		{nnRole, "nn9", revokeNN1, "not a namenode of this cluster"},
		{nnRole, "nn9", mkdirs, "role user"},
		{nnRole, "nn9", heartbeatDN("nn9"), "role datanode"},
	}
	for _, c := range cases {
		for _, node := range []int{a.c.Leader(), (a.c.Leader() + 1) % 3} {
			t.Run(c.role.String()+"/"+c.name+"/"+c.rpc.name, func(t *testing.T) {
				ctx, cancel := quick()
				defer cancel()
				err := c.rpc.call(ctx, a.as(node, c.role, c.name))
				if statusCode(err) != codes.PermissionDenied || !strings.Contains(err.Error(), c.need) {
					t.Fatalf("got %v; want PermissionDenied mentioning %q", err, c.need)
				}
			})
		}
	}
	if after := a.state(); after != before {
		t.Fatalf("state changed by refused calls:\n before %s\n after  %s", before, after)
	}
	if got, want := a.denied()-deniedBefore, float64(2*len(cases)); got != want {
		t.Fatalf("blockfs_auth_denied_total rose by %v, want %v", got, want)
	}
}

// TestAuthzRefusesStrangers: no certificate, another CA's, another trust
// domain's, or one that names no role: refused before anything runs.
func TestAuthzRefusesStrangers(t *testing.T) {
	a := startAuthzCluster(t, 0)
	before := a.state()
	other, err := security.GenerateCA("someone else's CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cfg := func(ca *security.CA, certPEM, keyPEM []byte) *tls.Config {
		c, err := security.ClientTLSConfig(a.c.CA().CertPEM, certPEM, keyPEM, "")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	issue := func(ca *security.CA, td string, id security.Identity) *tls.Config {
		c, k, err := security.IssueCert(ca, td, id, nil)
		if err != nil {
			t.Fatal(err)
		}
		return cfg(ca, c, k)
	}
	cnOnly := func() *tls.Config {
		c, k := legacyCNCert(t, a.c.CA(), "root")
		return cfg(a.c.CA(), c, k)
	}
	root := security.Identity{Role: usr, Name: "root"}
	cases := []struct {
		name string
		tls  *tls.Config
		want codes.Code
	}{
		{"no certificate", cfg(nil, nil, nil), codes.Unavailable}, // the TLS handshake fails
		{"another CA", issue(other, security.DefaultTrustDomain, root), codes.Unavailable},
		{"another trust domain", issue(a.c.CA(), "elsewhere", root), codes.Unauthenticated},
		{"CN root, no URI SAN", cnOnly(), codes.Unauthenticated},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, r := range []rpc{mkdirs, snapshot, applyMkdirs, heartbeatDN("dn1")} {
				ctx, cancel := quick()
				err := r.call(ctx, a.conn(a.c.Leader(), c.tls))
				cancel()
				if statusCode(err) != c.want {
					t.Fatalf("%s: got %v, want %v", r.name, err, c.want)
				}
			}
		})
	}
	if after := a.state(); after != before {
		t.Fatalf("state changed: %s -> %s", before, after)
	}
}

// legacyCNCert issues a certificate of the cluster CA that names its holder
// only by Common Name, as certificates did before role identities.
func legacyCNCert(t *testing.T, ca *security.CA, cn string) (certPEM, keyPEM []byte) {
	t.Helper()
	other, err := security.GenerateCA(cn, time.Hour) // a fresh key pair in the right encoding
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(42), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, other.Cert.PublicKey, ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), other.KeyPEM
}

// TestAuthzAllows: the rows' allowed side. The superuser and a supergroup
// member (by the namenode's group mapping) may snapshot; a member namenode
// may read the index; a datanode may speak for itself; a user certificate
// acts as its name whatever it claims in metadata.
func TestAuthzAllows(t *testing.T) {
	a := startAuthzCluster(t, 1)
	leader := a.c.Leader()
	for _, who := range []string{"root", "ops"} {
		ctx, cancel := quick()
		if err := snapshot.call(ctx, a.as(leader, usr, who)); err != nil {
			t.Fatalf("%s: %v", who, err)
		}
		cancel()
	}
	ctx, cancel := quick()
	defer cancel()
	if err := readIndex.call(ctx, a.as(leader, nnRole, "nn2")); err != nil {
		t.Fatalf("member namenode ReadIndex: %v", err)
	}
	dn := a.c.DatanodeID(0)
	if err := heartbeatDN(dn).call(ctx, a.as(leader, dnRole, dn)); err != nil {
		t.Fatalf("datanode heartbeat as itself: %v", err)
	}
	// alice claims root and the supergroup in metadata: ignored.
	claim := metadata.AppendToOutgoingContext(ctx, security.UserKey, "root", security.RoleKey, "namenode", "blockfs-groups", "supergroup")
	if err := snapshot.call(claim, a.as(leader, usr, "alice")); statusCode(err) != codes.PermissionDenied {
		t.Fatalf("alice claiming root: %v", err)
	}
	cl := api.NewClientServiceClient(a.as(leader, usr, "alice"))
	if _, err := cl.Mkdirs(claim, &api.MkdirsRequest{Path: "/rootonly"}); statusCode(err) != codes.PermissionDenied {
		t.Fatalf("alice mkdir in / claiming root: %v", err)
	}
}

// TestForwardedCommandsAreChecked: a member namenode may forward writes,
// but not publish another namenode's signing key, prune keys, remove
// members or register another member.
func TestForwardedCommandsAreChecked(t *testing.T) {
	a := startAuthzCluster(t, 0)
	before := a.state()
	leader := a.c.Leader()
	peer := "nn1"
	if leader == 0 {
		peer = "nn2"
	}
	victim := "nn3"
	if leader == 2 {
		victim = "nn1"
		if peer == "nn1" {
			victim = "nn2"
		}
	}
	kp, err := security.GenerateKeyPair(victim, time.Now(), time.Hour, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey().MarshalBinary()
	cmd := func(t byte, m proto.Message) []byte {
		b, _ := proto.Marshal(m)
		return append([]byte{t}, b...)
	}
	cases := []struct {
		name string
		data []byte
	}{
		{"another namenode's key", cmd(13, &api.RegisterKeyCommand{PublicKey: pub, Proposer: victim})},
		{"prune keys", cmd(14, &api.PruneKeysCommand{CutoffUnixMs: time.Now().Add(24 * time.Hour).UnixMilli()})},
		{"remove a member", cmd(9, &api.RemoveMemberCommand{Id: victim})},
		{"register another member", cmd(8, &api.SetMemberCommand{Member: &api.Member{Id: "evil", RaftAddr: "x", GrpcAddr: "y"}})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := quick()
			defer cancel()
			_, err := api.NewNamenodeInternalClient(a.as(leader, nnRole, peer)).Apply(ctx, &api.ApplyRequest{Command: c.data})
			if statusCode(err) != codes.PermissionDenied {
				t.Fatalf("got %v, want PermissionDenied", err)
			}
		})
	}
	if after := a.state(); after != before {
		t.Fatalf("state changed: %s -> %s", before, after)
	}
}

// TestRemovedNamenodeRefused: once a namenode is removed from the Raft
// configuration, its certificate no longer admits it to NamenodeInternal.
func TestRemovedNamenodeRefused(t *testing.T) {
	a := startAuthzCluster(t, 0)
	leader := a.c.Leader()
	victim := "nn3"
	if leader == 2 {
		victim = "nn2"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	asVictim := a.as(leader, nnRole, victim)
	if err := readIndex.call(ctx, asVictim); err != nil {
		t.Fatalf("member %s before removal: %v", victim, err)
	}
	if _, err := api.NewAdminClient(a.as(leader, usr, "root")).RemoveServer(ctx, &api.RemoveServerRequest{Id: victim}); err != nil {
		t.Fatal(err)
	}
	for {
		err := readIndex.call(ctx, asVictim)
		if statusCode(err) == codes.PermissionDenied && strings.Contains(err.Error(), "not a namenode of this cluster") {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("removed namenode %s still admitted: %v", victim, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
