package fsm

import (
	"strings"
	"testing"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/namespace"
)

func okResult(t *testing.T, r *api.CommandResult) *api.CommandResult {
	t.Helper()
	if r.ErrorMsg != "" {
		t.Fatal(r.ErrorMsg)
	}
	return r
}

// TestFSMXAttrsAndTimes: the commands apply HDFS's rules with the limits
// they carry, a refused one changes nothing, and attributes and times
// survive a snapshot (same hash after the restore).
func TestFSMXAttrsAndTimes(t *testing.T) {
	f, alice, _, _ := leaseFixture(t)
	set := func(c *api.Caller, name string, flags, max uint32) *api.CommandResult {
		return permApply(t, f, CmdSetXAttr, &api.SetXAttrCommand{Caller: c, Path: "/pub/done", Xattr: &api.XAttr{Name: name, Value: []byte("v")},
			Flags: flags, MaxXattrsPerInode: max, MaxXattrSize: 64})
	}
	okResult(t, permApply(t, f, CmdSetPermission, &api.SetPermissionCommand{Caller: alice, Path: "/pub/done", Perm: 0o644}))
	okResult(t, set(alice, "user.a", 1, 2))
	okResult(t, set(alice, "user.b", 3, 2))
	for _, c := range []struct {
		r    func() *api.CommandResult
		kind errs.Kind
		text string
	}{
		{func() *api.CommandResult { return set(alice, "user.c", 3, 2) }, errs.Exhausted, "limit of 2"},
		{func() *api.CommandResult { return set(alice, "trusted.c", 3, 9) }, errs.Permission, "trusted.c"},
		{func() *api.CommandResult { return set(&api.Caller{User: "bob"}, "user.a", 3, 9) }, errs.Permission, "access=-w-"},
		{func() *api.CommandResult {
			return permApply(t, f, CmdRemoveXAttr, &api.RemoveXAttrCommand{Caller: alice, Path: "/pub/done", Name: "user.z"})
		}, errs.NotFound, namespace.MsgXAttrRemoveNotFound},
		{func() *api.CommandResult {
			return permApply(t, f, CmdSetTimes, &api.SetTimesCommand{Caller: &api.Caller{User: "bob"}, Path: "/pub/done", MtimeUnixMs: 1, AtimeUnixMs: 1})
		}, errs.Permission, "access=-w-"},
	} {
		before := liveHash(f)
		r := c.r()
		if permKind(r) != c.kind || !strings.Contains(r.ErrorMsg, c.text) {
			t.Fatalf("got %v %q, want %v %q", permKind(r), r.ErrorMsg, c.kind, c.text)
		}
		if liveHash(f) != before {
			t.Fatal("a refused command changed the tree")
		}
	}
	okResult(t, permApply(t, f, CmdRemoveXAttr, &api.RemoveXAttrCommand{Caller: alice, Path: "/pub/done", Name: "USER.b"}))
	okResult(t, set(&api.Caller{User: "root"}, "trusted.c", 3, 2))
	okResult(t, permApply(t, f, CmdSetTimes, &api.SetTimesCommand{Caller: alice, Path: "/pub/done", MtimeUnixMs: 5, AtimeUnixMs: 7}))

	g := restored(t, f)
	if liveHash(f) != liveHash(g) {
		t.Fatal("restored state differs")
	}
	var xs []*api.XAttr
	g.View(func(r Reader) {
		s, err := r.As(&api.Caller{User: "root"}, "GetXAttrs", "/pub/done")
		if err != nil {
			t.Fatal(err)
		}
		xs, err = s.GetXAttrs(mustParse(t, "/pub/done"), nil)
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := s.Stat(mustParse(t, "/pub/done"))
		if fi.MtimeMs != 5 || fi.AtimeMs != 7 {
			t.Fatalf("times after restore: %d %d", fi.MtimeMs, fi.AtimeMs)
		}
	})
	if len(xs) != 2 || xs[0].Name != "trusted.c" || xs[1].Name != "user.a" {
		t.Fatalf("attributes after restore: %v", xs)
	}
}

func mustParse(t *testing.T, p string) namespace.Path {
	t.Helper()
	pp, err := namespace.ParsePath(p)
	if err != nil {
		t.Fatal(err)
	}
	return pp
}

