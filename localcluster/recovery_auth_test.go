package localcluster_test

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/security"
)

// TestRecoveryRefusals: the block-recovery endpoints are closed to users,
// to datanodes without a recovery token naming them, and a datanode may
// report a recovery only as itself and only as its primary.
func TestRecoveryRefusals(t *testing.T) {
	c, cl := startCluster(t, false)
	data := randBytes(blockSize)
	writeFile(t, cl, "/r", data)
	locs := waitReplicas(t, cl, "/r", 3)
	lb := locs.Blocks[0]
	target := lb.Locations[0]
	// A user's genuine write token for a block of a file being written.
	leader := c.NamenodeAddrs()[c.Leader()]
	nn := api.NewClientServiceClient(dialAs(t, c, leader, security.RoleUser, "root"))
	cr, err := nn.Create(ctxT(t), &api.CreateRequest{Path: "/open", Replication: 3, BlockSize: blockSize})
	if err != nil {
		t.Fatal(err)
	}
	ab, err := nn.AddBlock(ctxT(t), &api.AddBlockRequest{Path: "/open", InodeId: cr.Status.InodeId})
	if err != nil {
		t.Fatal(err)
	}
	other := c.DatanodeID(0)
	if other == target.Id {
		other = c.DatanodeID(1)
	}
	for _, tc := range []struct {
		name       string
		role       security.Role
		caller     string
		inode, gen uint64
		block      *api.Block
		token      []byte
		code       codes.Code
		msg        string
	}{
		{"a user", security.RoleUser, "root", locs.InodeId, lb.Block.GenStamp + 1, lb.Block, locs.Token, codes.PermissionDenied, ""},
		{"a datanode without a token", security.RoleDatanode, other, locs.InodeId, lb.Block.GenStamp + 1, lb.Block, nil, codes.Unauthenticated, "missing token"},
		{"a datanode with a read token", security.RoleDatanode, other, locs.InodeId, lb.Block.GenStamp + 1, lb.Block, locs.Token, codes.PermissionDenied, ""},
		{"a datanode with a user's write token", security.RoleDatanode, other, cr.Status.InodeId, ab.Block.Block.GenStamp, ab.Block.Block, ab.Token, codes.PermissionDenied, "recovery token is for"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := api.NewDataServiceClient(dialAs(t, c, target.Addr, tc.role, tc.caller))
			_, err := ds.InitReplicaRecovery(ctxT(t), &api.InitReplicaRecoveryRequest{Block: tc.block, InodeId: tc.inode, RecoveryId: tc.gen, Token: tc.token})
			if status.Code(err) != tc.code || !strings.Contains(status.Convert(err).Message(), tc.msg) {
				t.Fatalf("InitReplicaRecovery: got %v, want %v mentioning %q", err, tc.code, tc.msg)
			}
			_, err = ds.UpdateReplicaUnderRecovery(ctxT(t), &api.UpdateReplicaUnderRecoveryRequest{Block: tc.block, InodeId: tc.inode, RecoveryId: tc.gen, NewLength: 1, Token: tc.token})
			if status.Code(err) != tc.code || !strings.Contains(status.Convert(err).Message(), tc.msg) {
				t.Fatalf("UpdateReplicaUnderRecovery: got %v, want %v mentioning %q", err, tc.code, tc.msg)
			}
		})
	}
	// The replica is untouched.
	readBack(t, cl, "/r", data)
	dp := api.NewDatanodeProtocolClient(dialAs(t, c, leader, security.RoleDatanode, other))
	for _, tc := range []struct {
		name string
		req  *api.CommitBlockSynchronizationRequest
		code codes.Code
	}{
		{"as another datanode", &api.CommitBlockSynchronizationRequest{DatanodeId: target.Id, InodeId: cr.Status.InodeId, Block: ab.Block.Block, RecoveryId: 99999}, codes.PermissionDenied},
		{"with no recovery in progress", &api.CommitBlockSynchronizationRequest{DatanodeId: other, InodeId: cr.Status.InodeId, Block: ab.Block.Block, RecoveryId: 99999}, codes.FailedPrecondition},
	} {
		t.Run("commit "+tc.name, func(t *testing.T) {
			if _, err := dp.CommitBlockSynchronization(ctxT(t), tc.req); status.Code(err) != tc.code {
				t.Fatalf("got %v, want %v", err, tc.code)
			}
		})
	}
	if st, err := cl.Stat(ctxT(t), "/open"); err != nil || !st.UnderConstruction {
		t.Fatalf("the open file after refused commits: %+v %v", st, err)
	}
}

// TestRecoverAppendNeverWritten: an appender that reopened a file's short
// last block (new generation stamp) and died before its pipeline touched
// the replicas loses nothing: recovery finalizes the old replicas at the
// committed length under a newer stamp.
func TestRecoverAppendNeverWritten(t *testing.T) {
	c, cl := startCluster(t, false)
	data := randBytes(blockSize + 300)
	writeFile(t, cl, "/ap", data)
	waitReplicas(t, cl, "/ap", 3)
	leader := c.NamenodeAddrs()[c.Leader()]
	nn := api.NewClientServiceClient(dialAs(t, c, leader, security.RoleUser, "root"))
	r, err := nn.Append(ctxT(t), &api.AppendRequest{Path: "/ap"})
	if err != nil || r.LastBlock == nil {
		t.Fatalf("append: %v %v", r, err)
	}
	// The appender is gone; the superuser recovers the file at once.
	if _, err := cl.RecoverLease(ctxT(t), "/ap"); err != nil {
		t.Fatal(err)
	}
	if err := cl.WaitClosed(ctxT(t), "/ap"); err != nil {
		t.Fatal(err)
	}
	readBack(t, cl, "/ap", data)
	locs := waitReplicas(t, cl, "/ap", 3)
	if last := locs.Blocks[len(locs.Blocks)-1].Block; last.GenStamp <= r.LastBlock.Block.GenStamp || last.Length != 300 {
		t.Fatalf("recovered last block %v; reopened as %v", last, r.LastBlock)
	}
}
