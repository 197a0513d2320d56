package namespace

// Byte ranges of a file's blocks, for the readers of its locations.

// RangeEnd is where a read of length bytes (0: to the end) from off stops
// in a file of fileLen bytes: off+length or the end of the file, whichever
// comes first. off <= fileLen (checked before), so the subtraction cannot
// wrap, and an off+length past 2^64 is simply past the end.
func RangeEnd(off, length, fileLen uint64) uint64 {
	if length > 0 && off <= fileLen && length < fileLen-off {
		return off + length
	}
	return fileLen
}

// Overlapping returns the index range [first, last) of the blocks that
// overlap [off, end). withLast forces the last block in (an under-
// construction block whose length is not known yet).
func Overlapping(bs []Block, off, end uint64, withLast bool) (int, int) {
	first, last := len(bs), 0
	var pos uint64
	for i, b := range bs {
		bEnd := pos + b.Length
		if bEnd > off && pos < end {
			first, last = min(first, i), i+1
		}
		pos = bEnd
		if pos >= end && !withLast {
			break
		}
	}
	if withLast && len(bs) > 0 {
		first, last = min(first, len(bs)-1), len(bs)
	}
	if last <= first {
		return 0, 0
	}
	return first, last
}

// BlockOffset returns the file offset of block i.
func BlockOffset(bs []Block, i int) uint64 {
	var pos uint64
	for _, b := range bs[:i] {
		pos += b.Length
	}
	return pos
}
