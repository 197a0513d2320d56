package lbm

// Record framing for the metadata log, self-contained (pebble "record"
// style): it knows nothing about containers, encryption or files.
//
//	frame := len u32 LE | crc32c(len bytes) u32 LE | body [len]byte | crc32c(body) u32 LE
//
// All CRCs are CRC-32C (Castagnoli).

import (
	"encoding/binary"
	"hash/crc32"
)

const (
	frameHeaderLen  = 8  // len + crc32c(len)
	frameTrailerLen = 4  // crc32c(body)
	frameOverhead   = 12 // header + trailer
	// maxFrameBody bounds the body length a reader accepts; a length with a
	// valid checksum above it is corruption, not a record.
	maxFrameBody = 1 << 16
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc32c(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// appendFrame appends the frame holding body to dst.
func appendFrame(dst, body []byte) []byte {
	var h [frameHeaderLen]byte
	binary.LittleEndian.PutUint32(h[0:4], uint32(len(body)))
	binary.LittleEndian.PutUint32(h[4:8], crc32c(h[0:4]))
	dst = append(dst, h[:]...)
	dst = append(dst, body...)
	return binary.LittleEndian.AppendUint32(dst, crc32c(body))
}

// frameLen returns the length of the frame holding a body of n bytes.
func frameLen(n int) int { return n + frameOverhead }

// decodeFrameHeader checks an 8-byte frame header and returns the body
// length it declares; ok is false when the length checksum does not match.
func decodeFrameHeader(h []byte) (n uint32, ok bool) {
	_ = h[7]
	n = binary.LittleEndian.Uint32(h[0:4])
	return n, binary.LittleEndian.Uint32(h[4:8]) == crc32c(h[0:4])
}

// checkFrameBody checks body+crc (the bytes after the header) and returns
// the body; ok is false on a checksum mismatch.
func checkFrameBody(rest []byte) (body []byte, ok bool) {
	n := len(rest) - frameTrailerLen
	body = rest[:n]
	return body, binary.LittleEndian.Uint32(rest[n:]) == crc32c(body)
}

// frameStatus is the outcome of reading one frame.
type frameStatus uint8

const (
	frameOK         frameStatus = iota
	frameEOF                    // clean end of the log
	frameZeroTail               // all-zero bytes from here to the end: a crash tail
	frameTruncated              // a frame cut short by the end of the file
	frameBadLenCRC              // length checksum mismatch: corruption
	frameBadLen                 // checksummed length out of range: corruption
	frameBadBodyCRC             // body checksum mismatch: corruption
)

func (s frameStatus) String() string {
	return [...]string{"ok", "eof", "zero tail", "truncated record",
		"length checksum mismatch", "record length out of range",
		"body checksum mismatch"}[s]
}

// zeroFrom returns the smallest i such that b[i:] is all zero.
func zeroFrom(b []byte) int {
	i := len(b)
	for i >= 8 && binary.LittleEndian.Uint64(b[i-8:i]) == 0 {
		i -= 8
	}
	for i > 0 && b[i-1] == 0 {
		i--
	}
	return i
}

// nextFrame decodes the frame at buf[p:]. plain holds the decoded bytes
// (for plain files it is the same slice as the on-disk bytes) and zero is
// zeroFrom of the ON-DISK bytes: a region that is zero on disk is a crash
// tail whatever it would decrypt to. It returns the body, the offset of the
// next frame and the status; body aliases plain (no allocation).
func nextFrame(plain []byte, zero, p int) (body []byte, next int, st frameStatus) {
	size := len(plain)
	switch {
	case p >= size:
		return nil, p, frameEOF
	case p >= zero:
		return nil, p, frameZeroTail
	case size-p < frameHeaderLen:
		return nil, p, frameTruncated
	}
	n, ok := decodeFrameHeader(plain[p : p+frameHeaderLen])
	if !ok {
		return nil, p, frameBadLenCRC
	}
	if n > maxFrameBody {
		return nil, p, frameBadLen
	}
	end := p + frameLen(int(n))
	if end > size {
		return nil, p, frameTruncated
	}
	body, ok = checkFrameBody(plain[p+frameHeaderLen : end])
	if !ok {
		if p+frameHeaderLen >= zero {
			// Header persisted, body never did: still a crash tail.
			return nil, p, frameZeroTail
		}
		return nil, p, frameBadBodyCRC
	}
	return body, end, frameOK
}
