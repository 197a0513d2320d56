package security

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/blockfs/blockfs/api"
	hadoophdfs "github.com/blockfs/blockfs/api/hadoop/hdfs"
	"github.com/blockfs/blockfs/errs"
)

// TestPolicyCoversEveryMethod: every RPC of every blockfs service has a
// rule, and every rule names a method that exists (or health, reflection
// and the HTTP endpoints).
func TestPolicyCoversEveryMethod(t *testing.T) {
	p := Policy()
	seen := map[string]bool{}
	for _, fd := range []protoreflect.FileDescriptor{api.File_api_admin_proto, api.File_api_client_proto, api.File_api_data_proto, api.File_api_datanode_proto} {
		for i := 0; i < fd.Services().Len(); i++ {
			sd := fd.Services().Get(i)
			for j := 0; j < sd.Methods().Len(); j++ {
				m := "/" + string(sd.FullName()) + "/" + string(sd.Methods().Get(j).Name())
				seen[m] = true
				r, ok := p[m]
				if !ok {
					t.Errorf("%s has no rule", m)
				} else if r.Public || len(r.Roles) == 0 {
					t.Errorf("%s: gRPC methods must name roles and never be public", m)
				}
			}
		}
	}
	// The HDFS door's rows name methods of Hadoop's ClientNamenodeProtocol
	// (package hdfsrpc tests that each method it serves has its row).
	cnp := hadoophdfs.File_api_hadoop_hdfs_ClientNamenodeProtocol_proto.Services().ByName("ClientNamenodeProtocol")
	for i := 0; i < cnp.Methods().Len(); i++ {
		seen[HadoopRowPrefix+string(cnp.Methods().Get(i).Name())] = true
	}
	for k := range p {
		if !seen[k] && !filepathLike(k) {
			t.Errorf("rule %q names no method", k)
		}
	}
}

func filepathLike(k string) bool {
	for _, m := range []string{"GET /", "PUT /", "POST /", "DELETE /"} {
		if strings.HasPrefix(k, m) {
			return true
		}
	}
	return strings.HasPrefix(k, "/grpc.")
}

type fakeEnv struct{ super, member string }

func (e fakeEnv) IsSuperuser(u string) bool { return u == e.super }
func (e fakeEnv) IsMember(n string) bool    { return n == e.member }

