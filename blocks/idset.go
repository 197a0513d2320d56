package blocks

import (
	"math/bits"
	"slices"
)

// idSet is a set of block ids, kept the way a roaring bitmap keeps them:
// ids are grouped by their high 48 bits into chunks of 65,536 ids, and a
// chunk holds its ids' low 16 bits either as a sorted []uint16 (up to
// chunkArrayMax ids: 2 bytes an id) or as a 65,536-bit bitmap (8 KiB, once
// more than chunkArrayMax ids share the chunk; back to an array below half
// that). A datanode's replicas are such a set, one entry per replica.
//
// The namespace hands out block ids from a counter, so a datanode's
// replicas fill few chunks densely: at a million blocks on 10 datanodes (3
// replicas) every chunk is a bitmap and the sets cost about 1.3 bytes a
// block in all; with 100 datanodes a chunk is an array, some 6 bytes a
// block. The open-addressed table of uint64 ids this replaced cost 42 B a
// block at 3 replicas. Ids scattered over the whole 64-bit space (which
// only unknown blocks a datanode invents could be) would cost a chunk each,
// about 100 bytes an id: the price of the common case.
//
// The zero value is an empty set.
type idSet struct {
	chunks map[uint64]*idChunk // by id >> 16
	n      int
	// last is the chunk of the most recent lookup (lastHi its key), so a
	// run of ids in one chunk (a sorted report) skips the map.
	last   *idChunk
	lastHi uint64
}

// chunkArrayMax is the most ids a chunk keeps as an array; its bitmap costs
// as much (8 KiB).
const chunkArrayMax = 4096

type idChunk struct {
	n    int      // ids in the chunk
	arr  []uint16 // sorted low bits, when bits is nil
	bits *[1 << 16 / 64]uint64
}

func splitID(id uint64) (hi uint64, lo uint16) { return id >> 16, uint16(id) }

// chunk returns the chunk for hi, or nil.
func (s *idSet) chunk(hi uint64) *idChunk {
	if s.last != nil && s.lastHi == hi {
		return s.last
	}
	c := s.chunks[hi]
	if c != nil {
		s.last, s.lastHi = c, hi
	}
	return c
}

// Len returns the number of ids.
func (s *idSet) Len() int { return s.n }

// Has reports whether id is in the set.
func (s *idSet) Has(id uint64) bool {
	hi, lo := splitID(id)
	c := s.chunk(hi)
	return c != nil && c.has(lo)
}

// Add adds id.
func (s *idSet) Add(id uint64) {
	hi, lo := splitID(id)
	c := s.chunk(hi)
	if c == nil {
		if s.chunks == nil {
			s.chunks = make(map[uint64]*idChunk)
		}
		c = new(idChunk)
		s.chunks[hi] = c
		s.last, s.lastHi = c, hi
	}
	if c.add(lo) {
		s.n++
	}
}

// Delete removes id.
func (s *idSet) Delete(id uint64) {
	hi, lo := splitID(id)
	c := s.chunk(hi)
	if c == nil || !c.del(lo) {
		return
	}
	s.n--
	if c.n == 0 {
		delete(s.chunks, hi)
		if s.last == c {
			s.last = nil
		}
	}
}

// Append appends every id to dst, in no particular order.
func (s *idSet) Append(dst []uint64) []uint64 {
	for hi, c := range s.chunks {
		base := hi << 16
		if c.bits == nil {
			for _, lo := range c.arr {
				dst = append(dst, base|uint64(lo))
			}
			continue
		}
		for w, word := range c.bits {
			for word != 0 {
				b := bits.TrailingZeros64(word)
				dst = append(dst, base|uint64(w*64+b))
				word &= word - 1
			}
		}
	}
	return dst
}

func (c *idChunk) has(lo uint16) bool {
	if c.bits != nil {
		return c.bits[lo/64]&(1<<(lo%64)) != 0
	}
	_, ok := slices.BinarySearch(c.arr, lo)
	return ok
}

// add adds lo and reports whether it was new.
func (c *idChunk) add(lo uint16) bool {
	if c.bits != nil {
		w, m := lo/64, uint64(1)<<(lo%64)
		if c.bits[w]&m != 0 {
			return false
		}
		c.bits[w] |= m
		c.n++
		return true
	}
	i, ok := slices.BinarySearch(c.arr, lo)
	if ok {
		return false
	}
	if len(c.arr) == chunkArrayMax {
		c.bits = new([1 << 16 / 64]uint64)
		for _, x := range c.arr {
			c.bits[x/64] |= 1 << (x % 64)
		}
		c.arr = nil
		c.bits[lo/64] |= 1 << (lo % 64)
		c.n++
		return true
	}
	c.arr = slices.Insert(c.arr, i, lo)
	c.n++
	return true
}

// del removes lo and reports whether it was there.
func (c *idChunk) del(lo uint16) bool {
	if c.bits != nil {
		w, m := lo/64, uint64(1)<<(lo%64)
		if c.bits[w]&m == 0 {
			return false
		}
		c.bits[w] &^= m
		c.n--
		if c.n < chunkArrayMax/2 {
			arr := make([]uint16, 0, c.n)
			for w, word := range c.bits {
				for word != 0 {
					arr = append(arr, uint16(w*64+bits.TrailingZeros64(word)))
					word &= word - 1
				}
			}
			c.arr, c.bits = arr, nil
		}
		return true
	}
	i, ok := slices.BinarySearch(c.arr, lo)
	if !ok {
		return false
	}
	c.arr = slices.Delete(c.arr, i, i+1)
	c.n--
	// Give memory back once the array is mostly empty.
	if cap(c.arr) > 16 && len(c.arr)*4 < cap(c.arr) {
		c.arr = slices.Clone(c.arr)
	}
	return true
}
