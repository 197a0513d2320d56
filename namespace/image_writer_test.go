package namespace

import (
	"bytes"
	"encoding/binary"
	"testing"
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
	if _, err := back.As(eve).AddBlock("/a/w", w.ID, &b, 9); err == nil {
		t.Fatal("another user added a block after restore")
	}
	if _, err := back.As(alice).AddBlock("/a/w", w.ID, &b, 9); err != nil {
		t.Fatal(err)
	}
}

// toV1 rewrites a version 2 image as version 1 would have been written:
// no writer strings in the records of open files.
func toV1(t *testing.T, img []byte) []byte {
	v1 := bytes.Clone(img)
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
	if _, err := back.As(bob).AddBlock("/a/w", w.ID, &b, 9); err == nil {
		t.Fatal("another user added a block to a v1 open file")
	}
	if _, err := back.As(alice2).AddBlock("/a/w", w.ID, &b, 9); err != nil {
		t.Fatal(err)
	}
}
