package namespace

import (
	"testing"

	"github.com/blockfs/blockfs/errs"
)

// TestPutFile: a file made whole from reserved ids, and each refusal,
// which leaves the tree as it was.
func TestPutFile(t *testing.T) {
	tr := New(Limits{}, super, "g")
	ino, blk, gs, err := tr.Reserve(8)
	must(t, err)
	if _, _, _, err := tr.Reserve(0); !errs.Is(err, errs.Invalid) {
		t.Fatalf("Reserve(0): %v", err)
	}
	must(t, tr.SetQuota(mustPath("/"), -1, 2*3*100)) // two files of 100 bytes at replication 3
	alice := &Caller{User: "alice", Client: "c1"}
	must(t, tr.As(nil, "mkdirs").Mkdirs(mustPath("/d"), MkdirsOpts{Perm: 0o777}))
	opts := CreateOpts{Perm: 0o644, Replication: 3, BlockSize: 100, MtimeMs: 5}
	b := func(i uint64, n uint64) Block { return Block{ID: blk + i, GenStamp: gs, Length: n}.WithCRC(uint32(i)) }

	fi, removed, err := tr.As(alice, "PutFile").PutFile(mustPath("/d/f"), opts, ino, b(0, 100))
	must(t, err)
	if fi.ID != ino || fi.State != Complete || fi.Length != 100 || fi.Owner != "alice" || len(removed) != 0 {
		t.Fatalf("put: %+v, removed %v", fi, removed)
	}
	if got := blocksOf(t, tr, "/d/f"); len(got) != 1 || got[0] != b(0, 100) {
		t.Fatalf("blocks %v", got)
	}
	if next, _ := tr.BlockInode(blk); next != ino {
		t.Fatalf("block %d indexed to %d, want %d", blk, next, ino)
	}

	cases := []struct {
		name string
		p    string
		o    func(CreateOpts) CreateOpts
		id   ID
		b    Block
		want errs.Kind
	}{
		{"inode in use", "/d/g", nil, ino, b(1, 10), errs.Precondition},
		{"inode never reserved", "/d/g", nil, ino + 100, b(1, 10), errs.Precondition},
		{"root's id", "/d/g", nil, RootID, b(1, 10), errs.Precondition},
		{"block in use", "/d/g", nil, ino + 1, b(0, 10), errs.Precondition},
		{"block never reserved", "/d/g", nil, ino + 1, Block{ID: blk + 100, GenStamp: gs, Length: 10}.WithCRC(1), errs.Precondition},
		{"generation stamp never taken", "/d/g", nil, ino + 1, Block{ID: blk + 1, GenStamp: gs + 5, Length: 10}.WithCRC(1), errs.Precondition},
		{"no CRC", "/d/g", nil, ino + 1, Block{ID: blk + 1, GenStamp: gs, Length: 10}, errs.Invalid},
		{"empty", "/d/g", nil, ino + 1, b(1, 0), errs.Invalid},
		{"past the block size", "/d/g", nil, ino + 1, b(1, 101), errs.Invalid},
		{"exists", "/d/f", nil, ino + 1, b(1, 10), errs.Exist},
		{"parent missing", "/d/e/g", nil, ino + 1, b(1, 10), errs.NotFound},
		{"space quota", "/d/g", func(o CreateOpts) CreateOpts { o.Replication = 4; return o }, ino + 1, b(1, 100), errs.Exhausted},
		{"overwrite beyond the space quota", "/d/f", func(o CreateOpts) CreateOpts { o.Overwrite, o.Replication = true, 10; return o }, ino + 1, b(1, 100), errs.Exhausted},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := opts
			if tc.o != nil {
				o = tc.o(o)
			}
			files, dirs, blocks := tr.Counts()
			_, _, err := tr.As(alice, "PutFile").PutFile(mustPath(tc.p), o, tc.id, tc.b)
			if !errs.Is(err, tc.want) {
				t.Fatalf("PutFile: %v, want %v", err, tc.want)
			}
			if f, d, bl := tr.Counts(); f != files || d != dirs || bl != blocks {
				t.Fatalf("counts %d/%d/%d after the refusal, were %d/%d/%d", f, d, bl, files, dirs, blocks)
			}
		})
	}

	// An overwrite replaces the file and hands back its block.
	fi2, removed, err := tr.As(alice, "PutFile").PutFile(mustPath("/d/f"), CreateOpts{Perm: 0o644, Replication: 3, BlockSize: 100, Overwrite: true, MtimeMs: 6}, ino+1, b(1, 50))
	must(t, err)
	if fi2.ID != ino+1 || fi2.Length != 50 || len(removed) != 1 || removed[0].ID != blk {
		t.Fatalf("overwrite: %+v, removed %v", fi2, removed)
	}
	if _, _, err := tr.As(&Caller{User: "bob"}, "PutFile").PutFile(mustPath("/d/f"), CreateOpts{Perm: 0o644, Replication: 3, BlockSize: 100, Overwrite: true}, ino+2, b(2, 5)); !errs.Is(err, errs.Permission) {
		t.Fatalf("bob overwriting alice's file: %v", err)
	}
}
