package lbm

import (
	"encoding/binary"
)

// Fixed little-endian layouts of the on-disk structures (see doc.go and
// docs/FORMATS.md). Decoders never allocate.

const (
	fsBlockSize = 4096 // blocks start on multiples of this in a data file

	metaMagic     = "BFSLBMM1"
	dataMagic     = "BFSLBMD1"
	fileHeaderLen = 16 // magic 8 | version u16 | flags u16 | crc32c(0..12) u32
	formatVersion = 1

	flagSealed = 1 << 0 // metadata header: container is full forever

	recCreate  = 1 // old format: no chunk CRC table
	recDelete  = 2
	recCreate2 = 3 // chunked format: a chunk CRC table follows the block
	recRBW     = 4 // a replica being written, synced: its bytes so far
	recRBWDrop = 5 // a replica being written is gone (dropped or recovered)

	createBodyLen  = 56
	create2BodyLen = 64
	deleteBodyLen  = 16
	rbwBodyLen     = 64
	rbwDropBodyLen = 24

	firstBlockOffset = fsBlockSize // data file header lives in block 0
)

func alignUp(n int64) int64 { return (n + fsBlockSize - 1) &^ (fsBlockSize - 1) }

func encodeFileHeader(dst []byte, magic string, flags uint16) {
	copy(dst[0:8], magic)
	binary.LittleEndian.PutUint16(dst[8:10], formatVersion)
	binary.LittleEndian.PutUint16(dst[10:12], flags)
	binary.LittleEndian.PutUint32(dst[12:16], crc32c(dst[0:12]))
}

// decodeFileHeader validates a 16-byte file header.
func decodeFileHeader(b []byte, magic string) (flags uint16, ok bool) {
	if len(b) < fileHeaderLen || string(b[0:8]) != magic ||
		binary.LittleEndian.Uint32(b[12:16]) != crc32c(b[0:12]) ||
		binary.LittleEndian.Uint16(b[8:10]) != formatVersion {
		return 0, false
	}
	return binary.LittleEndian.Uint16(b[10:12]), true
}

// createRec is the decoded CREATE or CREATE2 body. BPC (bytes per
// checksum) is 0 for a CREATE (old format, no chunk table).
type createRec struct {
	ID, Inode, GenStamp uint64
	Offset, Length      int64
	CRC                 uint32
	TimestampUS         int64
	BPC                 uint32
}

// CREATE body, 56 bytes:
//
//	0 type u8 (=1) | 1..4 zero | 4 crc32c(block bytes) u32 | 8 block id u64 |
//	16 inode u64 | 24 genstamp u64 | 32 offset u64 | 40 length u64 |
//	48 timestamp (µs since epoch) i64
//
// CREATE2 body, 64 bytes: the same 56 bytes with type 3, then
//
//	56 bytes per checksum u32 | 60 zero[4]
//
// appendCreate writes a CREATE2 when r.BPC != 0, else a CREATE.
func appendCreate(dst []byte, r *createRec) []byte {
	if r.BPC == 0 {
		b := putCreateBody(recCreate, r)
		return appendFrame(dst, b[:createBodyLen])
	}
	b := putCreateBody(recCreate2, r)
	return appendFrame(dst, b[:])
}

// putCreateBody lays out the body CREATE, CREATE2 and RBW share: type
// typ, then r's fields, bytes per checksum at 56 (zero when r.BPC is).
func putCreateBody(typ byte, r *createRec) [create2BodyLen]byte {
	var b [create2BodyLen]byte
	b[0] = typ
	binary.LittleEndian.PutUint32(b[4:8], r.CRC)
	binary.LittleEndian.PutUint64(b[8:16], r.ID)
	binary.LittleEndian.PutUint64(b[16:24], r.Inode)
	binary.LittleEndian.PutUint64(b[24:32], r.GenStamp)
	binary.LittleEndian.PutUint64(b[32:40], uint64(r.Offset))
	binary.LittleEndian.PutUint64(b[40:48], uint64(r.Length))
	binary.LittleEndian.PutUint64(b[48:56], uint64(r.TimestampUS))
	binary.LittleEndian.PutUint32(b[56:60], r.BPC)
	return b
}

// decodeCreate decodes a CREATE (56 bytes) or CREATE2 (64 bytes) body.
func decodeCreate(b []byte, r *createRec) {
	_ = b[createBodyLen-1]
	r.BPC = 0
	if len(b) >= create2BodyLen {
		r.BPC = binary.LittleEndian.Uint32(b[56:60])
	}
	r.CRC = binary.LittleEndian.Uint32(b[4:8])
	r.ID = binary.LittleEndian.Uint64(b[8:16])
	r.Inode = binary.LittleEndian.Uint64(b[16:24])
	r.GenStamp = binary.LittleEndian.Uint64(b[24:32])
	r.Offset = int64(binary.LittleEndian.Uint64(b[32:40]))
	r.Length = int64(binary.LittleEndian.Uint64(b[40:48]))
	r.TimestampUS = int64(binary.LittleEndian.Uint64(b[48:56]))
}

// DELETE body, 16 bytes: 0 type u8 (=2) | 1..8 zero | 8 block id u64.
func appendDelete(dst []byte, id uint64) []byte {
	var b [deleteBodyLen]byte
	b[0] = recDelete
	binary.LittleEndian.PutUint64(b[8:16], id)
	return appendFrame(dst, b[:])
}

func decodeDelete(b []byte) uint64 {
	_ = b[deleteBodyLen-1]
	return binary.LittleEndian.Uint64(b[8:16])
}

// RBW body, 64 bytes: the CREATE2 layout with type 4; length is the bytes
// written so far (synced), crc32c covers them, and no chunk CRC table
// follows them in the data file.
//
//	0 type u8 (=4) | 1..4 zero | 4 crc32c(bytes) u32 | 8 block id u64 |
//	16 inode u64 | 24 genstamp u64 | 32 offset u64 | 40 length u64 |
//	48 timestamp (µs since epoch) i64 | 56 bytes per checksum u32 | 60 zero[4]
func appendRBW(dst []byte, r *createRec) []byte {
	b := putCreateBody(recRBW, r) // rbwBodyLen == create2BodyLen
	return appendFrame(dst, b[:])
}

// RBW-drop body, 24 bytes: 0 type u8 (=5) | 1..8 zero | 8 block id u64 |
// 16 genstamp u64 (of the RBW record it drops).
func appendRBWDrop(dst []byte, id, gen uint64) []byte {
	var b [rbwDropBodyLen]byte
	b[0] = recRBWDrop
	binary.LittleEndian.PutUint64(b[8:16], id)
	binary.LittleEndian.PutUint64(b[16:24], gen)
	return appendFrame(dst, b[:])
}

func decodeRBWDrop(b []byte) (id, gen uint64) {
	_ = b[rbwDropBodyLen-1]
	return binary.LittleEndian.Uint64(b[8:16]), binary.LittleEndian.Uint64(b[16:24])
}
