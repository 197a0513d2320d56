package namespace

import (
	"bytes"
	"testing"

	"github.com/blockfs/blockfs/errs"
)

// TestAppendRefusals: append needs an existing, closed file; a refusal
// leaves the tree unchanged.
func TestAppendRefusals(t *testing.T) {
	cases := []struct {
		name string
		path string
		kind errs.Kind
		msg  string
	}{
		{"missing", "/a/nope", errs.NotFound, "does not exist"},
		{"missing parent", "/a/zz/nope", errs.NotFound, "does not exist"},
		{"below a file", "/a/f/g", errs.NotDir, "not a directory"},
		{"directory", "/a/b", errs.IsDir, "directory"},
		{"under construction", "/a/uc", errs.Precondition, "already being written"},
		{"relative", "a/f", errs.Invalid, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := fixture(t)
			h := tr.Hash()
			err := withPaths(func(ps ...Path) error { _, err := tr.As(alice, "test").Append(ps[0], 9); return err }, c.path)
			wantErr(t, err, c.kind, c.msg)
			if tr.Hash() != h {
				t.Fatal("a refused append changed the tree")
			}
		})
	}
}

// TestAppendNewBlock: appending to a closed file with a short last block
// starts a new block after it; the old blocks stay committed; offsets are
// cumulative; Complete takes the whole list.
func TestAppendNewBlock(t *testing.T) {
	tr := fixture(t) // /a/f: blocks of 100 and 50 bytes, complete
	old := blocksOf(t, tr, "/a/f")
	fi, err := tr.As(alice, "test").Append(mustPath("/a/f"), 5)
	must(t, err)
	if fi.State != UnderConstruction || fi.Writer != (Writer{Client: "ca", User: "alice"}) || fi.Length != 150 || fi.MtimeMs != 5 {
		t.Fatalf("after append: %+v", fi)
	}
	// Another client of the same user is not the writer; a second Append is refused.
	if _, err := tr.As(alice2, "test").Append(mustPath("/a/f"), 6); errs.KindOf(err) != errs.Precondition {
		t.Fatalf("second append: %v", err)
	}
	if _, err := tr.As(alice2, "test").AddBlock(mustPath("/a/f"), fi.ID, &old[1], 6); errs.KindOf(err) != errs.Permission {
		t.Fatalf("addBlock by another client: %v", err)
	}
	// The committed last block's length may not change.
	grown := old[1]
	grown.Length = 70
	if _, err := tr.As(alice, "test").AddBlock(mustPath("/a/f"), fi.ID, &grown, 6); errs.KindOf(err) != errs.Precondition {
		t.Fatalf("addBlock regrowing the last block: %v", err)
	}
	nb, err := tr.As(alice, "test").AddBlock(mustPath("/a/f"), fi.ID, &old[1], 6)
	must(t, err)
	if nb.Offset != 150 || nb.Retried {
		t.Fatalf("new block %+v", nb)
	}
	// A lost answer retried gets the same block.
	again, err := tr.As(alice, "test").AddBlock(mustPath("/a/f"), fi.ID, &old[1], 6)
	if err != nil || !again.Retried || again.Block != nb.Block {
		t.Fatalf("retry: %+v %v", again, err)
	}
	b3 := nb.Block
	b3.Length = 30
	// Only the new blocks: the list must be the file's whole list.
	if _, err := tr.As(alice, "test").Complete(mustPath("/a/f"), fi.ID, []Block{b3}, 7); errs.KindOf(err) != errs.Precondition {
		t.Fatalf("complete with only the new block: %v", err)
	}
	shrunk := append([]Block{old[0]}, old[1], b3)
	shrunk[0].Length = 99
	if _, err := tr.As(alice, "test").Complete(mustPath("/a/f"), fi.ID, shrunk, 7); errs.KindOf(err) != errs.Precondition {
		t.Fatalf("complete changing a committed length: %v", err)
	}
	done, err := tr.As(alice, "test").Complete(mustPath("/a/f"), fi.ID, []Block{old[0], old[1], b3.WithCRC(7)}, 7)
	must(t, err)
	if done.State != Complete || done.Length != 180 || done.NumBlocks != 3 || done.Writer != (Writer{}) {
		t.Fatalf("complete: %+v", done)
	}
	got := blocksOf(t, tr, "/a/f")
	if got[0] != old[0] || got[1] != old[1] || got[2] != b3.WithCRC(7) {
		t.Fatalf("blocks %v", got)
	}
	// A second append after the first closed: another new block.
	_, err = tr.As(bob, "test").Append(mustPath("/a/f"), 8)
	wantErr(t, err, errs.Permission, "user=bob")
	fi, err = tr.As(alice, "test").Append(mustPath("/a/f"), 8)
	must(t, err)
	nb, err = tr.As(alice, "test").AddBlock(mustPath("/a/f"), fi.ID, &got[2], 8)
	must(t, err)
	if nb.Offset != 180 {
		t.Fatalf("offset %d", nb.Offset)
	}
	checkInvariants(t, tr)
}

// TestAppendImage: a file reopened by Append survives the image with its
// writer, and the restored tree accepts only that writer.
func TestAppendImage(t *testing.T) {
	tr := fixture(t)
	fi, err := tr.As(bob, "test").Append(mustPath("/tmp/bob.txt"), 5)
	must(t, err)
	back, err := ReadImage(bytes.NewReader(image(t, tr)))
	must(t, err)
	if back.Hash() != tr.Hash() {
		t.Fatal("hash differs after the image round trip")
	}
	got := mustStat(t, back, "/tmp/bob.txt")
	if got.State != UnderConstruction || got.Writer != (Writer{Client: "cb", User: "bob"}) {
		t.Fatalf("restored %+v", got)
	}
	if _, err := back.As(eve, "test").AddBlock(mustPath("/tmp/bob.txt"), fi.ID, nil, 6); errs.KindOf(err) != errs.Permission {
		t.Fatalf("addBlock by another after restore: %v", err)
	}
	if _, err := back.As(bob, "test").AddBlock(mustPath("/tmp/bob.txt"), fi.ID, nil, 6); err != nil {
		t.Fatal(err)
	}
	// A reopened file with committed blocks (CRCs and all) survives too,
	// and its writer continues after them.
	old := blocksOf(t, tr, "/a/f")
	af, err := tr.As(alice, "test").Append(mustPath("/a/f"), 7)
	must(t, err)
	back, err = ReadImage(bytes.NewReader(image(t, tr)))
	must(t, err)
	if back.Hash() != tr.Hash() {
		t.Fatal("hash differs after the image round trip")
	}
	nb, err := back.As(alice, "test").AddBlock(mustPath("/a/f"), af.ID, &old[1], 8)
	if err != nil || nb.Offset != 150 {
		t.Fatalf("addBlock after restore: %+v %v", nb, err)
	}
	checkInvariants(t, back)
}