// TestAuthorizeSimple: the rule table applied to stated identities, with
// the refusal kind and counter; no identity is never "nobody".
func TestAuthorizeSimple(t *testing.T) {
	reg := prometheus.NewRegistry()
	a := NewAuthorizer(AuthConfig{Simple: true, Env: fakeEnv{super: "root", member: "nn1"}, Registry: reg})
	md := func(kv ...string) context.Context {
		return metadata.NewIncomingContext(context.Background(), metadata.Pairs(kv...))
	}
	cases := []struct {
		name   string
		ctx    context.Context
		method string
		req    any
		kind   errs.Kind // 0: allowed
	}{
		{"no user", md(), api.ClientService_Mkdirs_FullMethodName, nil, errs.Unauthenticated},
		{"empty user", md(UserKey, ""), api.ClientService_Mkdirs_FullMethodName, nil, errs.Unauthenticated},
		{"bad role", md(UserKey, "a", RoleKey, "admin"), api.ClientService_Mkdirs_FullMethodName, nil, errs.Unauthenticated},
		{"bad name", md(UserKey, "a/b"), api.ClientService_Mkdirs_FullMethodName, nil, errs.Unauthenticated},
		{"user mkdirs", md(UserKey, "alice"), api.ClientService_Mkdirs_FullMethodName, nil, 0},
		{"user snapshot", md(UserKey, "alice"), api.Admin_Snapshot_FullMethodName, nil, errs.Permission},
		{"superuser snapshot", md(UserKey, "root"), api.Admin_Snapshot_FullMethodName, nil, 0},
		{"user namespace hash", md(UserKey, "alice"), api.Admin_NamespaceHash_FullMethodName, nil, errs.Permission},
		{"superuser namespace hash", md(UserKey, "root"), api.Admin_NamespaceHash_FullMethodName, nil, 0},
		{"user starts the balancer", md(UserKey, "alice"), api.Admin_StartBalancer_FullMethodName, nil, errs.Permission},
		{"user watches the balancer", md(UserKey, "alice"), api.Admin_BalancerProgress_FullMethodName, nil, errs.Permission},
		{"user stops the balancer", md(UserKey, "alice"), api.Admin_StopBalancer_FullMethodName, nil, errs.Permission},
		{"datanode starts the balancer", md(UserKey, "dn1", RoleKey, "datanode"), api.Admin_StartBalancer_FullMethodName, nil, errs.Permission},
		{"stranger namenode stops the balancer", md(UserKey, "nn7", RoleKey, "namenode"), api.Admin_StopBalancer_FullMethodName, nil, errs.Permission},
		{"superuser starts the balancer", md(UserKey, "root"), api.Admin_StartBalancer_FullMethodName, nil, 0},
		{"member namenode forwards balancer progress", md(UserKey, "nn1", RoleKey, "namenode"), api.Admin_BalancerProgress_FullMethodName, nil, 0},
		{"member namenode snapshot", md(UserKey, "nn1", RoleKey, "namenode"), api.Admin_Snapshot_FullMethodName, nil, 0},
		{"user revoke", md(UserKey, "alice"), api.Admin_Revoke_FullMethodName, nil, errs.Permission},
		{"user unrevoke", md(UserKey, "alice"), api.Admin_Unrevoke_FullMethodName, nil, errs.Permission},
		{"user lists revoked", md(UserKey, "alice"), api.Admin_ListRevoked_FullMethodName, nil, errs.Permission},
		{"datanode revoke", md(UserKey, "dn1", RoleKey, "datanode"), api.Admin_Revoke_FullMethodName, nil, errs.Permission},
		{"stranger namenode revoke", md(UserKey, "nn7", RoleKey, "namenode"), api.Admin_Revoke_FullMethodName, nil, errs.Permission},
		{"superuser revoke", md(UserKey, "root"), api.Admin_Revoke_FullMethodName, nil, 0},
		{"user decommission", md(UserKey, "alice"), api.Admin_Decommission_FullMethodName, nil, errs.Permission},
		{"user recommission", md(UserKey, "alice"), api.Admin_Recommission_FullMethodName, nil, errs.Permission},
		{"user maintenance", md(UserKey, "alice"), api.Admin_Maintenance_FullMethodName, nil, errs.Permission},
		{"user refresh nodes", md(UserKey, "alice"), api.Admin_RefreshNodes_FullMethodName, nil, errs.Permission},
		{"datanode decommission", md(UserKey, "dn1", RoleKey, "datanode"), api.Admin_Decommission_FullMethodName, nil, errs.Permission},
		{"superuser decommission", md(UserKey, "root"), api.Admin_Decommission_FullMethodName, nil, 0},
		{"member namenode forwards revoke", md(UserKey, "nn1", RoleKey, "namenode"), api.Admin_Revoke_FullMethodName, nil, 0},
		{"stranger namenode apply", md(UserKey, "nn7", RoleKey, "namenode"), api.NamenodeInternal_Apply_FullMethodName, nil, errs.Permission},
		{"joining namenode adds itself", md(UserKey, "nn7", RoleKey, "namenode"), api.Admin_AddServer_FullMethodName, &api.AddServerRequest{Id: "nn7"}, 0},
		{"joining namenode adds another", md(UserKey, "nn7", RoleKey, "namenode"), api.Admin_AddServer_FullMethodName, &api.AddServerRequest{Id: "nn8"}, errs.Permission},
		{"datanode as itself", md(UserKey, "dn1", RoleKey, "datanode"), api.DatanodeProtocol_Heartbeat_FullMethodName, &api.HeartbeatRequest{DatanodeId: "dn1"}, 0},
		{"datanode as another", md(UserKey, "dn1", RoleKey, "datanode"), api.DatanodeProtocol_Heartbeat_FullMethodName, &api.HeartbeatRequest{DatanodeId: "dn2"}, errs.Permission},
		{"datanode registers another", md(UserKey, "dn1", RoleKey, "datanode"), api.DatanodeProtocol_Register_FullMethodName, &api.RegisterRequest{Node: &api.DatanodeInfo{Id: "dn2"}}, errs.Permission},
		{"datanode as user", md(UserKey, "dn1", RoleKey, "datanode"), api.ClientService_Create_FullMethodName, nil, errs.Permission},
		{"user reports bad blocks of a datanode", md(UserKey, "alice"), api.ClientService_ReportBadBlocks_FullMethodName, &api.ReportBadBlocksRequest{DatanodeId: "dn2"}, 0},
		{"user transfer", md(UserKey, "alice"), api.DataService_TransferBlock_FullMethodName, nil, errs.Permission},
		{"unknown method", md(UserKey, "root"), "/blockfs.Secret/Backdoor", nil, errs.Permission},
		{"health", md(UserKey, "x", RoleKey, "datanode"), "/grpc.health.v1.Health/Check", nil, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, err := a.Authorize(c.ctx, c.method, c.req)
			if c.kind == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if _, ok := IdentityFromContext(ctx); !ok {
					t.Fatal("no identity in the context")
				}
				return
			}
			if !errs.Is(err, c.kind) {
				t.Fatalf("got %v, want %v", err, c.kind)
			}
		})
	}
	want := 0
	for _, c := range cases {
		if c.kind != 0 {
			want++
		}
	}
	var sum float64
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		for _, m := range mf.Metric {
			sum += m.GetCounter().GetValue()
		}
	}
	if int(sum) != want {
		t.Fatalf("counted %v refusals, want %d", sum, want)
	}
}

func TestGroupMapping(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "groups")
	if err := os.WriteFile(f, []byte("# staff\nalice = staff, analytics\nbob=\n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := NewGroupMapping(f)
	if err != nil {
		t.Fatal(err)
	}
	if got := g.Groups("alice"); len(got) != 2 || got[0] != "staff" || got[1] != "analytics" {
		t.Fatalf("alice: %v", got)
	}
	if got := g.Groups("bob"); len(got) != 0 {
		t.Fatalf("bob: %v", got)
	}
	// A broken file keeps the old table.
	if err := os.WriteFile(f, []byte("alice = staff\nalice = root\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := g.Reload(); !errs.Is(err, errs.Invalid) {
		t.Fatalf("reload of a duplicate user: %v", err)
	}
	if got := g.Groups("alice"); len(got) != 2 {
		t.Fatalf("old table lost: %v", got)
	}
	if err := os.WriteFile(f, []byte("alice = wheel\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := g.Reload(); err != nil || g.Groups("alice")[0] != "wheel" || g.Groups("bob") != nil {
		t.Fatalf("reload: %v %v", err, g.Groups("alice"))
	}
	for _, bad := range []string{"no equals sign", "a/b = x", "a = b/c"} {
		if _, err := ParseGroupMapping([]byte(bad)); !errs.Is(err, errs.Invalid) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
