package namespace

// inodeTable indexes the inodes by id: one open-addressed table of inode
// pointers (the id is in the inode), linear probing, deletion by backward
// shift (no tombstones), at most 3/4 full and halved once 1/8 full. A
// map[ID]*inode cost some 38 bytes an inode at a million; this costs 8 a
// slot, 11 to 21 an inode. Inode ids come from a counter, so the home slot
// is the id itself modulo the table size: ids made one after another sit
// next to each other, and a restore, which inserts them in nearly that
// order, walks the table instead of missing the cache on every insert.
type inodeTable struct {
	slots []*inode
	n     int
}

func (t *inodeTable) mask() int { return len(t.slots) - 1 }

// find returns the slot holding id, or the empty slot where it would go.
// The table must have slots.
func (t *inodeTable) find(id ID) int {
	m := t.mask()
	i := int(id) & m
	for t.slots[i] != nil && t.slots[i].id != id {
		i = (i + 1) & m
	}
	return i
}

// get returns the inode with id, or nil.
func (t *inodeTable) get(id ID) *inode {
	if len(t.slots) == 0 {
		return nil
	}
	return t.slots[t.find(id)]
}

// len returns the number of inodes.
func (t *inodeTable) len() int { return t.n }

// put indexes n, replacing an inode with its id; it reports whether there
// was one.
func (t *inodeTable) put(n *inode) (replaced bool) {
	if (t.n+1)*4 > len(t.slots)*3 {
		t.resize(t.n + 1)
	}
	i := t.find(n.id)
	replaced = t.slots[i] != nil
	if !replaced {
		t.n++
	}
	t.slots[i] = n
	return replaced
}

// del removes the inode with id, if any.
func (t *inodeTable) del(id ID) {
	if len(t.slots) == 0 {
		return
	}
	i := t.find(id)
	if t.slots[i] == nil {
		return
	}
	m := t.mask()
	for j := (i + 1) & m; t.slots[j] != nil; j = (j + 1) & m {
		// Move the entry at j into the hole at i unless its home slot
		// lies cyclically in (i, j].
		if home := int(t.slots[j].id) & m; (j-home)&m >= (j-i)&m {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = nil
	t.n--
	if len(t.slots) > 64 && t.n*8 < len(t.slots) {
		t.resize(t.n)
	}
}

// resize rebuilds the table for n inodes, keeping its inodes.
func (t *inodeTable) resize(n int) {
	old := t.slots
	size := 16
	for size*3/4 < n {
		size *= 2
	}
	t.slots = make([]*inode, size)
	for _, x := range old {
		if x != nil {
			t.slots[t.find(x.id)] = x
		}
	}
}

// blockIndex maps block ids to the file that owns each: one open-addressed
// table of (block id, inode id) pairs, linear probing, deletion by
// backward shift, at most 3/4 full and halved once 1/8 full: 16 bytes a
// slot, 21 to 43 a block, where a map[uint64]ID cost about 38 at a
// million. Block ids come from a counter, so the home slot is the id
// modulo the table size, as in inodeTable. Id 0 is never a block
// (AddBlock refuses it) and marks an empty slot.
type blockIndex struct {
	slots []blockSlot
	n     int
}

type blockSlot struct {
	block uint64
	owner ID
}

// find returns the slot holding block, or the empty slot where it would
// go. The index must have slots.
func (x *blockIndex) find(block uint64) int {
	m := len(x.slots) - 1
	i := int(block) & m
	for x.slots[i].block != 0 && x.slots[i].block != block {
		i = (i + 1) & m
	}
	return i
}

// get returns the owner of block.
func (x *blockIndex) get(block uint64) (ID, bool) {
	if len(x.slots) == 0 || block == 0 {
		return 0, false
	}
	s := x.slots[x.find(block)]
	return s.owner, s.block != 0
}

// len returns the number of blocks.
func (x *blockIndex) len() int { return x.n }

// put records owner as block's owner (block != 0), replacing one already
// recorded; it reports whether there was one.
func (x *blockIndex) put(block uint64, owner ID) (replaced bool) {
	if (x.n+1)*4 > len(x.slots)*3 {
		x.resize(x.n + 1)
	}
	i := x.find(block)
	replaced = x.slots[i].block != 0
	if !replaced {
		x.n++
	}
	x.slots[i] = blockSlot{block, owner}
	return replaced
}

// del forgets block, if recorded.
func (x *blockIndex) del(block uint64) {
	if len(x.slots) == 0 || block == 0 {
		return
	}
	i := x.find(block)
	if x.slots[i].block == 0 {
		return
	}
	m := len(x.slots) - 1
	for j := (i + 1) & m; x.slots[j].block != 0; j = (j + 1) & m {
		if home := int(x.slots[j].block) & m; (j-home)&m >= (j-i)&m {
			x.slots[i] = x.slots[j]
			i = j
		}
	}
	x.slots[i] = blockSlot{}
	x.n--
	if len(x.slots) > 64 && x.n*8 < len(x.slots) {
		x.resize(x.n)
	}
}

// resize rebuilds the index for n blocks, keeping its entries.
func (x *blockIndex) resize(n int) {
	old := x.slots
	size := 16
	for size*3/4 < n {
		size *= 2
	}
	x.slots = make([]blockSlot, size)
	for _, s := range old {
		if s.block != 0 {
			x.slots[x.find(s.block)] = s
		}
	}
}
