// Package chunks holds the checksum arithmetic the data path shares
// between the client and the datanode: a block is cut into chunks of
// bytes-per-checksum bytes (the last may be short), and each chunk
// carries the CRC32C (Castagnoli) of its bytes.
//
// It is also the one home of the chunk-size rule, which lbm (on write and
// on replay), the datanode, the client and the namenode (its config and
// every Create) apply:
//
//   - A chunk size (bytes per checksum) is a power of two in [Min, Max].
//     A power of two makes every smaller valid size divide every larger
//     one, so a block size that suits one chunk size suits all smaller
//     ones, and a chunk index is an offset shifted. Min bounds the CRC
//     table, 4 bytes per chunk, to 1/16 of the data; Max bounds what a
//     reader must fetch and verify to return one byte, and keeps a chunk
//     inside one write packet.
//   - A block size lies in the cluster's [min, max] block-size limits
//     (the namenode's --min-block-size and --max-block-size, as HDFS's
//     dfs.namenode.fs-limits.{min,max}-block-size) and is a multiple of
//     the chunk size, so that every block but a file's last is whole
//     chunks and a chunk never straddles two blocks.
//
// CheckSize and BlockSizeProblem are the two checks; nothing else should
// restate the bounds.
package chunks

import (
	"fmt"

	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/base/crc32c"
)

// Default is the chunk size when none is given, as HDFS's
// dfs.bytes-per-checksum (docs/ARCHITECTURE.md says why 512).
const Default = 512

// Bounds of a chunk size: a power of two in [Min, Max].
const (
	Min = 64
	Max = 1 << 20
)

// Size is any integer type a chunk size arrives in (a flag's uint64, a
// record's uint32, an int in the data path).
type Size interface {
	~int | ~int32 | ~int64 | ~uint | ~uint32 | ~uint64
}

// CheckSize returns nil if bpc is a valid chunk size, else an errs.Invalid
// error of op reading "bytes per checksum N: want a power of two in
// [64, 1048576]".
func CheckSize[T Size](op string, bpc T) error {
	if bpc >= Min && uint64(bpc) <= Max && bpc&(bpc-1) == 0 {
		return nil
	}
	return errs.Newf(errs.Invalid, op, "", "bytes per checksum %d: want a power of two in [%d, %d]", bpc, Min, Max)
}

// BlockSizeProblem says what is wrong with block size bs under the limits
// [minBS, maxBS] and chunk size bpc, as a phrase that completes "block size
// N is ..." and names the namenode flag that sets the limit; "" if bs is
// allowed. bpc must itself pass CheckSize (an invalid one is reported, not
// divided by). A block size need not be a multiple of bpc: as in HDFS,
// whose namenode takes any block size within its limits, a full block
// then ends in a short chunk, as every file's last block may.
func BlockSizeProblem(bs, minBS, maxBS uint64, bpc uint32) string {
	switch {
	case CheckSize("", bpc) != nil:
		return fmt.Sprintf("not checkable: bytes per checksum %d is not a power of two in [%d, %d]", bpc, Min, Max)
	case bs < minBS:
		return fmt.Sprintf("below the minimum %d (--min-block-size)", minBS)
	case bs > maxBS:
		return fmt.Sprintf("above the maximum %d (--max-block-size)", maxBS)
	}
	return ""
}

// CRC is the CRC32C of b.
func CRC(b []byte) uint32 { return crc32c.Checksum(b) }

// Update extends crc (a CRC32C so far) with b.
func Update(crc uint32, b []byte) uint32 { return crc32c.Update(crc, b) }

// Valid reports whether bpc is a usable chunk size (CheckSize without
// the error).
func Valid(bpc int) bool { return CheckSize("", bpc) == nil }

// Count is the number of chunks of n bytes.
func Count(n, bpc int) int { return (n + bpc - 1) / bpc }

// Sums appends the CRC32C of every chunk of data to dst.
func Sums(dst []uint32, data []byte, bpc int) []uint32 {
	for len(data) > 0 {
		k := min(bpc, len(data))
		dst = append(dst, CRC(data[:k]))
		data = data[k:]
	}
	return dst
}

// Verify checks data against crcs, one per chunk. It returns the index of
// the first chunk that does not match, or -1; a count mismatch is the
// first chunk without a CRC (or len(crcs) when there are too many).
func Verify(data []byte, crcs []uint32, bpc int) int {
	n := Count(len(data), bpc)
	for i := range min(n, len(crcs)) {
		if CRC(data[i*bpc:min((i+1)*bpc, len(data))]) != crcs[i] {
			return i
		}
	}
	if n != len(crcs) {
		return min(n, len(crcs))
	}
	return -1
}
