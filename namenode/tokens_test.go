package namenode_test

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/namenode"
	"github.com/blockfs/blockfs/security"
)

// makeFile creates path with n complete blocks (placed on the registered
// fake datanodes) through node and returns its inode id.
func (x *tc) makeFile(node int, path string, n int) uint64 {
	x.t.Helper()
	c := x.client(node)
	cr, err := c.Create(x.root(), &api.CreateRequest{Path: path, Replication: 3, BlockSize: 1024, CreateParent: true})
	if err != nil {
		x.t.Fatal(err)
	}
	var bs []*api.Block
	var prev *api.Block
	for range n {
		r, err := c.AddBlock(x.root(), &api.AddBlockRequest{Path: path, InodeId: cr.Status.InodeId, Previous: prev})
		if err != nil {
			x.t.Fatal(err)
		}
		if len(r.Token) == 0 {
			x.t.Fatal("AddBlock returned no write token")
		}
		prev = r.Block.Block
		prev.Length = 1024
		bs = append(bs, prev)
	}
	if _, err := c.Complete(x.root(), &api.CompleteRequest{Path: path, InodeId: cr.Status.InodeId, Blocks: bs}); err != nil {
		x.t.Fatal(err)
	}
	return cr.Status.InodeId
}

// verifier returns a datanode-style verifier over the keys node publishes.
func (x *tc) verifier(node int) *security.Verifier {
	x.t.Helper()
	resp, err := api.NewDatanodeProtocolClient(x.conns[node]).GetKeys(asDatanode(x.t.Context(), "dn0"), &api.GetKeysRequest{})
	if err != nil {
		x.t.Fatal(err)
	}
	cfg := security.DefaultConfig()
	ks := security.NewKeySet(cfg.TokenLifetime, cfg.ClockSkew)
	for _, b := range resp.Keys {
		var pk security.PublicKey
		if err := pk.UnmarshalBinary(b); err != nil {
			x.t.Fatal(err)
		}
		if err := ks.Add(pk); err != nil {
			x.t.Fatal(err)
		}
	}
	v, err := security.NewVerifier(cfg, ks, nil)
	if err != nil {
		x.t.Fatal(err)
	}
	return v
}

// TestTokenModes: per-block puts a token on every block, per-request and
// cached one token at the top whose size does not grow with the block
// count; cached hands out the same bytes again. Every token verifies with
// the published keys on every node and only for its own inode.
func TestTokenModes(t *testing.T) {
	for _, mode := range []security.Mode{security.PerBlock, security.PerRequest, security.Cached} {
		t.Run(mode.String(), func(t *testing.T) {
			x := startCluster(t, 3, func(i int, c *namenode.Config) { c.Tokens.Mode = mode })
			x.registerDatanodes(3)
			l := x.leader()
			small := x.makeFile(l, "/t/one", 1)
			big := x.makeFile(l, "/t/ten", 10)
			x.converge()
			for node := range x.conns {
				v := x.verifier(node)
				get := func(p string) *api.GetBlockLocationsResponse {
					r, err := x.client(node).GetBlockLocations(x.root(), &api.GetBlockLocationsRequest{Path: p})
					if err == nil {
						err = client.ExpandLocations(r)
					}
					if err != nil {
						t.Fatal(err)
					}
					return r
				}
				one, ten := get("/t/one"), get("/t/ten")
				st, err := x.client(node).ClusterStatus(x.root(), &api.ClusterStatusRequest{})
				if err != nil || st.TokenMode != mode.String() {
					t.Fatalf("cluster status token mode %q (%v), want %s", st.GetTokenMode(), err, mode)
				}
				switch mode {
				case security.PerBlock:
					if len(ten.Token) != 0 {
						t.Fatal("per-block response carries a file token")
					}
					for _, lb := range ten.Blocks {
						if _, err := v.Verify(lb.Token, security.Request{Inode: big, BlockID: lb.Block.Id, GenStamp: lb.Block.GenStamp, Access: security.Read}); err != nil {
							t.Fatalf("node %d block token: %v", node, err)
						}
					}
				default:
					for _, lb := range ten.Blocks {
						if len(lb.Token) != 0 {
							t.Fatal("per-request response repeats a token per block")
						}
					}
					if len(one.Token) != len(ten.Token) {
						t.Fatalf("token grew with the block count: %d vs %d bytes", len(one.Token), len(ten.Token))
					}
					if _, err := v.Verify(ten.Token, security.Request{Inode: big, Access: security.Read}); err != nil {
						t.Fatalf("node %d file token: %v", node, err)
					}
					_, err := v.Verify(ten.Token, security.Request{Inode: small, Access: security.Read})
					if errs.KindOf(err) != errs.Permission {
						t.Fatalf("token for another inode: %v, want permission denied", err)
					}
					_, err = v.Verify(ten.Token, security.Request{Inode: big, BlockID: 1, Access: security.Write})
					if errs.KindOf(err) != errs.Permission {
						t.Fatalf("read token used to write: %v, want permission denied", err)
					}
					if mode == security.Cached {
						if again := get("/t/ten"); string(again.Token) != string(ten.Token) {
							t.Fatal("cached mode signed a new token for the same user and inode")
						}
					}
				}
			}
		})
	}
}

