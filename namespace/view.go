package namespace

import (
	"encoding/binary"
	"hash/crc32"
	"io"
	"runtime"
	"slices"
	"sync/atomic"

	"github.com/blockfs/blockfs/errs"
)

// A View is the tree as it was when Tree.View made it, frozen, for
// encoding the namespace image without holding the lock that guards the
// tree for the whole encode.
//
// It works by copy-on-write of the inodes the view can reach. While a view
// is open, every mutation first calls Tree.touch on each inode it is about
// to change; touch keeps, once per view, a shallow copy of the inode as it
// was (its pre-image) and gives the inode a fresh copy of its ext (with
// its own array of children chunk pointers) to change, leaving the old
// ones to the view; a chunk a view may hold is copied before it is changed
// (children.go). Block
// slices are already copy-on-write (see the package comment) and the
// inline block is in the inode, so a shallow copy freezes a file.
// Inodes created after the view (id at or above its next id) are
// never reachable from it and are never copied. The encoder reads an
// inode's pre-image when it has one, the inode itself otherwise; either
// way what it reads does not change under it, and the children chunks it
// walks are never written again. A view costs one copy of each inode changed
// while it is open, and nothing for the others.
//
// Locking: Tree.View and View.Close follow the write-lock rule (they
// register and unregister the view). Next and Encode need no lock of the
// tree's at all, and neither side ever waits for a lock of the other's.
// The encoder announces the inode it is about to copy (cur), then looks
// for its pre-image and copies that, or the live inode if there is none;
// touch first adds the pre-image, then waits while cur names the inode.
// Both are sequentially consistent atomics, so either the encoder finds
// the pre-image or touch sees the announcement and waits out one copy of
// 96 bytes: an inode the encoder copies live is one no writer has started
// to change. Only an inode's first change under a view does this; later
// ones find the pre-image and go straight on.
type View struct {
	t *Tree
	// pre holds the pre-images of inodes changed since the view was made
	// (added by touch, read by the encoder), and cur the inode the
	// encoder is copying, nil between copies.
	pre    preTable
	cur    atomic.Pointer[inode]
	closed bool
	epoch  uint64 // Tree.epoch when the view was made

	// The tree's limits, counters and counts when the view was made.
	lim                          Limits
	nextID                       ID
	nextBlockID, nextGenStamp    uint64
	numDirs, numFiles, numBlocks int

	// Encoder state.
	stage int // 0: header next, 1: inodes, 2: done
	stack []viewFrame
	crc   uint32

	// snap is the namespace snapshot section's state (hsnap_image.go).
	snap viewSnaps
}

// viewFrame is a directory being encoded: its children as the view sees
// them and the next one to encode.
type viewFrame struct {
	kids   children // frozen: the chunk pointers and the chunks are never written again
	next   kidPos
	parent ID
}

// View returns a view of the tree as it is now; see View. Call it under
// the write lock and Close the view (under the write lock too) when done:
// an open view makes every mutation keep pre-images.
func (t *Tree) View() *View {
	v := t.newView()
	t.views = append(t.views, v)
	t.epoch++
	v.epoch, t.frozen = t.epoch, t.epoch
	return v
}

// newView returns a view that is not registered with the tree: valid only
// while the tree does not change (the caller holds the read lock
// throughout).
func (t *Tree) newView() *View {
	return &View{
		t: t, lim: t.lim, nextID: t.nextID, nextBlockID: t.nextBlockID, nextGenStamp: t.nextGenStamp,
		numDirs: t.numDirs, numFiles: t.numFiles, numBlocks: t.numBlocks,
		stack: []viewFrame{{kids: children{chunks: []*kidChunk{{k: []*inode{t.root}}}, n: 1}}},
		snap:  viewSnaps{held: t.heldList(), any: len(t.snappable) > 0},
	}
}

// Close releases the view: later mutations keep no pre-images for it.
// Closing twice is harmless.
func (v *View) Close() {
	if v.closed {
		return
	}
	v.closed = true
	t := v.t
	if i := slices.Index(t.views, v); i >= 0 {
		t.views = slices.Delete(t.views, i, i+1)
	}
	t.frozen = 0
	for _, o := range t.views {
		t.frozen = max(t.frozen, o.epoch)
	}
	v.pre.reset()
	v.stack = nil
}

// touchSpins is how many times touch checks that the encoder has finished
// copying an inode before it yields its processor between checks, in case
// the encoder was descheduled in the middle of the copy.
const touchSpins = 1000

