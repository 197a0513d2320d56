package localcluster_test

import (
	"context"
	"io"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/internal/base/chunks"
	"github.com/blockfs/blockfs/localcluster"
	"github.com/blockfs/blockfs/security"
)

// readDirect reads a whole block from one datanode as user, bypassing the
// client.
func readDirect(t *testing.T, c *localcluster.Cluster, user, addr string, req *api.ReadBlockRequest) error {
	t.Helper()
	conn := dialAs(t, c, addr, security.RoleUser, user)
	s, err := api.NewDataServiceClient(conn).ReadBlock(ctxT(t), req)
	if err != nil {
		return err
	}
	for {
		if _, err := s.Recv(); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}

// TestDatanodeChecksTokens: a datanode serves a block only for a token that
// verifies and covers the block's own inode, and names the reason when it
// refuses. A token for another file is refused even if the caller claims
// that file's inode.
func TestDatanodeChecksTokens(t *testing.T) {
	c, cl := startCluster(t, false)
	writeFile(t, cl, "/mine", randBytes(blockSize))
	writeFile(t, cl, "/other", randBytes(blockSize))
	// A write returns once the pipeline has the block; the namenode learns
	// of the replicas from the datanodes' reports a moment later.
	mine := waitReplicas(t, cl, "/mine", 3)
	other := waitReplicas(t, cl, "/other", 3)
	lb := mine.Blocks[0]
	addr := lb.Locations[0].Addr
	// Change one character of the signature to another base64url one, so
	// the token still parses and only the signature is wrong.
	tampered := []byte(string(mine.Token))
	if i := len(tampered) - 10; tampered[i] == 'A' {
		tampered[i] = 'B'
	} else {
		tampered[i] = 'A'
	}
	for _, tc := range []struct {
		name  string
		inode uint64
		token []byte
		code  codes.Code
		msg   string
	}{
		{"valid", mine.InodeId, mine.Token, codes.OK, ""},
		{"no token", mine.InodeId, nil, codes.Unauthenticated, "missing token"},
		{"garbage", mine.InodeId, []byte("not.a.token"), codes.Unauthenticated, "malformed"},
		{"bad signature", mine.InodeId, tampered, codes.Unauthenticated, "signature"},
		{"another file's token", other.InodeId, other.Token, codes.PermissionDenied, "wrong inode"},
		{"another file's token, claiming this inode", mine.InodeId, other.Token, codes.PermissionDenied, "wrong inode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := readDirect(t, c, "root", addr, &api.ReadBlockRequest{Block: lb.Block, InodeId: tc.inode, Token: tc.token})
			if status.Code(err) != tc.code || !strings.Contains(status.Convert(err).Message(), tc.msg) {
				t.Fatalf("got %v, want %v mentioning %q", err, tc.code, tc.msg)
			}
		})
	}
	// A read token cannot write.
	conn := dialAs(t, c, addr, security.RoleUser, "root")
	ws, err := api.NewDataServiceClient(conn).WriteBlock(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	ws.Send(&api.WriteBlockRequest{Msg: &api.WriteBlockRequest_Header{Header: &api.WriteBlockHeader{
		Block: &api.Block{Id: lb.Block.Id + 1000, GenStamp: 1, Length: 1}, InodeId: mine.InodeId, Token: mine.Token}}})
	ws.Send(&api.WriteBlockRequest{Msg: &api.WriteBlockRequest_Packet{Packet: &api.WritePacket{Data: []byte{1}, Crcs: []uint32{chunks.CRC([]byte{1})}, Last: true}}})
	ws.CloseSend()
	if _, err := ws.Recv(); status.Code(err) != codes.PermissionDenied && status.Code(err) != codes.Unauthenticated {
		t.Fatalf("write with a read token: %v", err)
	}
}

// TestPrivateFileNotReadableByOthers: bob can neither get alice's 0600
// file's locations from the namenode nor read it straight from a datanode
// with a token for his own file.
func TestPrivateFileNotReadableByOthers(t *testing.T) {
	c, root := startCluster(t, false)
	ctx := ctxT(t)
	if err := root.Mkdirs(ctx, "/home/alice", 0o755, true); err != nil {
		t.Fatal(err)
	}
	if err := root.Mkdirs(ctx, "/home/bob", 0o755, true); err != nil {
		t.Fatal(err)
	}
	if err := root.SetOwner(ctx, "/home/alice", "alice", ""); err != nil {
		t.Fatal(err)
	}
	if err := root.SetOwner(ctx, "/home/bob", "bob", ""); err != nil {
		t.Fatal(err)
	}
	as := func(user string) *client.Client {
		cl, err := c.ClientAs(user)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cl.Close() })
		return cl
	}
	alice, bob := as("alice"), as("bob")
	secret := randBytes(blockSize)
	if err := alice.WriteFile(ctx, "/home/alice/secret", secret, client.CreateOptions{Perm: 0o600}); err != nil {
		t.Fatal(err)
	}
	readBack(t, alice, "/home/alice/secret", secret)
	if _, err := bob.ReadFile(ctx, "/home/alice/secret"); client.Code(err) != codes.PermissionDenied {
		t.Fatalf("bob reading alice's 0600 file: %v", err)
	}
	writeFile(t, bob, "/home/bob/own", randBytes(10))
	own, err := bob.GetBlockLocations(ctx, "/home/bob/own", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := alice.GetBlockLocations(ctx, "/home/alice/secret", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	lb := theirs.Blocks[0]
	err = readDirect(t, c, "bob", lb.Locations[0].Addr, &api.ReadBlockRequest{Block: lb.Block, InodeId: theirs.InodeId, Token: own.Token})
	if status.Code(err) != codes.PermissionDenied {
		t.Fatalf("bob reading alice's block from a datanode with his own token: %v", err)
	}
}

// TestReadAfterLeaderChange: after the leader stops, the new leader's
// tokens are accepted by every datanode (HDFS-17383).
func TestReadAfterLeaderChange(t *testing.T) {
	c, cl := startCluster(t, false)
	data := randBytes(3*blockSize + 7)
	writeFile(t, cl, "/f", data)
	l := c.Leader()
	if err := c.StopNamenode(l); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitLeader(context.Background()); err != nil {
		t.Fatal(err)
	}
	readBack(t, cl, "/f", data)
	writeFile(t, cl, "/g", data)
	readBack(t, cl, "/g", data)
}