// TestKeysSurviveLeaderChange: tokens signed before a key rotation and a
// leader change still verify against the key set every surviving namenode
// publishes, and so do tokens the new leader signs (HDFS-17383).
func TestKeysSurviveLeaderChange(t *testing.T) {
	x := startCluster(t, 3, func(i int, c *namenode.Config) {
		c.Tokens.KeyRotation = 2 * time.Second
		c.WorkInterval = 50 * time.Millisecond
	})
	x.registerDatanodes(3)
	l := x.leader()
	inode := x.makeFile(l, "/k/f", 2)
	x.converge()
	old, err := x.client(l).GetBlockLocations(x.root(), &api.GetBlockLocationsRequest{Path: "/k/f"})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2500 * time.Millisecond) // at least one rotation on every node
	if err := x.c.StopNamenode(l); err != nil {
		t.Fatal(err)
	}
	nl := x.leader()
	x.converge()
	for node := range x.conns {
		if x.c.Namenode(node) == nil {
			continue
		}
		v := x.verifier(node)
		if _, err := v.Verify(old.Token, security.Request{Inode: inode, Access: security.Read}); err != nil {
			t.Fatalf("node %d no longer accepts a token signed before the rotation: %v", node, err)
		}
		// A node whose key ran out while no leader could publish its
		// next one answers Unavailable until it has (a loaded machine
		// can stretch the election past a 2 s rotation's slack): retry,
		// as a client does.
		var fresh *api.GetBlockLocationsResponse
		deadline := time.Now().Add(10 * time.Second)
		for {
			fresh, err = x.client(node).GetBlockLocations(x.root(), &api.GetBlockLocationsRequest{Path: "/k/f"})
			if status.Code(err) != codes.Unavailable || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := x.verifier(nl).Verify(fresh.Token, security.Request{Inode: inode, Access: security.Read}); err != nil {
			t.Fatalf("token from node %d after the leader change: %v", node, err)
		}
	}
}

// TestOtherUsersPrivateFile: a user cannot get the block locations (and so
// no token) of another user's 0600 file; the owner can.
func TestOtherUsersPrivateFile(t *testing.T) {
	x := startCluster(t, 1, nil)
	x.registerDatanodes(3)
	c := x.client(0)
	if _, err := c.Mkdirs(x.root(), &api.MkdirsRequest{Path: "/home/alice", Parents: true, Mode: 0o755}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SetOwner(x.root(), &api.SetOwnerRequest{Path: "/home/alice", Owner: "alice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(x.as("alice"), &api.CreateRequest{Path: "/home/alice/secret", Mode: 0o600}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		user string
		code codes.Code
	}{{"alice", codes.OK}, {"bob", codes.PermissionDenied}, {"root", codes.OK}} {
		_, err := c.GetBlockLocations(x.as(tc.user), &api.GetBlockLocationsRequest{Path: "/home/alice/secret"})
		wantCode(t, err, tc.code, "")
	}
	_, err := c.SetPermission(x.as("bob"), &api.SetPermissionRequest{Path: "/home/alice/secret", Mode: 0o644})
	wantCode(t, err, codes.PermissionDenied, "")
	_, err = c.SetOwner(x.as("alice"), &api.SetOwnerRequest{Path: "/home/alice/secret", Owner: "bob"})
	wantCode(t, err, codes.PermissionDenied, "superuser")
	if _, err := c.SetPermission(x.as("alice"), &api.SetPermissionRequest{Path: "/home/alice/secret", Mode: 0o644}); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetBlockLocations(x.as("bob"), &api.GetBlockLocationsRequest{Path: "/home/alice/secret"})
	wantCode(t, err, codes.OK, "")
}

// BenchmarkGetBlockLocationsTokens runs GetBlockLocations in-process (no
// network) on files of 1, 10, 100 and 1000 blocks in each token mode.
func BenchmarkGetBlockLocationsTokens(b *testing.B) {
	for _, mode := range []security.Mode{security.PerBlock, security.PerRequest, security.Cached} {
		b.Run("mode="+mode.String(), func(b *testing.B) {
			x := startCluster(b, 1, func(i int, c *namenode.Config) {
				c.Tokens.Mode = mode
				c.Logger = quietLogger()
			})
			x.registerDatanodes(5)
			for _, n := range []int{1, 10, 100, 1000} {
				x.makeFile(0, fmt.Sprintf("/b/%d", n), n)
			}
			srv := x.c.Namenode(0).ClientServer()
			ctx := incomingAs("root")
			for _, n := range []int{1, 10, 100, 1000} {
				b.Run(fmt.Sprintf("blocks=%d", n), func(b *testing.B) {
					req := &api.GetBlockLocationsRequest{Path: fmt.Sprintf("/b/%d", n)}
					for b.Loop() {
						if _, err := srv.GetBlockLocations(ctx, req); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}
