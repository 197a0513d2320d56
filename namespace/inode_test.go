package namespace

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/blockfs/blockfs/errs"
)

// TestHdrPacking sets each packed field at the edges of its width and
// checks it reads back and leaves the others alone.
func TestHdrPacking(t *testing.T) {
	flags := []hdr{0, hdrDir, hdrUC, hdrB0CRC, hdrDir | hdrUC | hdrB0CRC}
	for _, c := range []struct {
		mode, repl uint32
	}{
		{0, 0}, {0, 1}, {01777, 0}, {01777, MaxReplication}, {0777, MinReplication},
		{stickyBit, 3}, {01, 1<<hdrReplBits - 1}, {01777, 1<<hdrReplBits - 1},
	} {
		for _, f := range flags {
			for _, start := range []hdr{0, ^hdr(0)} { // setters overwrite whatever was there
				h := start.withMode(c.mode).withRepl(c.repl)
				h = h.with(hdrDir|hdrUC|hdrB0CRC, false).with(f, true)
				if uint32(h.mode()) != c.mode || uint32(h.repl()) != c.repl || h&(hdrDir|hdrUC|hdrB0CRC) != f {
					t.Fatalf("mode %#o repl %d flags %#x from %#x: got %#o, %d, %#x", c.mode, c.repl, f, start, h.mode(), h.repl(), h&(hdrDir|hdrUC|hdrB0CRC))
				}
				if h>>19 != start>>19 {
					t.Fatalf("unused bits changed: %#x from %#x", h, start)
				}
			}
		}
	}
}

// TestHdrRefusesOverflow checks that a value wider than its field panics
// instead of spilling into the next field.
func TestHdrRefusesOverflow(t *testing.T) {
	for _, c := range []struct {
		name string
		set  func()
	}{
		{"mode 02000", func() { hdr(0).withMode(02000) }},
		{"mode 0177777", func() { hdr(0).withMode(0177777) }},
		{"replication 64", func() { hdr(0).withRepl(1 << hdrReplBits) }},
		{"replication 1<<32-1", func() { hdr(0).withRepl(^uint32(0)) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			c.set()
		})
	}
}

// TestPackedLimits drives the packed fields through the API at the edges
// of their valid ranges: the edges are kept exactly, and one past them is
// refused with Invalid before anything changes.
func TestPackedLimits(t *testing.T) {
	tr := New(DefaultLimits(), super, "g")
	must(t, tr.Mkdirs(mustPath("/d"), MkdirsOpts{Perm: 01777, MtimeMs: 1}))
	for _, c := range []struct {
		name       string
		perm, repl uint32
		ok         bool
	}{
		{"lowest", 0, MinReplication, true},
		{"highest", 01777, MaxReplication, true},
		{"sticky only", stickyBit, 3, true},
		{"mode bit 02000", 02000, 3, false},
		{"setuid", 04755, 3, false},
		{"replication 0", 0644, 0, false},
		{"replication above the maximum", 0644, MaxReplication + 1, false},
		{"replication past the field", 0644, 1 << hdrReplBits, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := "/d/" + c.name
			before := tr.Hash()
			fi, _, err := tr.Create(mustPath(p), CreateOpts{Perm: c.perm, Replication: c.repl, BlockSize: 1<<64 - 1, MtimeMs: 2})
			if !c.ok {
				wantErr(t, err, errs.Invalid, "")
				if tr.Hash() != before {
					t.Fatal("a refused create changed the tree")
				}
				return
			}
			must(t, err)
			if fi.Mode != c.perm || fi.Replication != c.repl || fi.BlockSize != 1<<64-1 || fi.IsDir || fi.State != UnderConstruction {
				t.Fatalf("created %+v", fi)
			}
		})
	}
	wantErr(t, tr.SetPermission(mustPath("/d"), 02000, 3), errs.Invalid, "")
	wantErr(t, tr.SetReplication(mustPath("/d/highest"), MaxReplication+1), errs.Invalid, "")
	must(t, tr.SetPermission(mustPath("/d/lowest"), 01777, 3))
	must(t, tr.SetReplication(mustPath("/d/lowest"), MaxReplication))
	fi, err := tr.Stat(mustPath("/d/lowest"))
	must(t, err)
	if fi.Mode != 01777 || fi.Replication != MaxReplication || fi.State != UnderConstruction {
		t.Fatalf("after set: %+v", fi)
	}
	d, err := tr.Stat(mustPath("/d"))
	must(t, err)
	if !d.IsDir || d.Mode != 01777 || d.Replication != 0 || d.State != Complete {
		t.Fatalf("dir: %+v", d)
	}
	checkInvariants(t, tr)
	roundTrip(t, tr)
}

