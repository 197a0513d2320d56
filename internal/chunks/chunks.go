// Package chunks holds the checksum arithmetic the data path shares
// between the client and the datanode: a block is cut into chunks of
// bytes-per-checksum bytes (the last may be short), and each chunk
// carries the CRC32C (Castagnoli) of its bytes.
package chunks

import "github.com/blockfs/blockfs/internal/crc32c"

// Default is the chunk size when none is given.
const Default = 512

// Bounds of a chunk size: a power of two in [Min, Max].
const (
	Min = 64
	Max = 1 << 20
)

// CRC is the CRC32C of b.
func CRC(b []byte) uint32 { return crc32c.Checksum(b) }

// Update extends crc (a CRC32C so far) with b.
func Update(crc uint32, b []byte) uint32 { return crc32c.Update(crc, b) }

// Valid reports whether bpc is a usable chunk size.
func Valid(bpc int) bool { return bpc >= Min && bpc <= Max && bpc&(bpc-1) == 0 }

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
