package lbm

import (
	"fmt"
	"testing"
)

func TestRecordRoundTrip(t *testing.T) {
	cases := []struct {
		name string
		rec  createRec
	}{
		{"zero", createRec{}},
		{"typical", createRec{ID: 7, Inode: 9, GenStamp: 1001, Offset: 4096, Length: 12345, CRC: 0xdeadbeef, TimestampUS: 1_700_000_000_000_000}},
		{"max", createRec{ID: ^uint64(0), Inode: ^uint64(0), GenStamp: ^uint64(0), Offset: 1 << 62, Length: 1 << 40, CRC: ^uint32(0), TimestampUS: -1}},
	}
	for _, tc := range cases {
		t.Run("create/"+tc.name, func(t *testing.T) {
			fr := appendCreate(nil, &tc.rec)
			if len(fr) != frameLen(createBodyLen) {
				t.Fatalf("frame len %d", len(fr))
			}
			body, next, st := nextFrame(fr, len(fr), 0)
			if st != frameOK || next != len(fr) || body[0] != recCreate {
				t.Fatalf("st=%v next=%d", st, next)
			}
			var got createRec
			decodeCreate(body, &got)
			if got != tc.rec {
				t.Fatalf("got %+v want %+v", got, tc.rec)
			}
		})
	}
	for _, id := range []uint64{0, 1, ^uint64(0)} {
		t.Run(fmt.Sprintf("delete/%d", id), func(t *testing.T) {
			fr := appendDelete(nil, id)
			body, _, st := nextFrame(fr, len(fr), 0)
			if st != frameOK || body[0] != recDelete || decodeDelete(body) != id {
				t.Fatalf("st=%v", st)
			}
		})
	}
	t.Run("noalloc", func(t *testing.T) {
		fr := appendCreate(nil, &cases[1].rec)
		fr = appendDelete(fr, 7)
		st := &replayState{blocks: make(map[uint64]blockEntry, 4), dataSize: 1 << 30, path: "x"}
		allocs := testing.AllocsPerRun(100, func() {
			for p := 0; ; {
				body, next, fs := nextFrame(fr, len(fr), p)
				if fs != frameOK {
					break
				}
				if err := st.apply(body, int64(p)); err != nil {
					t.Fatal(err)
				}
				p = next
			}
		})
		if allocs != 0 {
			t.Fatalf("%v allocs per replay", allocs)
		}
	})
}

func TestFrameRejectsBadCRC(t *testing.T) {
	good := appendDelete(nil, 42)
	cases := []struct {
		name string
		flip int
		want frameStatus
	}{
		{"len", 0, frameBadLenCRC},
		{"lencrc", 5, frameBadLenCRC},
		{"body", 10, frameBadBodyCRC},
		{"bodycrc", len(good) - 1, frameBadBodyCRC},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := append([]byte(nil), good...)
			b[tc.flip] ^= 0x10
			b = appendDelete(b, 43) // not at the tail
			if _, _, st := nextFrame(b, zeroFrom(b), 0); st != tc.want {
				t.Fatalf("got %v want %v", st, tc.want)
			}
		})
	}
	t.Run("huge-len", func(t *testing.T) {
		b := appendFrame(nil, make([]byte, maxFrameBody+1))
		if _, _, st := nextFrame(b, len(b), 0); st != frameBadLen {
			t.Fatalf("got %v", st)
		}
	})
}
