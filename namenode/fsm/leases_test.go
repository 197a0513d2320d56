package fsm

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
)

// leaseFixture: /pub (0777) with /pub/a written by alice (client a1),
// holding one block with 100 hflushed bytes, and /pub/done, closed.
func leaseFixture(t *testing.T) (f *FSM, alice *api.Caller, ino uint64, blk *api.Block) {
	t.Helper()
	f = New(Config{Superuser: "root", Supergroup: "supergroup"})
	alice = &api.Caller{User: "alice", ClientId: "a1"}
	must := func(r *api.CommandResult) *api.CommandResult {
		t.Helper()
		if r.ErrorMsg != "" {
			t.Fatal(r.ErrorMsg)
		}
		return r
	}
	must(permApply(t, f, CmdMkdirs, &api.MkdirsCommand{Path: "/pub", Perm: 0o777}))
	r := must(permApply(t, f, CmdCreate, &api.CreateCommand{Caller: alice, Path: "/pub/a", Perm: 0o666, Replication: 3, BlockSize: 1024, MtimeUnixMs: 1000, SoftLimitMs: 500}))
	ino = r.Status.InodeId
	blk = must(permApply(t, f, CmdAddBlock, &api.AddBlockCommand{Caller: alice, Path: "/pub/a", InodeId: ino, Targets: []string{"d1", "d2", "d3"}})).Block
	blk.Length = 100
	must(permApply(t, f, CmdFsync, &api.FsyncCommand{Caller: alice, Path: "/pub/a", InodeId: ino, Block: blk}))
	d := must(permApply(t, f, CmdCreate, &api.CreateCommand{Caller: alice, Path: "/pub/done", Perm: 0o666, Replication: 1, BlockSize: 1024, MtimeUnixMs: 1000}))
	must(permApply(t, f, CmdComplete, &api.CompleteCommand{Caller: alice, Path: "/pub/done", InodeId: d.Status.InodeId}))
	return f, alice, ino, blk
}

// TestLeaseRefusals: each wrong lease call gets its HDFS name, the right
// kind, and changes nothing (the state hash is the same after).
func TestLeaseRefusals(t *testing.T) {
	f, alice, ino, blk := leaseFixture(t)
	bob := &api.Caller{User: "bob", ClientId: "b1"}
	alice2 := &api.Caller{User: "alice", ClientId: "a2"}
	for _, c := range []struct {
		name string
		typ  CmdType
		msg  protoMessage
		kind errs.Kind
		text string
	}{
		{"renew a lease not held", CmdRenewLease, &api.RenewLeaseCommand{Caller: bob, NowUnixMs: 1100}, errs.Precondition, "LeaseExpired"},
		{"create over a file another client writes", CmdCreate, &api.CreateCommand{Caller: bob, Path: "/pub/a", Overwrite: true, Perm: 0o644, Replication: 1, BlockSize: 1024, MtimeUnixMs: 1100, SoftLimitMs: 500}, errs.Precondition, "AlreadyBeingCreated"},
		{"append to a file another client writes", CmdAppend, &api.AppendCommand{Caller: alice2, Path: "/pub/a", MtimeUnixMs: 1100, SoftLimitMs: 500}, errs.Precondition, "AlreadyBeingCreated"},
		{"append to a directory", CmdAppend, &api.AppendCommand{Caller: alice, Path: "/pub", MtimeUnixMs: 1100}, errs.IsDir, "directory"},
		{"recover before the soft limit", CmdRecoverLease, &api.RecoverLeaseCommand{Caller: bob, Path: "/pub/a", NowUnixMs: 1100, SoftLimitMs: 500, Primary: "d1", Replicas: []string{"d1"}}, errs.Precondition, "AlreadyBeingCreated"},
		{"recover a closed file", CmdRecoverLease, &api.RecoverLeaseCommand{Caller: alice, Path: "/pub/done", NowUnixMs: 1100, SoftLimitMs: 500}, errs.Precondition, "not under construction"},
		{"fsync by another client", CmdFsync, &api.FsyncCommand{Caller: alice2, Path: "/pub/a", InodeId: ino, Block: blk}, errs.Permission, "not the writer"},
		{"fsync shrinking the block", CmdFsync, &api.FsyncCommand{Caller: alice, Path: "/pub/a", InodeId: ino, Block: &api.Block{Id: blk.Id, GenStamp: blk.GenStamp, Length: 5000}}, errs.Invalid, "exceeds the block size"},
		{"pipeline stamp for another block", CmdUpdateBlockForPipeline, &api.UpdateBlockForPipelineCommand{Caller: alice, Path: "/pub/a", InodeId: ino, Block: &api.Block{Id: blk.Id + 7, GenStamp: 1}}, errs.Precondition, "not the last block"},
		{"pipeline update to an unallocated stamp", CmdUpdatePipeline, &api.UpdatePipelineCommand{Caller: alice, Path: "/pub/a", InodeId: ino, OldBlock: blk, NewBlock: &api.Block{Id: blk.Id, GenStamp: blk.GenStamp + 100}}, errs.Invalid, "allocated"},
		{"commit of a recovery never started", CmdCommitBlockSync, &api.CommitBlockSyncCommand{DatanodeId: "d1", InodeId: ino, Block: blk, RecoveryId: 9999, NewLength: 100}, errs.Precondition, "no recovery"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := f.st.leases.Hash()
			treeBefore := f.st.tree.Hash()
			r := permApply(t, f, c.typ, c.msg)
			if permKind(r) != c.kind || !strings.Contains(r.ErrorMsg, c.text) {
				t.Fatalf("got %v %q, want %v containing %q", permKind(r), r.ErrorMsg, c.kind, c.text)
			}
			if f.st.leases.Hash() != before || f.st.tree.Hash() != treeBefore {
				t.Fatal("a refused call changed the state")
			}
			// A refusal names no client but the caller's own: another
			// client's id lets whoever reads it speak for that lease
			// (issue 21, finding 7).
			for _, other := range []*api.Caller{alice, bob, alice2} {
				if caller, ok := c.msg.(interface{ GetCaller() *api.Caller }); ok && caller.GetCaller() == other {
					continue
				}
				if strings.Contains(r.ErrorMsg, `"`+other.ClientId+`"`) || strings.Contains(r.ErrorMsg, "client "+other.ClientId) {
					t.Fatalf("the refusal %q names client %s, not the caller's", r.ErrorMsg, other.ClientId)
				}
			}
		})
	}
}

