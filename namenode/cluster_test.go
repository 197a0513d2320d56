package namenode_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/internal/testutil/leaktest"
	"github.com/blockfs/blockfs/localcluster"
	"github.com/blockfs/blockfs/namenode"
	"github.com/blockfs/blockfs/security"
)

func TestMain(m *testing.M) { leaktest.VerifyTestMain(m) }

// tc is a test cluster with one gRPC connection per namenode.
type tc struct {
	t     testing.TB
	c     *localcluster.Cluster
	conns []*grpc.ClientConn
}

func startCluster(t testing.TB, n int, adjust func(i int, c *namenode.Config)) *tc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// These tests drive scripted datanodes that report only when a test
	// says so: Complete does not wait for reports here (MinReplication 0)
	// unless a test sets it.
	c, err := localcluster.Start(ctx, localcluster.Config{Namenodes: n, Dir: t.TempDir(), Namenode: func(i int, c *namenode.Config) {
		c.Namespace.MinReplication = 0
		if adjust != nil {
			adjust(i, c)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	x := &tc{t: t, c: c}
	for _, addr := range c.NamenodeAddrs() {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		x.conns = append(x.conns, conn)
	}
	t.Cleanup(func() {
		for _, conn := range x.conns {
			conn.Close()
		}
		c.Close()
	})
	return x
}

// client returns a ClientService stub to namenode i acting as user.
func (x *tc) client(i int) api.ClientServiceClient { return api.NewClientServiceClient(x.conns[i]) }

// as returns a context for calls made as user.
func (x *tc) as(user string) context.Context {
	return metadata.AppendToOutgoingContext(x.t.Context(), namenode.UserKey, user)
}

func (x *tc) root() context.Context { return x.as("root") }

// asDatanode returns a context for calls made by datanode id (simple auth:
// the role and the name are stated in metadata).
func asDatanode(ctx context.Context, id string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, security.UserKey, id, security.RoleKey, security.RoleDatanode.String())
}

func (x *tc) leader() int {
	i, err := x.c.WaitLeader(context.Background())
	if err != nil {
		x.t.Fatal(err)
	}
	return i
}

func (x *tc) follower() int {
	l := x.leader()
	for i := range x.conns {
		if i != l && x.c.Namenode(i) != nil {
			return i
		}
	}
	x.t.Fatal("no follower")
	return -1
}

func (x *tc) converge() {
	x.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := x.c.WaitConverged(ctx); err != nil {
		x.t.Fatal(err)
	}
}

// registerDatanodes registers fake datanodes with every namenode so that
// AddBlock can place blocks, and keeps them alive with heartbeats until
// the test ends.
func (x *tc) registerDatanodes(n int) {
	x.registerDatanodesOnly(n)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		ctx := context.Background()
		for {
			for i, conn := range x.conns {
				if x.c.Namenode(i) == nil {
					continue
				}
				dp := api.NewDatanodeProtocolClient(conn)
				for d := range n {
					cctx, cancel := context.WithTimeout(asDatanode(ctx, fmt.Sprintf("dn%d", d)), time.Second)
					dp.Heartbeat(cctx, &api.HeartbeatRequest{DatanodeId: fmt.Sprintf("dn%d", d), Capacity: 1 << 40})
					cancel()
				}
			}
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	x.t.Cleanup(func() { close(stop); <-done })
}

// registerDatanodesOnly registers fake datanodes that never heartbeat.
func (x *tc) registerDatanodesOnly(n int) {
	x.t.Helper()
	for i, conn := range x.conns {
		if x.c.Namenode(i) == nil {
			continue
		}
		dp := api.NewDatanodeProtocolClient(conn)
		for d := range n {
			_, err := dp.Register(asDatanode(x.t.Context(), fmt.Sprintf("dn%d", d)), &api.RegisterRequest{Node: &api.DatanodeInfo{
				Id: fmt.Sprintf("dn%d", d), Addr: fmt.Sprintf("127.0.0.1:%d", 1+d), Capacity: 1 << 40,
			}})
			if err != nil {
				x.t.Fatal(err)
			}
		}
	}
}

func wantCode(t testing.TB, err error, code codes.Code, msgPart string) {
	t.Helper()
	if status.Code(err) != code {
		t.Fatalf("got %v, want code %v", err, code)
	}
	if msgPart != "" && !strings.Contains(status.Convert(err).Message(), msgPart) {
		t.Fatalf("error %q does not mention %q", status.Convert(err).Message(), msgPart)
	}
}