// touch is called by every mutation, under the write lock, before it
// changes n: each open view that can reach n and has no pre-image of it
// yet keeps a copy of n as it is, and n's ext (with a directory's array of
// chunk pointers, not the chunks) is replaced by a copy, so that the one
// the views hold is never written.
func (t *Tree) touch(n *inode) {
	if len(t.views) == 0 {
		return
	}
	fresh := false
	for _, v := range t.views {
		if n.id >= v.nextID || v.pre.get(n) != nil {
			continue // not in the view, or kept already
		}
		v.pre.add(n)
		// The encoder may have announced n before the pre-image was
		// there, and be copying it live: wait for that copy (see View).
		for i := 0; v.cur.Load() == n; i++ {
			if i >= touchSpins {
				runtime.Gosched()
			}
		}
		fresh = true
	}
	if fresh && n.ext != nil {
		n.ext = n.ext.clone()
	}
}

// Next appends the next part of the image to dst, about max bytes of it
// (at least one record), and returns the extended slice and whether the
// image is now complete. It takes no lock of the tree's (see View): writers
// may run during the call. Only one goroutine may drive a view's Next.
func (v *View) Next(dst []byte, max int) ([]byte, bool) {
	start := len(dst)
	if v.stage == 0 {
		dst = v.appendHeader(dst)
		v.stage = 1
	}
	for v.stage == 1 && len(dst)-start < max && (len(v.stack) > 0 || !v.snap.done) {
		if len(v.stack) == 0 {
			dst = v.appendSnapshots(dst) // pushes a snapshot's root, or ends the section
			continue
		}
		f := &v.stack[len(v.stack)-1]
		if f.next.ci == len(f.kids.chunks) {
			v.stack = v.stack[:len(v.stack)-1]
			continue
		}
		k := f.kids.chunks[f.next.ci].k[f.next.i]
		f.next = f.kids.next(f.next)
		// Copy the inode (its pre-image if it has one), encode the copy
		// after: what it points to is never written once a writer has
		// touched the inode (touch gives the live inode a new ext; names,
		// owner pairs and block slices are immutable or copy-on-write),
		// and until then no writer changes it (see View).
		v.cur.Store(k)
		var n inode
		if pre := v.pre.get(k); pre != nil {
			n = *pre
		} else {
			n = *k
		}
		v.cur.Store(nil)
		dst = appendInode(dst, &n, f.parent)
		if n.ext != nil && n.ext.snaps != nil {
			v.snap.dirs = append(v.snap.dirs, snapWork{dir: n.id, sd: n.ext.snaps})
		}
		if kids := n.kids(); kids.len() > 0 {
			v.stack = append(v.stack, viewFrame{kids: kids, parent: n.id})
		}
	}
	if v.stage == 1 && len(v.stack) == 0 && v.snap.done {
		dst = v.appendEnd(dst)
		v.crc = crc32.Update(v.crc, castagnoli, dst[start:])
		v.stage = 2
		return binary.LittleEndian.AppendUint32(dst, v.crc), true
	}
	v.crc = crc32.Update(v.crc, castagnoli, dst[start:])
	return dst, v.stage == 2
}

// viewSlice is about how much image Next adds per call, and viewWrite how
// much Encode gathers before writing to the sink.
const (
	viewSlice = 4 << 10
	viewWrite = 64 << 10
)

// Encode writes the whole image to w, in writes of about 64 KiB. It takes
// no lock of the tree's: writers run beside it and wait at most for the one
// record being read (see View). Only 64 KiB of the image is in memory at a
// time. Errors from w are errs.IO.
func (v *View) Encode(w io.Writer) error {
	buf := make([]byte, 0, viewWrite+viewSlice)
	for done := false; !done; {
		buf, done = v.Next(buf, viewSlice)
		if len(buf) < viewWrite && !done {
			continue
		}
		if _, err := w.Write(buf); err != nil {
			return errs.Wrap(errs.IO, "writeImage", "", err)
		}
		// Let whatever waits for this processor run (a request, an
		// apply): without it, it would wait for the encode to be
		// preempted, up to 10 ms.
		runtime.Gosched()
		buf = buf[:0]
		if cap(buf) > 4*viewWrite {
			buf = make([]byte, 0, viewWrite+viewSlice) // don't pin one huge file's record
		}
	}
	return nil
}
