package blocks

// blockTable is a shard's index of its blocks by id: one open-addressed
// table of blockInfo pointers (the id is in the blockInfo), linear probing,
// deletion by backward shift (no tombstones), at most 3/4 full and halved
// once 1/8 full, so it also shrinks as blocks go. A map[uint64]*blockInfo
// cost some 38 bytes a block at a million; this costs 8 a slot, 11 to 21 a
// block, and being a quarter the size it misses the cache less on the
// read path. The id's high bits picked the shard (shardIndex), so the home
// slot comes from the bits of the same product below those.
type blockTable struct {
	slots []*blockInfo
	n     int
	shift uint8 // 64 - log2(len(slots))
}

func (t *blockTable) home(id uint64) int {
	return int(((id * 0x9E3779B97F4A7C15) << shardBits) >> t.shift)
}

// find returns the slot holding id, or the empty slot where it would go.
// The table must have slots.
func (t *blockTable) find(id uint64) int {
	m := len(t.slots) - 1
	i := t.home(id)
	for t.slots[i] != nil && t.slots[i].id != id {
		i = (i + 1) & m
	}
	return i
}

// get returns the block with id, or nil.
func (t *blockTable) get(id uint64) *blockInfo {
	if len(t.slots) == 0 {
		return nil
	}
	return t.slots[t.find(id)]
}

// len returns the number of blocks.
func (t *blockTable) len() int { return t.n }

// put indexes b, whose id must not be in the table.
func (t *blockTable) put(b *blockInfo) {
	if (t.n+1)*4 > len(t.slots)*3 {
		t.resize(t.n + 1)
	}
	t.slots[t.find(b.id)] = b
	t.n++
}

// reserve grows the table, if need be, to hold n blocks without growing
// again.
func (t *blockTable) reserve(n int) {
	if n*4 > len(t.slots)*3 {
		t.resize(n)
	}
}

// del removes the block with id, if any. It moves entries, so it must not
// run inside a range over the table (see ids).
func (t *blockTable) del(id uint64) {
	if len(t.slots) == 0 {
		return
	}
	i := t.find(id)
	if t.slots[i] == nil {
		return
	}
	m := len(t.slots) - 1
	for j := (i + 1) & m; t.slots[j] != nil; j = (j + 1) & m {
		// Move the entry at j into the hole at i unless its home slot
		// lies cyclically in (i, j].
		if h := t.home(t.slots[j].id); (j-h)&m >= (j-i)&m {
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

// ids appends the ids of every block to dst: what to range over when the
// loop may delete.
func (t *blockTable) ids(dst []uint64) []uint64 {
	for _, b := range t.slots {
		if b != nil {
			dst = append(dst, b.id)
		}
	}
	return dst
}

// resize rebuilds the table for n blocks, keeping its blocks.
func (t *blockTable) resize(n int) {
	old := t.slots
	size := 16
	for size*3/4 < n {
		size *= 2
	}
	t.slots = make([]*blockInfo, size)
	t.shift = uint8(64 - log2(size))
	for _, b := range old {
		if b != nil {
			t.slots[t.find(b.id)] = b
		}
	}
}

func log2(n int) int {
	k := 0
	for 1<<k < n {
		k++
	}
	return k
}
