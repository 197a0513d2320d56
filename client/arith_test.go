package client

import (
	"math"
	"testing"
)

// FuzzSpan: whatever block offsets and lengths a namenode sends and
// whatever range is read, span never wraps: what it returns lies inside
// both the block and the read.
func FuzzSpan(f *testing.F) {
	f.Add(uint64(0), uint64(100), int64(0), int64(50))
	f.Add(uint64(100), uint64(100), int64(150), int64(400))
	f.Add(uint64(math.MaxUint64), uint64(2), int64(0), int64(math.MaxInt64))
	f.Add(uint64(math.MaxInt64), uint64(math.MaxInt64), int64(1), int64(2))
	f.Add(uint64(5000), uint64(1<<63), int64(5000), int64(5001))
	f.Fuzz(func(t *testing.T, bStart, bLen uint64, pos, end int64) {
		from, take, ok := span(bStart, bLen, pos, end)
		if !ok {
			return
		}
		if from < 0 || take <= 0 || uint64(from)+uint64(take) > bLen || take > end-pos {
			t.Fatalf("span(%d, %d, %d, %d) = %d, %d", bStart, bLen, pos, end, from, take)
		}
		if int64(bStart)+from != pos {
			t.Fatalf("span(%d, %d, %d, %d) starts at %d, not at the read's position", bStart, bLen, pos, end, int64(bStart)+from)
		}
	})
}

// FuzzFill: a write never takes more than the block has room for, nor a
// negative amount, whatever block size the namenode answered.
func FuzzFill(f *testing.F) {
	f.Add(0, uint64(1024), 4096)
	f.Add(1023, uint64(1024), 1)
	f.Add(0, uint64(math.MaxUint64), 10)
	f.Add(5, uint64(0), 10)
	f.Fuzz(func(t *testing.T, buffered int, blockSize uint64, p int) {
		if buffered < 0 || p < 0 || uint64(buffered) > min(blockSize, maxBlockSize) {
			return // a Writer never holds more than its block
		}
		take := fill(buffered, blockSize, p)
		if take < 0 || take > p || uint64(buffered+take) > min(blockSize, maxBlockSize) {
			t.Fatalf("fill(%d, %d, %d) = %d", buffered, blockSize, p, take)
		}
	})
}