// TestFSMTruncate: at a boundary the file stays closed and its dropped
// blocks are forgotten; inside a block it reopens for the caller with a
// truncate's recovery, which a restart keeps a truncate's, which only a
// commit at the new length ends, and which survives a snapshot.
func TestFSMTruncate(t *testing.T) {
	ev := &forgetRecorder{}
	f := New(Config{Superuser: "root", Supergroup: "supergroup", Events: ev})
	alice := &api.Caller{User: "alice", ClientId: "a1"}
	okResult(t, permApply(t, f, CmdMkdirs, &api.MkdirsCommand{Path: "/pub", Perm: 0o777}))
	cr := okResult(t, permApply(t, f, CmdCreate, &api.CreateCommand{Caller: alice, Path: "/pub/f", Perm: 0o644, Replication: 3, BlockSize: 1024, MtimeUnixMs: 1000}))
	ino := cr.Status.InodeId
	var blocks []*api.Block
	for i := range 3 {
		var prev *api.Block
		if i > 0 {
			prev = blocks[i-1]
		}
		b := okResult(t, permApply(t, f, CmdAddBlock, &api.AddBlockCommand{Caller: alice, Path: "/pub/f", InodeId: ino, Previous: prev, Targets: []string{"d1", "d2", "d3"}})).Block
		b.Length, b.Crc32C = 1024, new(uint32)
		blocks = append(blocks, b)
	}
	okResult(t, permApply(t, f, CmdComplete, &api.CompleteCommand{Caller: alice, Path: "/pub/f", InodeId: ino, Blocks: blocks}))

	r := okResult(t, permApply(t, f, CmdTruncate, &api.TruncateCommand{Caller: alice, Path: "/pub/f", NewLength: 2048, MtimeUnixMs: 2000}))
	if !r.Closed || r.Status.Length != 2048 || r.Status.UnderConstruction || len(r.Removed) != 1 || r.Removed[0].Id != blocks[2].Id {
		t.Fatalf("truncate at a boundary: %+v", r)
	}
	if !ev.forgot(blocks[2].Id) {
		t.Fatal("the dropped block was not forgotten (its replicas stay)")
	}
	// Inside a block without a primary: refused, nothing changed.
	before := liveHash(f)
	if r := permApply(t, f, CmdTruncate, &api.TruncateCommand{Caller: alice, Path: "/pub/f", NewLength: 1500, MtimeUnixMs: 2100}); permKind(r) != errs.Unavailable || liveHash(f) != before {
		t.Fatalf("in-block truncate without a primary: %v %q", permKind(r), r.ErrorMsg)
	}
	r = okResult(t, permApply(t, f, CmdTruncate, &api.TruncateCommand{Caller: alice, Path: "/pub/f", NewLength: 1500, MtimeUnixMs: 2100, Primary: "d2", Replicas: []string{"d2", "d1"}}))
	if r.Closed || r.RecoveryId == 0 || !r.Status.UnderConstruction || r.Status.Length != 1500 {
		t.Fatalf("truncate inside a block: %+v", r)
	}
	rec, ok := f.st.leases.Recovering(namespace.ID(ino))
	if !ok || !rec.Truncate || rec.Block.Length != 476 || rec.Primary != "d2" {
		t.Fatalf("recovery %+v %v", rec, ok)
	}
	// The leader's restart keeps it a truncate's.
	r2 := okResult(t, permApply(t, f, CmdRecoverLease, &api.RecoverLeaseCommand{InodeId: ino, System: true, NowUnixMs: 9000, Primary: "d1", Replicas: []string{"d2", "d1"}}))
	if rec, _ = f.st.leases.Recovering(namespace.ID(ino)); !rec.Truncate || rec.ID != r2.RecoveryId || rec.Block.Length != 476 {
		t.Fatalf("restarted recovery %+v", rec)
	}
	// It survives a snapshot.
	g := restored(t, f)
	if rr, _ := g.st.leases.Recovering(namespace.ID(ino)); !rr.Truncate {
		t.Fatal("the truncate mark was lost in the snapshot")
	}
	crc := uint32(7)
	commit := &api.CommitBlockSyncCommand{DatanodeId: "d1", InodeId: ino, Block: ToAPIBlock(rec.Block), RecoveryId: rec.ID, NewLength: 1024, Crc32C: &crc, StoredOn: []string{"d1"}}
	if c := permApply(t, f, CmdCommitBlockSync, commit); permKind(c) != errs.Precondition || !strings.Contains(c.ErrorMsg, "truncate's to 476") {
		t.Fatalf("a commit at the old length: %v %q", permKind(c), c.ErrorMsg)
	}
	commit.NewLength = 476
	c := okResult(t, permApply(t, f, CmdCommitBlockSync, commit))
	if c.Status.UnderConstruction || c.Status.Length != 1500 {
		t.Fatalf("after the commit: %+v", c.Status)
	}
	// Refusals.
	for _, bad := range []struct {
		cmd  *api.TruncateCommand
		kind errs.Kind
	}{
		{&api.TruncateCommand{Caller: alice, Path: "/pub/f", NewLength: 1501}, errs.Invalid},
		{&api.TruncateCommand{Caller: alice, Path: "/pub/f", NewLength: -1}, errs.Invalid},
		{&api.TruncateCommand{Caller: alice, Path: "/pub", NewLength: 0}, errs.IsDir},
		{&api.TruncateCommand{Caller: &api.Caller{User: "bob"}, Path: "/pub/f", NewLength: 0}, errs.Permission},
	} {
		before := liveHash(f)
		if r := permApply(t, f, CmdTruncate, bad.cmd); permKind(r) != bad.kind || liveHash(f) != before {
			t.Fatalf("%+v: %v %q, want %v", bad.cmd, permKind(r), r.ErrorMsg, bad.kind)
		}
	}
}