// TestBlockListMoves takes a file from no blocks to an inline block, to a
// slice and back, checking what File reports and the tree's invariants at
// every step, and that a slice File returned is never written afterwards.
func TestBlockListMoves(t *testing.T) {
	tr := New(DefaultLimits(), super, "g")
	const p = "/f"
	fi := mustCreate(t, tr, p, "alice")
	var want []Block
	var held [][]Block // slices File returned, with copies of what they held
	var copies [][]Block
	check := func(step string) {
		t.Helper()
		got, bs, err := tr.File(mustPath(p))
		must(t, err)
		var length uint64
		for _, b := range want {
			length += b.Length
		}
		if len(bs) != len(want) || got.NumBlocks != len(want) || got.Length != length {
			t.Fatalf("%s: %d blocks (%d), length %d; want %v", step, len(bs), got.NumBlocks, got.Length, want)
		}
		for i := range bs {
			if bs[i] != want[i] {
				t.Fatalf("%s: block %d is %v %+v, want %+v", step, i, bs[i], bs[i], want[i])
			}
		}
		held = append(held, bs)
		copies = append(copies, append([]Block(nil), bs...))
		for i := range held {
			for j := range held[i] {
				if held[i][j] != copies[i][j] {
					t.Fatalf("%s: a slice File returned earlier was written", step)
				}
			}
		}
		checkInvariants(t, tr)
		roundTrip(t, tr)
	}
	check("empty")
	b1 := mustAdd(t, tr, p, fi.ID, nil)
	want = []Block{b1}
	check("one block")
	b1.Length = 10
	if _, err := tr.As(nil, "test").Fsync(mustPath(p), fi.ID, b1, 2); err != nil {
		t.Fatal(err)
	}
	want = []Block{b1}
	check("hflushed")
	b1c := b1.WithCRC(7)
	b2 := mustAdd(t, tr, p, fi.ID, &b1c)
	want = []Block{b1c, b2}
	check("two blocks")
	b2.Length = 3
	b3 := mustAdd(t, tr, p, fi.ID, &b2)
	want = []Block{b1c, b2, b3}
	check("three blocks")
	must(t, tr.AbandonBlock(mustPath(p), fi.ID, b3))
	want = []Block{b1c, b2}
	check("abandoned to two")
	must(t, tr.AbandonBlock(mustPath(p), fi.ID, b2))
	want = []Block{b1c}
	check("abandoned to one")
	if _, err := tr.Complete(mustPath(p), fi.ID, []Block{b1}, 3); err != nil {
		t.Fatal(err)
	}
	check("complete, CRC kept")
	if fi, _, _ := tr.FileByID(fi.ID); fi.State != Complete {
		t.Fatalf("state %v", fi.State)
	}
	if f := tr.inodes.get(fi.ID); f.ext != nil {
		t.Fatalf("a closed one-block file keeps an ext: %+v", *f.ext)
	}
	blk, owner, ok := tr.Block(b1.ID)
	if !ok || owner != fi.ID || blk != b1c {
		t.Fatalf("Block(%d) = %+v, %d, %v", b1.ID, blk, owner, ok)
	}
	removed, err := tr.Delete(mustPath(p), false, 4)
	must(t, err)
	if len(removed) != 1 || removed[0] != b1c {
		t.Fatalf("removed %v", removed)
	}
	checkInvariants(t, tr)
}

// roundTrip checks that tr's image reads back into a tree with the same
// image and sound indexes.
func roundTrip(t *testing.T, tr *Tree) {
	t.Helper()
	img := image(t, tr)
	back, err := ReadImage(bytes.NewReader(img))
	must(t, err)
	if !bytes.Equal(image(t, back), img) || back.Hash() != tr.Hash() {
		t.Fatal("the image read back differs")
	}
	checkInvariants(t, back)
}

// TestReadImagePackedFields edits the mode and replication of image
// records at the edges of the packed fields: values in range read back
// exactly, values out of range are Corrupt, never truncated.
func TestReadImagePackedFields(t *testing.T) {
	img := image(t, fixture(t))
	modeAt := func(b []byte) int { // after id, parent, name, owner, group
		off := 16
		for range 3 {
			l, n := binary.Uvarint(b[off:])
			off += n + int(l)
		}
		return off
	}
	setMode := func(v uint32) func([]byte) {
		return func(b []byte) { binary.LittleEndian.PutUint32(b[modeAt(b):], v) }
	}
	setRepl := func(v uint32) func([]byte) {
		return func(b []byte) { binary.LittleEndian.PutUint32(b[modeAt(b)+4+8:], v) }
	}
	// Record 2 is the directory /a, record 5 the file /a/f (see
	// TestReadImageSemanticCorruption).
	for _, c := range []struct {
		name string
		rec  int
		edit func([]byte)
		path string
		msg  string // "" : accepted
	}{
		{"dir mode 01777", 2, setMode(01777), "/a", ""},
		{"dir mode 02000", 2, setMode(02000), "", "bits outside 01777"},
		{"file mode 0", 5, setMode(0), "/a/f", ""},
		{"file mode 1<<16", 5, setMode(1 << 16), "", "bits outside 01777"},
		{"replication 32", 5, setRepl(MaxReplication), "/a/f", ""},
		{"replication 1", 5, setRepl(MinReplication), "/a/f", ""},
		{"replication 0", 5, setRepl(0), "", "replication 0 out of range"},
		{"replication 33", 5, setRepl(MaxReplication + 1), "", "replication 33 out of range"},
		{"replication 64", 5, setRepl(1 << hdrReplBits), "", "replication 64 out of range"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var mode, repl uint32
			edited := reframe(t, img, func(i int, typ byte, b []byte) [][]byte {
				if i == c.rec {
					c.edit(b)
					mode = binary.LittleEndian.Uint32(b[modeAt(b):])
					if typ == recFile {
						repl = binary.LittleEndian.Uint32(b[modeAt(b)+12:])
					}
				}
				return [][]byte{append([]byte{typ}, b...)}
			})
			tr, err := ReadImage(bytes.NewReader(edited))
			if c.msg != "" {
				wantErr(t, err, errs.Corrupt, c.msg)
				return
			}
			must(t, err)
			fi := mustStat(t, tr, c.path)
			if fi.Mode != mode || fi.Replication != repl {
				t.Fatalf("%s: mode %#o replication %d, want %#o %d", c.path, fi.Mode, fi.Replication, mode, repl)
			}
			checkInvariants(t, tr)
			if !bytes.Equal(image(t, tr), edited) {
				t.Fatal("the edited image does not write back as read")
			}
		})
	}
}
