package lbm

import (
	"errors"
	"io"

	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/base/chunks"
)

// replayState is the container-local result of replay, merged once.
type replayState struct {
	path     string
	dataSize int64
	blocks   map[uint64]blockEntry
	created  int
	next     int64
	records  int64
	rbws     map[uint64]createRec // standing RBW records, by id
	c        *container
}

// apply decodes one record body (fixed layout, no allocation) at off.
func (r *replayState) apply(body []byte, off int64) error {
	r.records++
	switch {
	case (len(body) == createBodyLen && body[0] == recCreate) ||
		(len(body) == create2BodyLen && body[0] == recCreate2):
		var c createRec
		decodeCreate(body, &c)
		if body[0] == recCreate2 && !chunks.Valid(int(c.BPC)) {
			return errs.Newf(errs.Corrupt, "lbm.Open", r.path,
				"CREATE2 of block %d at offset %d: bytes per checksum %d", c.ID, off, c.BPC)
		}
		// An empty block writes no bytes, so its (aligned) offset may lie
		// at or past the end of the data file (regression test
		// TestZeroLengthBlockSurvivesReopen).
		span := c.Length + tableLen(c.Length, c.BPC)
		if c.Offset < firstBlockOffset || c.Offset%fsBlockSize != 0 || c.Length < 0 || c.Length > 1<<50 ||
			(c.Length > 0 && c.Offset+span > r.dataSize) || c.Offset+span < c.Offset {
			return errs.Newf(errs.Corrupt, "lbm.Open", r.path,
				"malformed CREATE of block %d at offset %d (block [%d,+%d), data file %d bytes)",
				c.ID, off, c.Offset, c.Length, r.dataSize)
		}
		if prev, dup := r.blocks[c.ID]; dup && prev.gen >= c.GenStamp {
			return errs.Newf(errs.Corrupt, "lbm.Open", r.path,
				"second CREATE of live block %d at offset %d (generation stamp %d, live %d)", c.ID, off, c.GenStamp, prev.gen)
		}
		// A CREATE of a block live here with a lower generation stamp is a
		// Replace commit: it supersedes the older version, whose extent is
		// garbage (its CREATE counts as dead for compaction).
		e := c.entry(r.c)
		r.blocks[c.ID] = e
		delete(r.rbws, c.ID) // the writer committed
		r.created++
		r.next = max(r.next, c.Offset+e.extent())
	case len(body) == rbwBodyLen && body[0] == recRBW:
		var c createRec
		decodeCreate(body, &c)
		if !chunks.Valid(int(c.BPC)) || c.Offset < firstBlockOffset || c.Offset%fsBlockSize != 0 ||
			c.Length < 0 || c.Length > 1<<50 || (c.Length > 0 && c.Offset+c.Length > r.dataSize) {
			return errs.Newf(errs.Corrupt, "lbm.Open", r.path,
				"malformed RBW of block %d at offset %d (bytes [%d,+%d), bytes per checksum %d, data file %d bytes)",
				c.ID, off, c.Offset, c.Length, c.BPC, r.dataSize)
		}
		// The last RBW of an id stands (until a CREATE or an RBW-drop);
		// its bytes keep their range either way (CTR keystream).
		if r.rbws == nil {
			r.rbws = map[uint64]createRec{}
		}
		r.rbws[c.ID] = c
		r.next = max(r.next, alignUp(c.Offset+c.Length))
	case len(body) == rbwDropBodyLen && body[0] == recRBWDrop:
		id, gen := decodeRBWDrop(body)
		if cur, ok := r.rbws[id]; ok && cur.GenStamp <= gen {
			delete(r.rbws, id)
		}
	case len(body) == deleteBodyLen && body[0] == recDelete:
		id := decodeDelete(body)
		if _, ok := r.blocks[id]; !ok {
			return errs.Newf(errs.Corrupt, "lbm.Open", r.path, "DELETE of unknown block %d at offset %d", id, off)
		}
		delete(r.blocks, id)
	default:
		return errs.Newf(errs.Corrupt, "lbm.Open", r.path, "unknown record (type %d, %d bytes) at offset %d", body[0], len(body), off)
	}
	return nil
}

func corruptAt(path string, off int64, st frameStatus) error {
	return errs.Newf(errs.Corrupt, "lbm.Open", path, "metadata record at offset %d: %s", off, st)
}