// TestLeaseRecoveryInFSM: recovery by the holder starts at once with a
// new stamp; only its primary may commit it; the commit closes the file
// at the agreed length and drops the lease; a stale commit is refused.
func TestLeaseRecoveryInFSM(t *testing.T) {
	f, alice, ino, blk := leaseFixture(t)
	r := permApply(t, f, CmdRecoverLease, &api.RecoverLeaseCommand{Caller: alice, Path: "/pub/a", NowUnixMs: 1100, SoftLimitMs: 500, Primary: "d2", Replicas: []string{"d1", "d2", "d3"}})
	if r.ErrorMsg != "" || r.RecoveryId <= blk.GenStamp || r.Closed {
		t.Fatalf("recover: %+v", r)
	}
	// While it runs, the writer's calls and a second writer are refused.
	if r2 := permApply(t, f, CmdAppend, &api.AppendCommand{Caller: &api.Caller{User: "bob", ClientId: "b"}, Path: "/pub/a", MtimeUnixMs: 1200, SoftLimitMs: 500}); !strings.Contains(r2.ErrorMsg, "RecoveryInProgress") {
		t.Fatalf("append during recovery: %q", r2.ErrorMsg)
	}
	// The writer's calls are refused while the recovery owns the block.
	for _, c := range []struct {
		typ CmdType
		msg protoMessage
	}{
		{CmdComplete, &api.CompleteCommand{Caller: alice, Path: "/pub/a", InodeId: ino, Blocks: []*api.Block{blk}}},
		{CmdAddBlock, &api.AddBlockCommand{Caller: alice, Path: "/pub/a", InodeId: ino, Previous: blk}},
		{CmdFsync, &api.FsyncCommand{Caller: alice, Path: "/pub/a", InodeId: ino, Block: blk}},
		{CmdUpdateBlockForPipeline, &api.UpdateBlockForPipelineCommand{Caller: alice, Path: "/pub/a", InodeId: ino, Block: blk}},
	} {
		if r := permApply(t, f, c.typ, c.msg); !strings.Contains(r.ErrorMsg, "RecoveryInProgress") {
			t.Fatalf("command %d during recovery: %q", c.typ, r.ErrorMsg)
		}
	}
	commit := &api.CommitBlockSyncCommand{DatanodeId: "d1", InodeId: ino, Block: blk, RecoveryId: r.RecoveryId, NewLength: 150, StoredOn: []string{"d1", "d2"}}
	if c := permApply(t, f, CmdCommitBlockSync, commit); permKind(c) != errs.Permission {
		t.Fatalf("commit by a datanode that is not the primary: %v %q", permKind(c), c.ErrorMsg)
	}
	commit.DatanodeId = "d2"
	if c := permApply(t, f, CmdCommitBlockSync, commit); c.ErrorMsg != "" || c.Status.UnderConstruction || c.Status.Length != 150 {
		t.Fatalf("commit: %+v", c)
	}
	if _, n, _ := f.st.leases.Counts(); n != 0 {
		t.Fatalf("%d files still leased after the commit", n)
	}
	// A repeat of the same commit is success; an older recovery's is refused.
	if c := permApply(t, f, CmdCommitBlockSync, commit); c.ErrorMsg != "" {
		t.Fatalf("repeated commit: %q", c.ErrorMsg)
	}
	commit.RecoveryId--
	if c := permApply(t, f, CmdCommitBlockSync, commit); permKind(c) != errs.Precondition {
		t.Fatalf("stale commit: %v %q", permKind(c), c.ErrorMsg)
	}
	// The writer learns its lease is gone.
	blk.Length = 200
	if c := permApply(t, f, CmdFsync, &api.FsyncCommand{Caller: alice, Path: "/pub/a", InodeId: ino, Block: blk}); !strings.Contains(c.ErrorMsg, "LeaseExpired") {
		t.Fatalf("fsync after recovery: %q", c.ErrorMsg)
	}
}

