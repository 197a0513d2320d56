package namespace

import (
	"encoding/binary"
	"hash/crc32"
	"io"
	"slices"

	"github.com/blockfs/blockfs/errs"
)

// A View is the tree as it was when Tree.View made it, frozen, for
// encoding the namespace image without holding the lock that guards the
// tree for the whole encode.
//
// It works by copy-on-write of the inodes the view can reach. While a view
// is open, every mutation first calls Tree.touch on each inode it is about
// to change; touch keeps, once per view, a shallow copy of the inode as it
// was (its pre-image) and gives the inode a fresh copy of its ext (with a
// fresh children slice) to change, leaving the old ones to the view. Block
// slices are already copy-on-write (see the package comment) and the
// inline block is in the inode, so a shallow copy freezes a file.
// Inodes created after the view (id at or above its next id) are
// never reachable from it and are never copied. The encoder reads an
// inode's pre-image when it has one, the inode itself otherwise; either
// way what it reads does not change under it while it holds the read lock,
// and the children slices it walks between slices of work are never written
// again. A view costs one copy of each inode changed while it is open, and
// nothing for the others.
//
// Locking: Tree.View and View.Close follow the write-lock rule (they
// register and unregister the view), View.Next the read-lock rule; between
// calls to Next the lock may be released and writers may run. Encode
// drives Next in slices under a caller-supplied lock.
type View struct {
	t      *Tree
	saved  map[*inode]*inode // pre-images of inodes changed since the view; nil for an unregistered view
	closed bool

	// The tree's limits, counters and counts when the view was made.
	lim                          Limits
	nextID                       ID
	nextBlockID, nextGenStamp    uint64
	numDirs, numFiles, numBlocks int

	// Encoder state.
	stage int // 0: header next, 1: inodes, 2: done
	stack []viewFrame
	crc   uint32
}

// viewFrame is a directory being encoded: its children as the view sees
// them and the next one to encode.
type viewFrame struct {
	kids   []*inode
	next   int
	parent ID
}

// View returns a view of the tree as it is now; see View. Call it under
// the write lock and Close the view (under the write lock too) when done:
// an open view makes every mutation keep pre-images.
func (t *Tree) View() *View {
	v := t.newView()
	v.saved = map[*inode]*inode{}
	t.views = append(t.views, v)
	return v
}

// newView returns a view that is not registered with the tree: valid only
// while the tree does not change (the caller holds the read lock
// throughout).
func (t *Tree) newView() *View {
	return &View{
		t: t, lim: t.lim, nextID: t.nextID, nextBlockID: t.nextBlockID, nextGenStamp: t.nextGenStamp,
		numDirs: t.numDirs, numFiles: t.numFiles, numBlocks: t.numBlocks,
		stack: []viewFrame{{kids: []*inode{t.root}}},
	}
}

// Close releases the view: later mutations keep no pre-images for it.
// Closing twice is harmless.
func (v *View) Close() {
	if v.closed {
		return
	}
	v.closed = true
	if i := slices.Index(v.t.views, v); i >= 0 {
		v.t.views = slices.Delete(v.t.views, i, i+1)
	}
	v.saved, v.stack = nil, nil
}

// touch is called by every mutation, under the write lock, before it
// changes n: each open view that can reach n and has no pre-image of it
// yet keeps a copy of n as it is, and n's ext (with a directory's
// children slice) is replaced by a copy, so that the one the views hold is
// never written.
func (t *Tree) touch(n *inode) {
	if len(t.views) == 0 {
		return
	}
	fresh := false
	for _, v := range t.views {
		if n.id >= v.nextID || v.saved[n] != nil {
			continue
		}
		pre := *n
		v.saved[n] = &pre
		fresh = true
	}
	if fresh && n.ext != nil {
		n.ext = n.ext.clone()
	}
}

// rec returns inode n as the view sees it.
func (v *View) rec(n *inode) *inode {
	if pre := v.saved[n]; pre != nil {
		return pre
	}
	return n
}

// Next appends the next part of the image to dst, about max bytes of it
// (at least one record), and returns the extended slice and whether the
// image is now complete. The caller holds the read lock during the call.
func (v *View) Next(dst []byte, max int) ([]byte, bool) {
	start := len(dst)
	if v.stage == 0 {
		dst = v.appendHeader(dst)
		v.stage = 1
	}
	for v.stage == 1 && len(dst)-start < max && len(v.stack) > 0 {
		f := &v.stack[len(v.stack)-1]
		if f.next == len(f.kids) {
			v.stack = v.stack[:len(v.stack)-1]
			continue
		}
		n := v.rec(f.kids[f.next])
		f.next++
		dst = appendInode(dst, n, f.parent)
		if kids := n.kids(); len(kids) > 0 {
			v.stack = append(v.stack, viewFrame{kids: kids, parent: n.id})
		}
	}
	if v.stage == 1 && len(v.stack) == 0 {
		dst = v.appendEnd(dst)
		v.crc = crc32.Update(v.crc, castagnoli, dst[start:])
		v.stage = 2
		return binary.LittleEndian.AppendUint32(dst, v.crc), true
	}
	v.crc = crc32.Update(v.crc, castagnoli, dst[start:])
	return dst, v.stage == 2
}

// viewSlice is the image bytes Encode produces per hold of the lock: at
// about 100 bytes an inode, some 40 inodes, a few microseconds, so a
// writer waits at most that long. viewWrite is how much it gathers before
// writing to the sink.
const (
	viewSlice = 4 << 10
	viewWrite = 64 << 10
)

// Encode writes the whole image to w. Each slice of about 4 KiB is encoded
// inside a call of locked (which takes the read lock, runs its argument and
// releases the lock); the slices are written to w in writes of about 64
// KiB, outside the lock. A nil locked runs the slices directly (the caller
// holds the lock). Only 64 KiB of the image is in memory at a time. Errors
// from w are errs.IO.
func (v *View) Encode(w io.Writer, locked func(func())) error {
	if locked == nil {
		locked = func(f func()) { f() }
	}
	buf := make([]byte, 0, viewWrite+viewSlice)
	for done := false; !done; {
		locked(func() { buf, done = v.Next(buf, viewSlice) })
		if len(buf) < viewWrite && !done {
			continue
		}
		if _, err := w.Write(buf); err != nil {
			return errs.Wrap(errs.IO, "writeImage", "", err)
		}
		buf = buf[:0]
		if cap(buf) > 4*viewWrite {
			buf = make([]byte, 0, viewWrite+viewSlice) // don't pin one huge file's record
		}
	}
	return nil
}
