// Package idrange hands out, one file at a time, the inode and block ids
// of the ranges a namenode reserved through Raft (fsm.CmdReserveIds) for
// PutFile: a small file then costs no Raft entry for its ids, only one
// per Count files.
package idrange

import (
	"context"
	"sync"
	"time"

	"github.com/blockfs/blockfs/errs"
)

// Range is one reservation as the FSM answered it.
type Range struct {
	FirstInode, FirstBlock, GenStamp, Count uint64
	Expires                                 time.Time // PutFile may use the ids until then
}

// IDs are Count files' of one range: file i has inode Inode+i and block
// Block+i, all under generation stamp GenStamp, and the range expires
// at Expires.
type IDs struct {
	Inode, Block, GenStamp, Count uint64
	Expires                       time.Time
}

// ReserveFunc reserves a new range.
type ReserveFunc func(ctx context.Context) (Range, error)

// Cursor hands out each id of its current range once, and reserves the
// next range when that one is used up or has less than margin left
// before it expires. One reservation is in flight at a time; the callers
// that need it meanwhile wait for it. Safe for concurrent use.
type Cursor struct {
	reserve ReserveFunc
	now     func() time.Time
	margin  time.Duration

	mu   sync.Mutex
	cur  Range
	next uint64        // offset in cur of the next id
	wait chan struct{} // closed when the reservation in flight ends; nil: none
}

// New returns a cursor reserving with reserve, reading the time with now
// and retiring a range margin before its expiry (the lifetime of the
// tokens that name its ids, so a token never outlives its range).
func New(reserve ReserveFunc, now func() time.Time, margin time.Duration) *Cursor {
	return &Cursor{reserve: reserve, now: now, margin: margin}
}

// Next returns the ids of the next n files (n >= 1), or of fewer, at
// least one, when the current range has fewer left: consecutive ids of
// one range. It reserves a range first if needed.
func (c *Cursor) Next(ctx context.Context, n uint64) (IDs, error) {
	n = max(n, 1)
	for {
		c.mu.Lock()
		if r := c.cur; c.next < r.Count && c.now().Add(c.margin).Before(r.Expires) {
			off := c.next
			k := min(n, r.Count-off)
			c.next += k
			c.mu.Unlock()
			return IDs{Inode: r.FirstInode + off, Block: r.FirstBlock + off, GenStamp: r.GenStamp, Count: k, Expires: r.Expires}, nil
		}
		if w := c.wait; w != nil {
			c.mu.Unlock()
			select {
			case <-w:
				continue
			case <-ctx.Done():
				return IDs{}, errs.Wrap(errs.Canceled, "idrange.Cursor.Next", "", ctx.Err())
			}
		}
		w := make(chan struct{})
		c.wait = w
		c.mu.Unlock()
		r, err := c.reserve(ctx)
		c.mu.Lock()
		if err == nil {
			c.cur, c.next = r, 0
		}
		c.wait = nil
		close(w)
		c.mu.Unlock()
		if err != nil {
			return IDs{}, err
		}
	}
}
