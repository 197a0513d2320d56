package crashtest

import (
	"crypto/sha256"
	"encoding/binary"
)

// BlockSize is the block size the crash suite writes files with.
const BlockSize = 4096

// Size returns the length of the file called name: 1 to 4 blocks of
// BlockSize, the last one partial, chosen by the name's hash.
func Size(name string) int {
	h := sha256.Sum256([]byte("size:" + name))
	v := binary.LittleEndian.Uint64(h[:8])
	blocks := 1 + int(v%4)
	return (blocks-1)*BlockSize + 1 + int((v>>8)%BlockSize)
}

// Content returns the n-byte content of the file called name: the stream
// sha256(name ‖ 0) ‖ sha256(name ‖ 1) ‖ ..., so a reader can check a file
// knowing only its name.
func Content(name string, n int) []byte {
	out := make([]byte, 0, n+sha256.Size)
	buf := make([]byte, len(name)+8)
	copy(buf, name)
	for i := uint64(0); len(out) < n; i++ {
		binary.LittleEndian.PutUint64(buf[len(name):], i)
		h := sha256.Sum256(buf)
		out = append(out, h[:]...)
	}
	return out[:n]
}
