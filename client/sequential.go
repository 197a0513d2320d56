package client

import (
	"io"

	"github.com/blockfs/blockfs/errs"
)

// sequential holds the streams of a Reader's sequential reads: cur reads
// the block at the Reader's position, next is the following block,
// opened ahead.
type sequential struct {
	cur, next *cursor
}

// cursor is a stream over the rest of one block from start.
type cursor struct {
	block int   // index into the locations
	at    int64 // file offset of the next byte the stream gives
	end   int64 // file offset of the block's end
	s     *replicaStream
	// version is the Reader's version of the locations the stream was
	// opened from (Reader.commit).
	version int
}

// read reads at r.pos from the streams, opening or advancing them.
func (q *sequential) read(r *Reader, p []byte) (int, error) {
	if q.cur == nil || q.cur.at != r.pos {
		q.drop()
		c, err := r.openCursor(r.pos)
		if err != nil {
			return 0, err
		}
		q.cur = c
	}
	if q.cur.at == q.cur.end {
		q.cur.s.close()
		q.cur, q.next = q.next, nil
		if q.cur == nil || q.cur.at != r.pos {
			return q.read(r, p)
		}
	}
	if q.next == nil && q.cur.end < r.size() {
		q.next, _ = r.openCursor(q.cur.end) // a failure shows when it is read
	}
	n, err := q.cur.s.read(p[:min(int64(len(p)), q.cur.end-q.cur.at)])
	q.cur.at += int64(n)
	if err == io.EOF && n == 0 {
		err = errs.Newf(errs.Unavailable, "client.Reader.Read", r.path, "stream ended early at %d", q.cur.at)
	}
	if err == io.EOF {
		err = nil
	}
	return n, err
}

// drop ends both streams.
func (q *sequential) drop() {
	for _, c := range []*cursor{q.cur, q.next} {
		if c != nil {
			c.s.close()
		}
	}
	q.cur, q.next = nil, nil
}

// openCursor opens a stream on the first replica of the block holding
// file offset off, from off to the block's end.
func (r *Reader) openCursor(off int64) (*cursor, error) {
	locs, version := r.currentV()
	for i, lb := range locs.Blocks {
		start, n := int64(lb.Offset), int64(lb.Block.Length)
		if off < start || off >= start+n {
			continue
		}
		if len(lb.Locations) == 0 {
			return nil, errs.Newf(errs.Unavailable, "client.Reader.Read", r.path, "block %d has no live replica", lb.Block.Id)
		}
		token := lb.Token
		if len(token) == 0 {
			token = locs.Token
		}
		s, err := r.c.openReplica(r.ctx, lb.Locations[0], lb.Block, locs.InodeId, token, off-start, start+n-off)
		if err != nil {
			return nil, err
		}
		return &cursor{block: i, at: off, end: start + n, s: s, version: version}, nil
	}
	return nil, errs.Newf(errs.Invalid, "client.Reader.Read", r.path, "offset %d is in no block", off)
}

// blockEnd is the file offset where the block holding off ends.
func (r *Reader) blockEnd(off int64) int64 {
	for _, lb := range r.current().Blocks {
		if end := int64(lb.Offset + lb.Block.Length); off >= int64(lb.Offset) && off < end {
			return end
		}
	}
	return r.size()
}