// TestLeasesSurviveSnapshot: the lease table, with a recovery in progress,
// is restored from a snapshot identically (same hash), and an older
// BFSNAP01 snapshot restores with no leases.
func TestLeasesSurviveSnapshot(t *testing.T) {
	f, _, _, _ := leaseFixture(t)
	permApply(t, f, CmdCreate, &api.CreateCommand{Caller: &api.Caller{User: "bob", ClientId: "b1"}, Path: "/pub/b", Perm: 0o644, Replication: 1, BlockSize: 1024, MtimeUnixMs: 1300})
	if r := permApply(t, f, CmdRecoverLease, &api.RecoverLeaseCommand{Caller: &api.Caller{User: "root"}, Path: "/pub/a", NowUnixMs: 1400, SoftLimitMs: 500, Primary: "d3", Replicas: []string{"d3"}}); r.ErrorMsg != "" {
		t.Fatal(r.ErrorMsg)
	}
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	data := snapshotBytes(t, snap)
	g := New(Config{Superuser: "root", Supergroup: "supergroup"})
	if err := g.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	if g.st.leases.Hash() != f.st.leases.Hash() || leasedFiles(g) != 2 || len(g.st.leases.Recoveries()) != 1 {
		t.Fatalf("restored lease table differs: %d files, %d recoveries", leasedFiles(g), len(g.st.leases.Recoveries()))
	}
	// A truncated snapshot is refused and the node keeps its state.
	h := g.st.leases.Hash()
	cut := len(snapshotMagic) + 8 + 40
	if err := g.Restore(io.NopCloser(bytes.NewReader(data[:cut]))); errs.KindOf(err) != errs.Corrupt {
		t.Fatalf("truncated snapshot: %v", err)
	}
	if g.st.leases.Hash() != h {
		t.Fatal("a refused restore changed the lease table")
	}
}

type protoMessage = interface {
	ProtoReflect() protoreflect.Message
}

func leasedFiles(f *FSM) int {
	_, n, _ := f.st.leases.Counts()
	return n
}

// TestSoftLimitRefusalNotCached: the retry cache keeps a refusal for a
// current lease (a retry hears it again), but not the refusal that
// invites a takeover (SoftLimitPassed): once the takeover closed the
// file, the same call, proposed again, creates.
func TestSoftLimitRefusalNotCached(t *testing.T) {
	f, _, ino, blk := leaseFixture(t)
	bob := &api.Caller{User: "bob", ClientId: "b1", CallId: 7}
	current := &api.CreateCommand{Caller: bob, Path: "/pub/a", Overwrite: true, Perm: 0o644, Replication: 1, BlockSize: 1024, MtimeUnixMs: 1100, SoftLimitMs: 500}
	if r := permApply(t, f, CmdCreate, current); !strings.Contains(r.ErrorMsg, "whose lease is current") {
		t.Fatalf("create within the soft limit: %q", r.ErrorMsg)
	}
	late := &api.CreateCommand{Caller: bob, Path: "/pub/a", Overwrite: true, Perm: 0o644, Replication: 1, BlockSize: 1024, MtimeUnixMs: 5000, SoftLimitMs: 500}
	if r := permApply(t, f, CmdCreate, late); !strings.Contains(r.ErrorMsg, "whose lease is current") {
		t.Fatalf("the same call again: %q, want the cached answer", r.ErrorMsg)
	}
	bob2 := &api.Caller{User: "bob", ClientId: "b1", CallId: 8}
	late.Caller = bob2
	if r := permApply(t, f, CmdCreate, late); !strings.HasSuffix(r.ErrorMsg, SoftLimitPassed) {
		t.Fatalf("create after the soft limit: %q", r.ErrorMsg)
	}
	// The takeover: the file is recovered (here as the system, closed at
	// the length its replicas agree on).
	r := permApply(t, f, CmdRecoverLease, &api.RecoverLeaseCommand{InodeId: ino, System: true, NowUnixMs: 5000, SoftLimitMs: 500, Primary: "d1", Replicas: []string{"d1"}})
	if r.ErrorMsg != "" {
		t.Fatal(r.ErrorMsg)
	}
	if c := permApply(t, f, CmdCommitBlockSync, &api.CommitBlockSyncCommand{DatanodeId: "d1", InodeId: ino, Block: blk, RecoveryId: r.RecoveryId, NewLength: 100, StoredOn: []string{"d1"}}); c.ErrorMsg != "" {
		t.Fatalf("commit: %q", c.ErrorMsg)
	}
	if r := permApply(t, f, CmdCreate, late); r.ErrorMsg != "" {
		t.Fatalf("the same call once the file is closed: %q", r.ErrorMsg)
	}
}
