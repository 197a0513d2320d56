package lbm

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"math/rand/v2"
	"testing"
)

// TestXorAtMatchesOneStream: any slice at any offset gets exactly the
// keystream bytes one CTR stream over the whole file would give there,
// on both sides of the small-slice threshold and across a counter carry
// out of the low 64 bits and out of all 128.
func TestXorAtMatchesOneStream(t *testing.T) {
	blk, err := aes.NewCipher(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	ivs := map[string][16]byte{
		"zero":           {},
		"low carry":      {8: 0xff, 9: 0xff, 10: 0xff, 11: 0xff, 12: 0xff, 13: 0xff, 14: 0xff, 15: 0xfe},
		"full wrap":      {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfd},
		"random counter": {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
	}
	const size = 8 << 10
	rng := rand.New(rand.NewPCG(1, 2))
	for name, iv := range ivs {
		t.Run(name, func(t *testing.T) {
			want := make([]byte, size)
			cipher.NewCTR(blk, iv[:]).XORKeyStream(want, want)
			fc := &fileCipher{block: blk, iv: iv}
			for range 2000 {
				off := rng.IntN(size)
				n := rng.IntN(min(size-off, 2*smallXOR)) + 1
				got := make([]byte, n)
				fc.xorAt(got, got, int64(off))
				if !bytes.Equal(got, want[off:off+n]) {
					t.Fatalf("xorAt(%d bytes at %d) differs from the stream", n, off)
				}
			}
		})
	}
}
