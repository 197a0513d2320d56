package namenode_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/security"
)

// The calls of package namenode/attrs, each as an attacker would make it.
var attrsRPCs = []rpc{
	{"ClientService.SetXAttr", func(ctx context.Context, cc *grpc.ClientConn) error {
		_, err := api.NewClientServiceClient(cc).SetXAttr(ctx, &api.SetXAttrRequest{Path: "/", Xattr: &api.XAttr{Name: "user.x", Value: []byte("v")}, Flags: 3})
		return err
	}},
	{"ClientService.GetXAttrs", func(ctx context.Context, cc *grpc.ClientConn) error {
		_, err := api.NewClientServiceClient(cc).GetXAttrs(ctx, &api.GetXAttrsRequest{Path: "/"})
		return err
	}},
	{"ClientService.ListXAttrs", func(ctx context.Context, cc *grpc.ClientConn) error {
		_, err := api.NewClientServiceClient(cc).ListXAttrs(ctx, &api.ListXAttrsRequest{Path: "/"})
		return err
	}},
	{"ClientService.RemoveXAttr", func(ctx context.Context, cc *grpc.ClientConn) error {
		_, err := api.NewClientServiceClient(cc).RemoveXAttr(ctx, &api.RemoveXAttrRequest{Path: "/", Name: "user.x"})
		return err
	}},
	{"ClientService.SetTimes", func(ctx context.Context, cc *grpc.ClientConn) error {
		_, err := api.NewClientServiceClient(cc).SetTimes(ctx, &api.SetTimesRequest{Path: "/", MtimeUnixMs: 1, AtimeUnixMs: 1})
		return err
	}},
	{"ClientService.Truncate", func(ctx context.Context, cc *grpc.ClientConn) error {
		_, err := api.NewClientServiceClient(cc).Truncate(ctx, &api.TruncateRequest{Path: "/f", NewLength: 0})
		return err
	}},
	{"ClientService.GetServerDefaults", func(ctx context.Context, cc *grpc.ClientConn) error {
		_, err := api.NewClientServiceClient(cc).GetServerDefaults(ctx, &api.GetServerDefaultsRequest{})
		return err
	}},
	{"ClientService.GetFsStats", func(ctx context.Context, cc *grpc.ClientConn) error {
		_, err := api.NewClientServiceClient(cc).GetFsStats(ctx, &api.GetFsStatsRequest{})
		return err
	}},
}

// TestAttrsAuthz: every call of namenode/attrs is a user's: a member
// datanode's certificate, a member namenode's, a stranger namenode's and
// another CA's are refused, on the leader and a follower, and nothing
// changes; a user is then held to HDFS's rules by the namespace (trusted.
// is the superuser's, setTimes needs w).
func TestAttrsAuthz(t *testing.T) {
	a := startAuthzCluster(t, 1)
	before := a.state()
	other, err := security.GenerateCA("someone else's CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c, k, err := security.IssueCert(other, security.DefaultTrustDomain, security.Identity{Role: usr, Name: "root"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := security.ClientTLSConfig(a.c.CA().CertPEM, c, k, "")
	if err != nil {
		t.Fatal(err)
	}
	dn := a.c.Datanodes()[0].ID()
	for _, r := range attrsRPCs {
		for _, node := range []int{a.c.Leader(), (a.c.Leader() + 1) % 3} {
			for _, who := range []struct {
				role security.Role
				name string
				need string
			}{
				{dnRole, dn, "role user"},
				{nnRole, "nn1", "role user"},
				{nnRole, "nn9", "role user"},
			} {
				ctx, cancel := quick()
				err := r.call(ctx, a.as(node, who.role, who.name))
				cancel()
				if statusCode(err) != codes.PermissionDenied || !strings.Contains(err.Error(), who.need) {
					t.Fatalf("%s as %s %s on %d: got %v; want PermissionDenied mentioning %q", r.name, who.role, who.name, node, err, who.need)
				}
			}
			ctx, cancel := quick()
			err := r.call(ctx, a.conn(node, stranger))
			cancel()
			if statusCode(err) != codes.Unavailable {
				t.Fatalf("%s with another CA's certificate: %v", r.name, err)
			}
		}
	}
	if after := a.state(); after != before {
		t.Fatalf("state changed by refused calls:\n before %s\n after  %s", before, after)
	}

	alice := api.NewClientServiceClient(a.as(a.c.Leader(), usr, "alice"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = alice.SetXAttr(ctx, &api.SetXAttrRequest{Path: "/", Xattr: &api.XAttr{Name: "trusted.x"}, Flags: 3})
	wantCode(t, err, codes.PermissionDenied, "User doesn't have permission for xattr: trusted.x")
	_, err = alice.SetTimes(ctx, &api.SetTimesRequest{Path: "/", MtimeUnixMs: 5, AtimeUnixMs: -1})
	wantCode(t, err, codes.PermissionDenied, "access=-w-")
	_, err = alice.SetXAttr(ctx, &api.SetXAttrRequest{Path: "/", Xattr: &api.XAttr{Name: "color"}, Flags: 3})
	wantCode(t, err, codes.InvalidArgument, "must be prefixed")
	_, err = alice.Truncate(ctx, &api.TruncateRequest{Path: "/", NewLength: -5})
	wantCode(t, err, codes.InvalidArgument, "Cannot truncate to a negative file size: -5.")
	sd, err := alice.GetServerDefaults(ctx, &api.GetServerDefaultsRequest{})
	if err != nil || sd.Defaults.GetBytesPerChecksum() != 512 {
		t.Fatalf("alice's server defaults: %v %v", sd, err)
	}
	if after := a.state(); after != before {
		t.Fatalf("state changed by refused calls:\n before %s\n after  %s", before, after)
	}
}
