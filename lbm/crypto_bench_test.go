package lbm

import (
	"crypto/aes"
	"testing"
)

// BenchmarkXorAt: the keystream for one metadata record's slice (the
// replay of an encrypted container does two per record) and for a 4 KiB
// and 256 KiB data slice, at an offset that is not block aligned.
func BenchmarkXorAt(b *testing.B) {
	blk, _ := aes.NewCipher(make([]byte, 32))
	fc := &fileCipher{block: blk}
	for _, n := range []int{8, 60, 4096, 256 << 10} {
		buf := make([]byte, n)
		b.Run(sizeName(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for i := range b.N {
				fc.xorAt(buf, buf, int64(4096+i*68+5))
			}
		})
	}
}

func sizeName(n int) string {
	switch {
	case n >= 1<<10:
		return itoa(n>>10) + "KiB"
	default:
		return itoa(n) + "B"
	}
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
