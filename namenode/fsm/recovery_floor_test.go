package fsm

import (
	"testing"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
)

// Issue 21, finding 2 (the FSM's half): a primary that commits the last
// block below the length the writer made durable with hflush (Fsync) is
// refused, whether it cuts the block to 0 or asks to drop it, and the file,
// its length and the recovery stay as they were; a commit at or above the
// floor closes the file.
func TestRecoveryCommitNeverBelowFsyncedLength(t *testing.T) {
	f, alice, ino, blk := leaseFixture(t) // 100 bytes hflushed
	r := permApply(t, f, CmdRecoverLease, &api.RecoverLeaseCommand{Caller: alice, Path: "/pub/a", NowUnixMs: 1100, SoftLimitMs: 500, Primary: "d1", Replicas: []string{"d1", "d2", "d3"}})
	if r.ErrorMsg != "" || r.RecoveryId == 0 {
		t.Fatalf("recover: %+v", r)
	}
	before := f.Hash()
	for _, c := range []*api.CommitBlockSyncCommand{
		{DatanodeId: "d1", InodeId: ino, Block: blk, RecoveryId: r.RecoveryId, NewLength: 0},
		{DatanodeId: "d1", InodeId: ino, Block: blk, RecoveryId: r.RecoveryId, NewLength: 99},
		{DatanodeId: "d1", InodeId: ino, Block: blk, RecoveryId: r.RecoveryId, DeleteBlock: true},
	} {
		if res := permApply(t, f, CmdCommitBlockSync, c); permKind(res) != errs.Precondition {
			t.Fatalf("commit %d bytes (delete %v): %v %q, want Precondition", c.NewLength, c.DeleteBlock, permKind(res), res.ErrorMsg)
		}
		if f.Hash() != before {
			t.Fatal("a refused commit changed the state")
		}
	}
	ok := &api.CommitBlockSyncCommand{DatanodeId: "d1", InodeId: ino, Block: blk, RecoveryId: r.RecoveryId, NewLength: 100}
	if res := permApply(t, f, CmdCommitBlockSync, ok); res.ErrorMsg != "" || res.Status.UnderConstruction || res.Status.Length != 100 {
		t.Fatalf("commit at the floor: %+v", res)
	}
}
