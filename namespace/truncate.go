package namespace

import (
	"slices"

	"github.com/blockfs/blockfs/errs"
)

// Truncated is the answer of Session.Truncate.
type Truncated struct {
	File FileInfo
	// Done: newLength fell on a block boundary (or the file's end), and the
	// file is closed at it. Otherwise the file is under construction by
	// the caller, and Last, cut to its new length (no CRC: it changes), is
	// left for block recovery to cut on the datanodes (CommitRecovery
	// closes the file).
	Done bool
	Last Block
	// Dropped are the whole blocks past newLength, no longer the file's.
	Dropped []Block
	// CopyOf, set when the cut falls inside a block a snapshot holds
	// (HDFS's copy-on-truncate), is that block, left whole for the
	// snapshot: Last is then a new block, to be made on the datanodes
	// from CopyOf's first Last.Length bytes, and CopyOf is in Dropped
	// (held, not deleted).
	CopyOf Block
}

// Truncate cuts the closed file p to newLength bytes, HDFS's truncate: the
// caller needs Exec on the ancestors and Write on the file; a directory is
// IsDir, a file under construction Precondition, a newLength below 0 or
// above the file's length Invalid. Whole blocks past newLength are
// dropped. When newLength is inside a block, the file becomes under
// construction by the caller (client id and user, as Create records the
// writer), with that block's length newLength minus its offset.
func (s Session) Truncate(path Path, newLength int64, mtimeMs int64) (Truncated, error) {
	op, p, c := s.op, path.s, s.c
	if newLength < 0 {
		return Truncated{}, errs.Newf(errs.Invalid, op, p, "Cannot truncate to a negative file size: %d.", newLength)
	}
	f, err := s.t.lookupAs(c, op, path)
	if err != nil {
		return Truncated{}, err
	}
	if f.dir() {
		return Truncated{}, errs.Newf(errs.IsDir, op, p, "Path is not a file: %s", p)
	}
	if err := c.check(op, p, f, p, Write, "truncate needs write access"); err != nil {
		return Truncated{}, err
	}
	if w := f.writer(); w != nil {
		return Truncated{}, errs.Newf(errs.Precondition, op, p, "AlreadyBeingCreated: %s is open for writing (user %s): truncate needs a closed file", p, w.User)
	}
	if l := f.length(); uint64(newLength) > l {
		return Truncated{}, errs.Newf(errs.Invalid, op, p, "Cannot truncate to a larger file size. Current size: %d, truncate size: %d.", l, newLength)
	}
	var one [1]Block
	bs := f.blockList(&one)
	var off uint64
	k := 0 // blocks kept
	for k < len(bs) && off < uint64(newLength) {
		off += bs[k].Length
		k++
	}
	out := Truncated{Done: off == uint64(newLength)}
	out.Dropped = slices.Clone(bs[k:])
	kept := slices.Clone(bs[:k])
	if !out.Done {
		last := &kept[k-1]
		if s.t.snapRefs[last.ID] > 0 {
			// Cutting the replicas would cut what the snapshot reads:
			// the file's last block becomes a copy of the prefix, under
			// a new id (HDFS's copy-on-truncate).
			out.CopyOf = *last
			out.Dropped = append([]Block{*last}, out.Dropped...)
			id, gs := s.t.AllocBlock()
			*last = Block{ID: id, GenStamp: gs, Length: last.Length}
			s.t.blocks.put(id, f.id)
		}
		last.Length -= off - uint64(newLength)
		last.CRC, last.HasCRC = 0, false
		out.Last = *last
	}
	s.t.touch(f)
	before := fileSpace(f)
	f.setBlocks(kept, uint64(newLength))
	for _, b := range out.Dropped {
		s.t.dropBlock(f, b) // a snapshot's blocks become held, not deleted
	}
	s.t.numBlocks -= len(out.Dropped)
	if out.CopyOf.ID != 0 {
		s.t.numBlocks++ // the copy
	}
	f.mtime = mtimeMs
	if !out.Done {
		var w Writer
		if c != nil {
			w = Writer{Client: c.Client, User: c.User}
		}
		f.open(&w)
	}
	chargeSpace(f, before)
	out.File = f.info(p)
	return out, nil
}