// replayInmem: ONE ReadAt of the whole file, then parse from memory. The
// zero tail is located on the ciphertext before the one CTR pass that
// decrypts the records region in place.
func (s *Store) replayInmem(c *container, st *replayState, size int64) (end int64, tail frameStatus, hdrOK bool, err error) {
	buf := make([]byte, size)
	if n, err := c.meta.ReadAt(buf, 0); int64(n) < size {
		return 0, 0, false, errs.Wrap(errs.IO, "lbm.Open", c.metaPath, errors.Join(io.ErrUnexpectedEOF, err))
	}
	hdrLen, fc, sealed, ok, err := s.parseHeaders(c, buf)
	if err != nil || !ok {
		return 0, 0, ok, err
	}
	c.metaFC, c.sealed = fc, sealed
	zero := zeroFrom(buf) // on the ciphertext
	if fc != nil {
		fc.xorAt(buf[hdrLen:], buf[hdrLen:], hdrLen)
	}
	p := int(hdrLen)
	for {
		body, next, fs := nextFrame(buf, zero, p)
		switch fs {
		case frameOK:
			if err := st.apply(body, int64(p)); err != nil {
				return 0, 0, true, err
			}
			p = next
			continue
		case frameEOF, frameZeroTail, frameTruncated:
			return int64(p), fs, true, nil
		default:
			return 0, 0, true, corruptAt(c.metaPath, int64(p), fs)
		}
	}
}

// replayStreaming: per record, a read of the 8-byte frame header and one
// of body+crc, each decrypted at its own offset. With StreamingPread each
// read is a ReadAt of the file (Kudu's path); with StreamingBuffered it is
// served from a readahead window (replay_buffered.go), so the two readers
// share this parser and its tail and corruption rules. A frame whose
// on-disk bytes are zero to EOF is a crash tail.
func (s *Store) replayStreaming(c *container, st *replayState, size int64, mode StreamingMode) (end int64, tail frameStatus, hdrOK bool, err error) {
	path := c.metaPath
	var readAt func(b []byte, off int64) error
	if mode == StreamingBuffered {
		readAt = newReadahead(c.meta, path, size).readAt
	} else {
		readAt = func(b []byte, off int64) error { return preadFull(c.meta, path, b, off) }
	}
	hb := make([]byte, min(size, encHeaderLen+fileHeaderLen))
	if err := readAt(hb, 0); err != nil {
		return 0, 0, false, err
	}
	hdrLen, fc, sealed, ok, err := s.parseHeaders(c, hb)
	if err != nil || !ok {
		return 0, 0, ok, err
	}
	c.metaFC, c.sealed = fc, sealed
	// restZero reports whether the file is all zero from off to EOF, in
	// bounded reads (only ever reached at a tail).
	restZero := func(off int64) (bool, error) {
		var chunk []byte
		for off < size {
			n := min(size-off, 1<<20)
			if chunk == nil {
				chunk = make([]byte, n)
			}
			b := chunk[:n]
			if err := readAt(b, off); err != nil {
				return false, err
			}
			if zeroFrom(b) != 0 {
				return false, nil
			}
			off += n
		}
		return true, nil
	}
	var hdr [frameHeaderLen]byte
	var body []byte
	p := hdrLen
	for {
		if p == size {
			return p, frameEOF, true, nil
		}
		if size-p < frameHeaderLen {
			z, err := restZero(p)
			if err != nil {
				return 0, 0, true, err
			}
			if z {
				return p, frameZeroTail, true, nil
			}
			return p, frameTruncated, true, nil
		}
		if err := readAt(hdr[:], p); err != nil {
			return 0, 0, true, err
		}
		if zeroFrom(hdr[:]) == 0 {
			z, err := restZero(p + frameHeaderLen)
			if err != nil {
				return 0, 0, true, err
			}
			if z {
				return p, frameZeroTail, true, nil
			}
		}
		if fc != nil {
			fc.xorAt(hdr[:], hdr[:], p)
		}
		n, ok := decodeFrameHeader(hdr[:])
		if !ok {
			return 0, 0, true, corruptAt(path, p, frameBadLenCRC)
		}
		if n > maxFrameBody {
			return 0, 0, true, corruptAt(path, p, frameBadLen)
		}
		end := p + int64(frameLen(int(n)))
		if end > size {
			return p, frameTruncated, true, nil
		}
		rest := int(n) + frameTrailerLen
		if cap(body) < rest {
			body = make([]byte, rest, max(rest, 256))
		}
		body = body[:rest]
		if err := readAt(body, p+frameHeaderLen); err != nil {
			return 0, 0, true, err
		}
		rawZero := zeroFrom(body) == 0
		if fc != nil {
			fc.xorAt(body, body, p+frameHeaderLen)
		}
		b, ok := checkFrameBody(body)
		if !ok {
			if rawZero {
				z, err := restZero(end)
				if err != nil {
					return 0, 0, true, err
				}
				if z {
					return p, frameZeroTail, true, nil
				}
			}
			return 0, 0, true, corruptAt(path, p, frameBadBodyCRC)
		}
		if err := st.apply(b, p); err != nil {
			return 0, 0, true, err
		}
		p = end
	}
}
