package localcluster_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/datanode"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/testutil/leaktest"
	"github.com/blockfs/blockfs/localcluster"
	"github.com/blockfs/blockfs/security"
)

func TestMain(m *testing.M) { leaktest.VerifyTestMain(m) }

const blockSize = 1024

func startCluster(t *testing.T, encrypt bool) (*localcluster.Cluster, *client.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Config{
		Namenodes: 3, Datanodes: 5, Dir: t.TempDir(), MTLS: true,
		Datanode: func(i int, dc *datanode.Config) { dc.Store.Encrypt = encrypt },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	cl, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return c, cl
}

// dialAs connects to addr with a certificate of c's CA for role/name.
func dialAs(t *testing.T, c *localcluster.Cluster, addr string, role security.Role, name string) *grpc.ClientConn {
	t.Helper()
	cfg, err := c.TLSFor(security.Identity{Role: role, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func randBytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rand.N(256))
	}
	return b
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func writeFile(t *testing.T, cl *client.Client, path string, data []byte) {
	t.Helper()
	err := cl.WriteFile(ctxT(t), path, data, client.CreateOptions{Replication: 3, BlockSize: blockSize, Perm: 0o644})
	if err != nil {
		t.Fatalf("write %s: %v", path, err)
	}
}

func readBack(t *testing.T, cl *client.Client, path string, want []byte) {
	t.Helper()
	got, err := cl.ReadFile(ctxT(t), path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %s: %d bytes differ from the %d written", path, len(got), len(want))
	}
}

// waitReplicas polls GetBlockLocations until every block of path has n
// live locations, none in avoid.
func waitReplicas(t *testing.T, cl *client.Client, path string, n int, avoid ...string) *api.GetBlockLocationsResponse {
	return waitBlockReplicas(t, cl, path, n, 0, avoid...)
}

// waitBlockReplicas is waitReplicas with avoid applying only to block id
// (0: every block).
func waitBlockReplicas(t *testing.T, cl *client.Client, path string, n int, id uint64, avoid ...string) *api.GetBlockLocationsResponse {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		locs, err := cl.GetBlockLocations(ctxT(t), path, 0, 0)
		if err == nil && allHave(locs, n, id, avoid) {
			return locs
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: blocks did not reach %d live replicas avoiding %v (last: %v, %v)", path, n, avoid, describe(locs), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func allHave(locs *api.GetBlockLocationsResponse, n int, id uint64, avoid []string) bool {
	for _, lb := range locs.Blocks {
		if len(lb.Locations) != n {
			return false
		}
		for _, l := range lb.Locations {
			if l.State != "live" {
				return false
			}
			if id != 0 && lb.Block.Id != id {
				continue
			}
			for _, a := range avoid {
				if l.Id == a {
					return false
				}
			}
		}
	}
	return true
}

func describe(locs *api.GetBlockLocationsResponse) string {
	if locs == nil {
		return "none"
	}
	s := ""
	for _, lb := range locs.Blocks {
		s += fmt.Sprintf("[%d:", lb.Block.Id)
		for _, l := range lb.Locations {
			s += " " + l.Id
		}
		s += "]"
	}
	return s
}

func TestWriteReadReplicated(t *testing.T) {
	for _, encrypt := range []bool{false, true} {
		t.Run(fmt.Sprintf("encrypt=%v", encrypt), func(t *testing.T) {
			c, cl := startCluster(t, encrypt)
			files := []struct {
				name string
				size int
			}{
				{"empty", 0}, {"one-byte", 1}, {"one-block", blockSize}, {"partial", 700},
				{"several", 5*blockSize + 123},
			}
			for _, f := range files {
				data := randBytes(f.size)
				p := "/data/" + f.name
				writeFile(t, cl, p, data)
				readBack(t, cl, p, data)
				locs := waitReplicas(t, cl, p, 3)
				if want := (f.size + blockSize - 1) / blockSize; len(locs.Blocks) != want {
					t.Fatalf("%s: %d blocks, want %d", p, len(locs.Blocks), want)
				}
			}
			if encrypt {
				// No block's plaintext is on disk.
				data := randBytes(blockSize)
				writeFile(t, cl, "/data/secret", data)
				for _, d := range c.Datanodes() {
					for _, b := range d.Store().Blocks() {
						raw, err := os.ReadFile(b.Container + ".data")
						if err != nil {
							t.Fatal(err)
						}
						if bytes.Contains(raw, data[:64]) {
							t.Fatalf("plaintext found in %s", b.Container)
						}
					}
				}
			}
		})
	}
}

func TestDatanodeFailures(t *testing.T) {
	c, cl := startCluster(t, false)
	data := randBytes(4*blockSize + 10)
	writeFile(t, cl, "/f", data)
	locs := waitReplicas(t, cl, "/f", 3)

	t.Run("corrupt replica", func(t *testing.T) {
		lb := locs.Blocks[1]
		victim := lb.Locations[0]
		var dn *datanode.Datanode
		for _, d := range c.Datanodes() {
			if d.ID() == victim.Id {
				dn = d
			}
		}
		info, ok := dn.Store().Stat(lb.Block.Id)
		if !ok {
			t.Fatal("victim does not hold the block")
		}
		raw, err := os.ReadFile(info.Container + ".data")
		if err != nil {
			t.Fatal(err)
		}
		want := data[blockSize : 2*blockSize]
		i := bytes.Index(raw, want)
		if i < 0 {
			t.Fatal("block bytes not found in the data file")
		}
		f, err := os.OpenFile(info.Container+".data", os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteAt([]byte{raw[i+5] ^ 0xff, raw[i+6] ^ 0xff}, int64(i+5))
		f.Close()

		// The corrupt replica answers DataLoss (and reports itself) ...
		conn := dialAs(t, c, dn.Addr(), security.RoleUser, "root")
		s, err := api.NewDataServiceClient(conn).ReadBlock(ctxT(t), &api.ReadBlockRequest{Block: lb.Block, InodeId: locs.InodeId, Token: locs.Token})
		if err == nil {
			_, err = s.Recv()
		}
		if status.Code(err) != codes.DataLoss {
			t.Fatalf("read of the corrupt replica: %v, want DataLoss", err)
		}
		// ... reads still succeed from the others ...
		readBack(t, cl, "/f", data)
		// ... and the namenode restores 3 good replicas without it, and
		// has the corrupt one deleted.
		waitBlockReplicas(t, cl, "/f", 3, lb.Block.Id, victim.Id)
		deadline := time.Now().Add(20 * time.Second)
		for {
			if _, still := dn.Store().Stat(lb.Block.Id); !still {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("corrupt replica was not deleted")
			}
			time.Sleep(50 * time.Millisecond)
		}
		readBack(t, cl, "/f", data)
	})

	t.Run("restart keeps id and blocks", func(t *testing.T) {
		i := 2
		id := c.Datanode(i).ID()
		before := c.Datanode(i).Store().Blocks()
		if err := c.StopDatanode(i); err != nil {
			t.Fatal(err)
		}
		if err := c.RestartDatanode(ctxT(t), i); err != nil {
			t.Fatal(err)
		}
		d := c.Datanode(i)
		if d.ID() != id {
			t.Fatalf("id changed: %s -> %s", id, d.ID())
		}
		after := d.Store().Blocks()
		if len(after) != len(before) {
			t.Fatalf("%d blocks before restart, %d after", len(before), len(after))
		}
		if err := c.WaitDatanodes(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		// Every namenode learns the replicas again from the full report.
		for _, b := range after {
			for _, nn := range c.Namenodes() {
				found := false
				deadline := time.Now().Add(10 * time.Second)
				for !found && time.Now().Before(deadline) {
					for _, l := range nn.Blocks().Locations(b.ID) {
						found = found || l.ID == id
					}
					if !found {
						time.Sleep(20 * time.Millisecond)
					}
				}
				if !found {
					if _, still := d.Store().Stat(b.ID); still {
						t.Fatalf("namenode %s does not list %s for block %d", nn.ID(), id, b.ID)
					}
				}
			}
		}
		readBack(t, cl, "/f", data)
	})

	t.Run("lose a datanode", func(t *testing.T) {
		locs := waitReplicas(t, cl, "/f", 3)
		victim := locs.Blocks[0].Locations[0].Id
		idx := -1
		for i := range 5 {
			if c.DatanodeID(i) == victim {
				idx = i
			}
		}
		if err := c.StopDatanode(idx); err != nil {
			t.Fatal(err)
		}
		// Reads fail over at once (the namenodes still list the victim).
		readBack(t, cl, "/f", data)
		waitReplicas(t, cl, "/f", 3, victim)
		readBack(t, cl, "/f", data)
	})
}

// startWith starts a cluster of cfg and a superuser client of it, both
// closed when t ends.
func startWith(t *testing.T, ctx context.Context, cfg localcluster.Config) (*localcluster.Cluster, *client.Client) {
	t.Helper()
	c, err := localcluster.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	cl, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return c, cl
}

// TestBlockSizeBound: an in-process cluster refuses, at Create, a block
// size its datanodes' containers could not hold, rather than failing the
// write at its first block.
func TestBlockSizeBound(t *testing.T) {
	ctx := ctxT(t)
	_, cl := startWith(t, ctx, localcluster.Config{Namenodes: 1, Datanodes: 1, Dir: t.TempDir()})
	err := cl.WriteFile(ctx, "/big", []byte("x"), client.CreateOptions{Replication: 1, BlockSize: 2 * localcluster.MaxBlockSize})
	if errs.KindOf(err) != errs.Invalid {
		t.Fatalf("a block size of %d: %v, want Invalid", 2*localcluster.MaxBlockSize, err)
	}
	if err := cl.WriteFile(ctx, "/ok", []byte("x"), client.CreateOptions{Replication: 1, BlockSize: localcluster.MaxBlockSize}); err != nil {
		t.Fatal(err)
	}
}