// forgetRecorder is a BlockEvents that remembers the blocks forgotten.
type forgetRecorder struct{ gone []uint64 }

func (r *forgetRecorder) Expect(namespace.Block, namespace.ID, uint32, bool) {}
func (r *forgetRecorder) Forget(bs []namespace.Block) {
	for _, b := range bs {
		r.gone = append(r.gone, b.ID)
	}
}
func (r *forgetRecorder) forgot(id uint64) bool {
	for _, g := range r.gone {
		if g == id {
			return true
		}
	}
	return false
}

// TestFSMCopyOnTruncate: a truncate inside a block an HDFS snapshot
// holds starts a recovery that copies it into a new last block; the old
// block is held, not forgotten; a restart of the recovery still copies,
// also after a snapshot of the FSM; the commit of the new block closes
// the file.
func TestFSMCopyOnTruncate(t *testing.T) {
	ev := &forgetRecorder{}
	f := New(Config{Superuser: "root", Supergroup: "supergroup", Events: ev})
	root := &api.Caller{User: "root", ClientId: "r1"}
	okResult(t, permApply(t, f, CmdMkdirs, &api.MkdirsCommand{Caller: root, Path: "/s", Perm: 0o777}))
	cr := okResult(t, permApply(t, f, CmdCreate, &api.CreateCommand{Caller: root, Path: "/s/f", Perm: 0o644, Replication: 3, BlockSize: 1024, MtimeUnixMs: 1000}))
	ino := cr.Status.InodeId
	b := okResult(t, permApply(t, f, CmdAddBlock, &api.AddBlockCommand{Caller: root, Path: "/s/f", InodeId: ino, Targets: []string{"d1", "d2", "d3"}})).Block
	b.Length, b.Crc32C = 1000, new(uint32)
	okResult(t, permApply(t, f, CmdComplete, &api.CompleteCommand{Caller: root, Path: "/s/f", InodeId: ino, Blocks: []*api.Block{b}}))
	okResult(t, permApply(t, f, CmdAllowSnapshot, &api.AllowSnapshotCommand{Caller: root, Path: "/s"}))
	okResult(t, permApply(t, f, CmdCreateSnapshot, &api.CreateSnapshotCommand{Caller: root, Path: "/s", Name: "s1", MtimeUnixMs: 1500}))

	r := okResult(t, permApply(t, f, CmdTruncate, &api.TruncateCommand{Caller: root, Path: "/s/f", NewLength: 300, MtimeUnixMs: 2000, Primary: "d1", Replicas: []string{"d1", "d2", "d3"}}))
	if r.Closed || len(r.Removed) != 0 || ev.forgot(b.Id) {
		t.Fatalf("copy-on-truncate: %+v (the snapshot's block must not be forgotten)", r)
	}
	rec, ok := f.st.leases.Recovering(namespace.ID(ino))
	if !ok || rec.CopyFrom.ID != b.Id || rec.CopyFrom.Length != 1000 || rec.Block.ID == b.Id || rec.Block.Length != 300 {
		t.Fatalf("recovery %+v %v: want a new block of 300 bytes copied from %v", rec, ok, b)
	}
	okResult(t, permApply(t, f, CmdRecoverLease, &api.RecoverLeaseCommand{InodeId: ino, System: true, NowUnixMs: 9000, Primary: "d2", Replicas: []string{"d1", "d2"}}))
	g := restored(t, f)
	rec2, _ := g.st.leases.Recovering(namespace.ID(ino))
	if rec2.CopyFrom != rec.CopyFrom || rec2.Block.ID != rec.Block.ID || rec2.ID == rec.ID {
		t.Fatalf("restarted recovery after a snapshot %+v, was %+v", rec2, rec)
	}
	crc := uint32(9)
	okResult(t, permApply(t, g, CmdCommitBlockSync, &api.CommitBlockSyncCommand{DatanodeId: "d2", InodeId: ino, Block: ToAPIBlock(rec2.Block), RecoveryId: rec2.ID, NewLength: 300, Crc32C: &crc, StoredOn: []string{"d1", "d2"}}))
	fi, bs, ok := g.st.tree.FileByID(namespace.ID(ino))
	if !ok || fi.State != namespace.Complete || len(bs) != 1 || bs[0].ID != rec.Block.ID || bs[0].Length != 300 || bs[0].GenStamp != rec2.ID {
		t.Fatalf("after the commit: %+v %v", fi, bs)
	}
	if !g.st.tree.HeldBySnapshot(b.Id) {
		t.Fatal("the snapshot no longer holds the old block")
	}
}
