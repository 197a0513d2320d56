package namespace

import (
	"iter"
	"slices"
)

// chunkMax is the most children a chunk holds.
const chunkMax = 128

// children is a directory's children, sorted by name (byte order), in
// chunks of 1 to chunkMax. Chunks are what make a snapshot cheap in a big
// directory: touch gives the live directory its own copy of the chunk
// pointers (n/chunkMax of them) and leaves the chunks to the views; a
// mutation then copies only the chunk it changes, and only if an open view
// may hold it (kidChunk.epoch). A flat slice had to be copied whole on a
// directory's first change under each view: 8 KB at 1000 children, 8 MB
// at a million, all of it while the writer held the namespace's lock.
//
// The zero value is an empty directory.
type children struct {
	chunks []*kidChunk
	n      int
}

// kidChunk is a run of children. A chunk whose epoch is below the tree's
// frozen epoch may be held by an open view and is never written again: a
// mutation changes a copy (Tree.writableChunk).
type kidChunk struct {
	epoch uint64
	k     []*inode // 1 to chunkMax, sorted by name
}

// kidPos is a child's position: chunk ci, index i in it. From find, an
// absent name's position is where it would be inserted (i may equal the
// chunk's length).
type kidPos struct{ ci, i int }

// len returns the number of children.
func (c children) len() int { return c.n }

// all yields the children in name order.
func (c children) all() iter.Seq[*inode] {
	return c.from(kidPos{})
}

// from yields the children from position p on, in name order.
func (c children) from(p kidPos) iter.Seq[*inode] {
	return func(yield func(*inode) bool) {
		for ci := p.ci; ci < len(c.chunks); ci, p.i = ci+1, 0 {
			for _, k := range c.chunks[ci].k[p.i:] {
				if !yield(k) {
					return
				}
			}
		}
	}
}

// last returns the last child by name, nil if there is none.
func (c children) last() *inode {
	if len(c.chunks) == 0 {
		return nil
	}
	ks := c.chunks[len(c.chunks)-1].k
	return ks[len(ks)-1]
}

// find returns the child called name and its position, or nil and the
// position where a child of that name would be inserted.
func (c children) find(name string) (*inode, kidPos) {
	cs := c.chunks
	lo, hi := 0, len(cs)
	if hi == 1 { // most directories: one chunk, no search among chunks
		hi = 0
	}
	for lo < hi { // the first chunk whose last name is >= name
		m := int(uint(lo+hi) >> 1)
		if ks := cs[m].k; ks[len(ks)-1].name < name {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == len(cs) { // after every child: the end of the last chunk
		if lo == 0 {
			return nil, kidPos{}
		}
		return nil, kidPos{lo - 1, len(cs[lo-1].k)}
	}
	ks := cs[lo].k
	i, j := 0, len(ks)
	for i < j {
		m := int(uint(i+j) >> 1)
		if ks[m].name < name {
			i = m + 1
		} else {
			j = m
		}
	}
	if i < len(ks) && ks[i].name == name { // i == len(ks) only past the end of a single chunk
		return ks[i], kidPos{lo, i}
	}
	return nil, kidPos{lo, i}
}

// next returns the position after p, a child's position.
func (c children) next(p kidPos) kidPos {
	if p.i+1 < len(c.chunks[p.ci].k) {
		return kidPos{p.ci, p.i + 1}
	}
	return kidPos{p.ci + 1, 0}
}

// clone returns a copy of c with its own chunk pointers, sharing the
// chunks: for touch.
func (c children) clone() children {
	return children{chunks: slices.Clone(c.chunks), n: c.n}
}

// push appends k, whose name sorts after every child's, to c: for the image
// reader, which fills chunks whole.
func (c *children) push(k *inode, epoch uint64) {
	if len(c.chunks) == 0 || len(c.chunks[len(c.chunks)-1].k) == chunkMax {
		c.chunks = append(c.chunks, &kidChunk{epoch: epoch}) // grown by append: most directories are small
	}
	last := c.chunks[len(c.chunks)-1]
	last.k = append(last.k, k)
	c.n++
}

// writableChunk returns chunk ci of c, first replacing it by a copy if an
// open view may hold it. c's chunk pointers must be the live directory's
// own (touch made them so).
func (t *Tree) writableChunk(c *children, ci int) *kidChunk {
	ch := c.chunks[ci]
	if ch.epoch < t.frozen {
		ch = &kidChunk{epoch: t.epoch, k: slices.Grow(slices.Clone(ch.k), 1)}
		c.chunks[ci] = ch
	}
	return ch
}

// insertKid inserts k at p (from find) in c, the children of a touched
// directory. A full chunk splits in two, except that a child past its end
// starts a new chunk: names that arrive in order then fill chunks whole.
func (t *Tree) insertKid(c *children, p kidPos, k *inode) {
	c.n++
	if len(c.chunks) == 0 {
		c.chunks = []*kidChunk{{epoch: t.epoch, k: []*inode{k}}}
		return
	}
	right := &kidChunk{epoch: t.epoch}
	if full := len(c.chunks[p.ci].k) == chunkMax; full && p.i == chunkMax {
		right.k = []*inode{k}
	} else {
		ch := t.writableChunk(c, p.ci)
		if !full {
			ch.k = slices.Insert(ch.k, p.i, k)
			return
		}
		half := len(ch.k) / 2
		right.k = slices.Clone(ch.k[half:])
		clear(ch.k[half:])
		ch.k = ch.k[:half]
		if p.i <= half {
			ch.k = slices.Insert(ch.k, p.i, k)
		} else {
			right.k = slices.Insert(right.k, p.i-half, k)
		}
	}
	c.chunks = slices.Insert(c.chunks, p.ci+1, right)
}

// removeKid removes the child at p (from find) from c, the children of a
// touched directory. A chunk left empty goes; one left under a quarter
// full takes in the next chunk if the two fill at most half of one, so a
// directory thinned by scattered deletes does not keep a tail of tiny
// chunks.
func (t *Tree) removeKid(c *children, p kidPos) {
	c.n--
	if len(c.chunks[p.ci].k) == 1 {
		c.chunks = slices.Delete(c.chunks, p.ci, p.ci+1)
		return
	}
	ch := t.writableChunk(c, p.ci)
	ch.k = slices.Delete(ch.k, p.i, p.i+1)
	if len(ch.k) >= chunkMax/4 {
		return
	}
	// Merge with a neighbour: the left one takes this chunk's children,
	// or this one takes the right one's. The chunk read from is dropped,
	// not written: a view may hold it.
	switch l, r := p.ci-1, p.ci+1; {
	case l >= 0 && len(c.chunks[l].k)+len(ch.k) <= chunkMax/2:
		left := t.writableChunk(c, l)
		left.k = append(left.k, ch.k...)
		c.chunks = slices.Delete(c.chunks, p.ci, p.ci+1)
	case r < len(c.chunks) && len(ch.k)+len(c.chunks[r].k) <= chunkMax/2:
		ch.k = append(ch.k, c.chunks[r].k...)
		c.chunks = slices.Delete(c.chunks, r, r+1)
	}
}
