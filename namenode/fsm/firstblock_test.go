package fsm

import (
	"testing"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/namespace"
)

// TestCreateFirstBlock: a Create with first_block_targets allocates the
// file's first block in the same apply (the Complete that names it then
// closes the file, and a retried AddBlock gets it again); without targets
// it allocates none; a space quota that refuses the block leaves the file
// created without one (the writer's AddBlock hears the refusal); a
// refused Create allocates nothing.
func TestCreateFirstBlock(t *testing.T) {
	alice := &api.Caller{User: "alice", ClientId: "a1"}
	targets := []string{"d1", "d2", "d3"}
	tests := []struct {
		name       string
		path       string
		targets    []string
		createKind errs.Kind // of the Create
		wantBlock  bool
		addKind    errs.Kind // of an AddBlock with no previous block after it
	}{
		{"with targets", "/pub/a", targets, 0, true, 0},
		{"without targets", "/pub/a", nil, 0, false, 0},
		{"space quota refuses the block", "/q/a", targets, 0, false, errs.Exhausted},
		{"create refused", "/pub/exists", targets, errs.Exist, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := New(Config{Superuser: "root", Supergroup: "supergroup"})
			root := &api.Caller{User: "root"}
			ok := func(r *api.CommandResult) *api.CommandResult {
				t.Helper()
				if r.ErrorMsg != "" {
					t.Fatal(r.ErrorMsg)
				}
				return r
			}
			ok(permApply(t, f, CmdMkdirs, &api.MkdirsCommand{Caller: root, Path: "/pub", Perm: 0o777}))
			ok(permApply(t, f, CmdMkdirs, &api.MkdirsCommand{Caller: root, Path: "/q", Perm: 0o777}))
			ok(permApply(t, f, CmdSetQuota, &api.SetQuotaCommand{Caller: root, Path: "/q", NamespaceQuota: namespace.QuotaDontSet, SpaceQuota: 100}))
			ok(permApply(t, f, CmdCreate, &api.CreateCommand{Caller: alice, Path: "/pub/exists", Perm: 0o644, Replication: 1, BlockSize: 1024}))

			r := permApply(t, f, CmdCreate, &api.CreateCommand{Caller: alice, Path: tt.path, Perm: 0o644, Replication: 3,
				BlockSize: 1024, MtimeUnixMs: 1000, SoftLimitMs: 500, FirstBlockTargets: tt.targets})
			if permKind(r) != tt.createKind {
				t.Fatalf("Create: %v %q, want %v", permKind(r), r.ErrorMsg, tt.createKind)
			}
			if got := r.GetBlock() != nil; got != tt.wantBlock {
				t.Fatalf("Create's result has a block: %v, want %v (%v)", got, tt.wantBlock, r)
			}
			if tt.createKind != 0 {
				return
			}
			ino := r.Status.InodeId
			if !tt.wantBlock {
				a := permApply(t, f, CmdAddBlock, &api.AddBlockCommand{Caller: alice, Path: tt.path, InodeId: ino, Targets: targets})
				if permKind(a) != tt.addKind {
					t.Fatalf("AddBlock after the Create: %v %q, want %v", permKind(a), a.ErrorMsg, tt.addKind)
				}
				return
			}
			blk := r.Block
			if r.Offset != 0 || blk.Id == 0 || blk.GenStamp == 0 {
				t.Fatalf("first block %v at offset %d", blk, r.Offset)
			}
			again := ok(permApply(t, f, CmdAddBlock, &api.AddBlockCommand{Caller: alice, Path: tt.path, InodeId: ino, Targets: targets}))
			if again.Block.Id != blk.Id || again.Block.GenStamp != blk.GenStamp {
				t.Fatalf("retried AddBlock gave %v, want the Create's %v", again.Block, blk)
			}
			done := &api.Block{Id: blk.Id, GenStamp: blk.GenStamp, Length: 10}
			ok(permApply(t, f, CmdComplete, &api.CompleteCommand{Caller: alice, Path: tt.path, InodeId: ino, Blocks: []*api.Block{done}}))
		})
	}
}
