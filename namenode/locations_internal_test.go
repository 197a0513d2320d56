package namenode

import (
	"math"
	"math/big"
	"testing"

	"github.com/blockfs/blockfs/namespace"
)

// FuzzBlockRange: for any offset and length (sums past 2^64 included),
// GetBlockLocations' range picks exactly the blocks a reference with
// unbounded integers picks: those overlapping [off, min(off+length, file
// length)), all of them for length 0.
func FuzzBlockRange(f *testing.F) {
	f.Add(uint64(5000), uint64(math.MaxUint64), []byte{4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0}) // six 1024-byte blocks
	f.Add(uint64(0), uint64(0), []byte{1, 0})
	f.Add(uint64(1), uint64(math.MaxUint64-1), []byte{0, 1, 0, 0, 7, 0})
	f.Fuzz(func(t *testing.T, off, length uint64, raw []byte) {
		var bs []namespace.Block
		var fileLen uint64
		for i := 0; i+1 < len(raw) && len(bs) < 64; i += 2 {
			l := uint64(raw[i])<<8 | uint64(raw[i+1])
			bs = append(bs, namespace.Block{ID: uint64(len(bs) + 1), GenStamp: 1, Length: l})
			fileLen += l
		}
		if off > fileLen {
			off %= fileLen + 1 // the handler refuses the rest first
		}
		end := namespace.RangeEnd(off, length, fileLen)
		first, last := namespace.Overlapping(bs, off, end, false)

		wantEnd := new(big.Int).SetUint64(fileLen)
		if length > 0 {
			sum := new(big.Int).Add(new(big.Int).SetUint64(off), new(big.Int).SetUint64(length))
			if sum.Cmp(wantEnd) < 0 {
				wantEnd = sum
			}
		}
		if wantEnd.Uint64() != end || !wantEnd.IsUint64() {
			t.Fatalf("end %d, want %v (off %d, length %d, file %d)", end, wantEnd, off, length, fileLen)
		}
		var want []int
		var pos uint64
		for i, b := range bs {
			if pos+b.Length > off && pos < end {
				want = append(want, i)
			}
			pos += b.Length
		}
		got := last - first
		if len(want) == 0 {
			if got != 0 {
				t.Fatalf("blocks [%d, %d), want none", first, last)
			}
			return
		}
		if first != want[0] || last != want[len(want)-1]+1 || got != len(want) {
			t.Fatalf("blocks [%d, %d), want %v (off %d, end %d)", first, last, want, off, end)
		}
	})
}
