package namespace

import (
	"bytes"
	"encoding/binary"
	"slices"
	"testing"

	"github.com/blockfs/blockfs/errs"
)

// TestImageKeepsWriter: the writer of an open file survives an image round
// trip, and a complete file has none.
func TestImageKeepsWriter(t *testing.T) {
	tr, w := permFixture(t)
	back, err := ReadImage(bytes.NewReader(image(t, tr)))
	must(t, err)
	checkInvariants(t, back)
	if back.Hash() != tr.Hash() {
		t.Fatal("hash changed")
	}
	if got := mustStat(t, back, "/a/w").Writer; got != w.Writer || got.Client != "ca" {
		t.Fatalf("writer %+v, want %+v", got, w.Writer)
	}
	if got := mustStat(t, back, "/a/f").Writer; got != (Writer{}) {
		t.Fatalf("complete file has writer %+v", got)
	}
	// The restored tree enforces it.
	b := blocksOf(t, back, "/a/w")[0]
	if _, err := back.As(eve, "test").AddBlock(mustPath("/a/w"), w.ID, &b, 9); err == nil {
		t.Fatal("another user added a block after restore")
	}
	if _, err := back.As(alice, "test").AddBlock(mustPath("/a/w"), w.ID, &b, 9); err != nil {
		t.Fatal(err)
	}
}

// toV2 rewrites a current image as version 2 would have been written:
// block entries without flags and CRC.
func toV2(t *testing.T, img []byte) []byte {
	v2 := bytes.Clone(img)
	binary.LittleEndian.PutUint32(v2[8:], imageV2)
	return reframe(t, v2, func(_ int, typ byte, b []byte) [][]byte {
		if typ == recFile {
			nb := nblocks(b)
			at := len(b) - nb*blockLen
			out := slices.Clone(b[:at])
			for i := range nb {
				e := b[at+i*blockLen:]
				out = append(out, e[:blockLenV2]...)
			}
			b = out
		}
		return [][]byte{append([]byte{typ}, b...)}
	})
}

// nblocks decodes the block count of a current-version FILE body.
func nblocks(b []byte) int {
	d := dec{b: b}
	d.take(16)
	d.bytes()
	d.bytes()
	d.bytes()
	d.take(4 + 8 + 4 + 8)
	if FileState(d.u8()) == UnderConstruction {
		d.bytes()
		d.bytes()
	}
	return int(d.u32())
}

// toV1 rewrites a current image as version 1 would have been written: no
// writer strings in the records of open files, no block CRCs.
func toV1(t *testing.T, img []byte) []byte {
	v1 := toV2(t, img)
	binary.LittleEndian.PutUint32(v1[8:], imageV1)
	return reframe(t, v1, func(_ int, typ byte, b []byte) [][]byte {
		if typ == recFile {
			d := dec{b: b}
			d.take(16)
			d.bytes()
			d.bytes()
			d.bytes()
			d.take(4 + 8 + 4 + 8)
			state := d.u8()
			at := len(b) - len(d.b)
			if FileState(state) == UnderConstruction {
				d.bytes()
				d.bytes()
				b = append(b[:at:at], d.b...)
			}
		}
		return [][]byte{append([]byte{typ}, b...)}
	})
}

// TestReadImageV1: a version 1 image still reads; its open files take
// their owner as writer (any client of that user).
func TestReadImageV1(t *testing.T) {
	tr, w := permFixture(t)
	back, err := ReadImage(bytes.NewReader(toV1(t, image(t, tr))))
	must(t, err)
	checkInvariants(t, back)
	if got := mustStat(t, back, "/a/w").Writer; got != (Writer{User: "alice"}) {
		t.Fatalf("writer %+v", got)
	}
	if got := mustStat(t, back, "/a/uc").Writer; got != (Writer{User: "alice"}) {
		t.Fatalf("writer %+v", got)
	}
	b := blocksOf(t, back, "/a/w")[0]
	if _, err := back.As(bob, "test").AddBlock(mustPath("/a/w"), w.ID, &b, 9); err == nil {
		t.Fatal("another user added a block to a v1 open file")
	}
	if _, err := back.As(alice2, "test").AddBlock(mustPath("/a/w"), w.ID, &b, 9); err != nil {
		t.Fatal(err)
	}
}

// TestImageBlockCRCs: block CRCs (0 included) survive an image round trip,
// a block without one stays without; a version 2 image reads with none.
func TestImageBlockCRCs(t *testing.T) {
	tr := fixture(t)
	want := blocksOf(t, tr, "/a/f")
	if len(want) != 2 || !want[0].HasCRC || want[0].CRC != 0 || want[1] != want[1].WithCRC(0xdeadbeef) {
		t.Fatalf("fixture blocks %+v", want)
	}
	back, err := ReadImage(bytes.NewReader(image(t, tr)))
	must(t, err)
	if got := blocksOf(t, back, "/a/f"); !slices.Equal(got, want) {
		t.Fatalf("after round trip %+v, want %+v", got, want)
	}
	if got := blocksOf(t, back, "/a/uc"); len(got) != 1 || got[0].HasCRC {
		t.Fatalf("open block %+v", got)
	}
	v2, err := ReadImage(bytes.NewReader(toV2(t, image(t, tr))))
	must(t, err)
	checkInvariants(t, v2)
	for _, b := range blocksOf(t, v2, "/a/f") {
		if b.HasCRC || b.CRC != 0 {
			t.Fatalf("v2 block %+v has a CRC", b)
		}
	}
	if mustStat(t, v2, "/a/f").Length != 150 {
		t.Fatal("v2 lengths lost")
	}
	// Written back, it is the current version (4: a tree without
	// snapshottable directories is written as version 4), and reads again.
	again := image(t, v2)
	if binary.LittleEndian.Uint32(again[8:]) != imageV4 {
		t.Fatal("not rewritten as the current version")
	}
	_, err = ReadImage(bytes.NewReader(again))
	must(t, err)
}

// TestReadImageBadCRCFlags: unknown flag bits, and CRC bytes on a block
// that has no CRC (two images for one tree), are corrupt.
func TestReadImageBadCRCFlags(t *testing.T) {
	img := image(t, fixture(t))
	cases := []struct {
		name string
		edit func(e []byte)
		msg  string
	}{
		{"unknown flag", func(e []byte) { e[24] |= 0x80 }, "unknown flags 0x81"},
		{"crc without flag", func(e []byte) { e[24] = 0 }, "has no CRC but CRC bytes deadbeef"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bad := reframe(t, img, func(i int, typ byte, b []byte) [][]byte {
				if i == 5 { // /a/f: edit its second block
					c.edit(b[len(b)-blockLen:])
				}
				return [][]byte{append([]byte{typ}, b...)}
			})
			_, err := ReadImage(bytes.NewReader(bad))
			wantErr(t, err, errs.Corrupt, c.msg)
		})
	}
}
