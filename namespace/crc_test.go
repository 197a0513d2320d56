package namespace

import (
	"slices"
	"testing"

	"github.com/blockfs/blockfs/errs"
)

// crcFile makes /f (block size bs) with two blocks, the first committed by
// the second AddBlock with CRC 0x11111111 and length 100, the second still
// open (a session of alice, the writer).
func crcFile(t *testing.T) (*Tree, FileInfo, Block, Block) {
	t.Helper()
	tr := New(Limits{}, super, "g")
	s := tr.As(alice, "test")
	must(t, tr.Mkdirs(mustPath("/d"), MkdirsOpts{Perm: 0777, MtimeMs: 1}))
	fi, _, err := s.Create(mustPath("/d/f"), CreateOpts{Perm: 0644, Replication: 1, BlockSize: bs, MtimeMs: 1})
	must(t, err)
	nb, err := s.AddBlock(mustPath("/d/f"), fi.ID, nil, 2)
	must(t, err)
	b1 := nb.Block
	b1.Length = 100
	b1 = b1.WithCRC(0x11111111)
	nb, err = s.AddBlock(mustPath("/d/f"), fi.ID, &b1, 3)
	must(t, err)
	return tr, fi, b1, nb.Block
}

// TestBlockCRCCommit: each block's CRC is committed once; a second commit
// with another CRC (a retried AddBlock or Complete that carries different
// checksums) is refused with the path and both values, and changes nothing.
func TestBlockCRCCommit(t *testing.T) {
	cases := []struct {
		name string
		op   func(s Session, fi FileInfo, b1, b2 Block) error
		kind errs.Kind // 0: success
		msg  string
		want func(b1, b2 Block) []Block // blocks after, on success
	}{
		{"retried addBlock, same crc", func(s Session, fi FileInfo, b1, b2 Block) error {
			nb, err := s.AddBlock(mustPath("/d/f"), fi.ID, &b1, 4)
			if err == nil && (!nb.Retried || nb.Block.ID != b2.ID) {
				t.Fatalf("retry gave %+v", nb)
			}
			return err
		}, 0, "", func(b1, b2 Block) []Block { return []Block{b1, b2} }},
		{"retried addBlock, other crc", func(s Session, fi FileInfo, b1, b2 Block) error {
			_, err := s.AddBlock(mustPath("/d/f"), fi.ID, ptr(b1.WithCRC(0x22222222)), 4)
			return err
		}, errs.Precondition, "/d/f: block blk_1_1000 CRC32C 22222222 differs from the recorded 11111111", nil},
		{"complete, other crc for a committed block", func(s Session, fi FileInfo, b1, b2 Block) error {
			b2.Length = 7
			_, err := s.Complete(mustPath("/d/f"), fi.ID, []Block{b1.WithCRC(0), b2.WithCRC(5)}, 5)
			return err
		}, errs.Precondition, "CRC32C 00000000 differs from the recorded 11111111", nil},
		{"complete without crcs keeps the recorded one", func(s Session, fi FileInfo, b1, b2 Block) error {
			b1.HasCRC, b1.CRC = false, 0
			b2.Length = 7
			_, err := s.Complete(mustPath("/d/f"), fi.ID, []Block{b1, b2}, 5)
			return err
		}, 0, "", func(b1, b2 Block) []Block { b2.Length = 7; return []Block{b1, b2} }},
		{"complete with crcs", func(s Session, fi FileInfo, b1, b2 Block) error {
			b2.Length = 7
			_, err := s.Complete(mustPath("/d/f"), fi.ID, []Block{b1, b2.WithCRC(0)}, 5)
			return err
		}, 0, "", func(b1, b2 Block) []Block { b2.Length = 7; return []Block{b1, b2.WithCRC(0)} }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr, fi, b1, b2 := crcFile(t)
			before := tr.Hash()
			err := c.op(tr.As(alice, "test"), fi, b1, b2)
			if c.kind != 0 {
				wantErr(t, err, c.kind, c.msg)
				if tr.Hash() != before {
					t.Fatal("refused call changed the tree")
				}
				return
			}
			must(t, err)
			if got, want := blocksOf(t, tr, "/d/f"), c.want(b1, b2); !slices.Equal(got, want) {
				t.Fatalf("blocks %+v, want %+v", got, want)
			}
		})
	}
}

// TestBlockCRCRetriedComplete: a file already complete answers a retried
// Complete with the same CRCs (or none) unchanged, and refuses other CRCs
// or a CRC it never recorded.
func TestBlockCRCRetriedComplete(t *testing.T) {
	tr, fi, b1, b2 := crcFile(t)
	s := tr.As(alice, "test")
	b2.Length = 7
	_, err := s.Complete(mustPath("/d/f"), fi.ID, []Block{b1, b2}, 5) // b2 has no CRC
	must(t, err)
	h := tr.Hash()
	noCRC := b1
	noCRC.HasCRC, noCRC.CRC = false, 0
	cases := []struct {
		name   string
		blocks []Block
		kind   errs.Kind
	}{
		{"same", []Block{b1, b2}, 0},
		{"without crcs", []Block{noCRC, b2}, 0},
		{"other crc", []Block{b1.WithCRC(1), b2}, errs.Precondition},
		{"crc never recorded", []Block{b1, b2.WithCRC(1)}, errs.Precondition},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := s.Complete(mustPath("/d/f"), fi.ID, c.blocks, 9)
			if c.kind == 0 {
				must(t, err)
			} else {
				wantErr(t, err, c.kind, "/d/f")
			}
			if tr.Hash() != h {
				t.Fatal("tree changed")
			}
		})
	}
}

// TestTreeBlock: Block finds a block's record (CRC included) and owner,
// also in a file whose ids are out of order.
func TestTreeBlock(t *testing.T) {
	tr, fi, b1, b2 := crcFile(t)
	for _, want := range []Block{b1, b2} {
		got, owner, ok := tr.Block(want.ID)
		if !ok || got != want || owner != fi.ID {
			t.Fatalf("Block(%d) = %+v, %d, %v; want %+v", want.ID, got, owner, ok, want)
		}
	}
	if _, _, ok := tr.Block(999); ok {
		t.Fatal("found a block that does not exist")
	}
	// Ids chosen by the caller, descending.
	g, _, err := tr.Create(mustPath("/g"), CreateOpts{Perm: 0644, Replication: 1, BlockSize: bs, MtimeMs: 1})
	must(t, err)
	var prev *Block
	for _, id := range []uint64{90, 80, 70} {
		b, _, err := tr.AddBlock(mustPath("/g"), g.ID, prev, id, 1, 2)
		must(t, err)
		prev = &b
	}
	if b, owner, ok := tr.Block(80); !ok || b.ID != 80 || owner != g.ID {
		t.Fatalf("out-of-order file: %+v %d %v", b, owner, ok)
	}
}

func ptr[T any](v T) *T { return &v }
