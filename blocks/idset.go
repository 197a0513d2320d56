package blocks

import "math/bits"

// idSet is a set of block ids: one open-addressed table of ids (linear
// probing, deletion by backward shift, so no tombstones), at most 3/4 full
// and halved once 1/8 full. A datanode's replicas are such a set, one
// entry per replica: 8 bytes a slot, some 11 to 21 bytes an id, where a
// map[uint64]struct{} cost about 37. The zero value is an empty set.
type idSet struct {
	slots []uint64 // 0 marks an empty slot
	n     int      // ids in slots
	zero  bool     // id 0, which cannot live in slots
	shift uint8    // 64 - log2(len(slots))
}

// newIDSet returns a set sized for n ids.
func newIDSet(n int) idSet {
	var s idSet
	s.resize(n)
	return s
}

// resize rebuilds the table for n ids (at most 3/4 full), keeping its ids.
func (s *idSet) resize(n int) {
	old := s.slots
	size := 8
	for size*3/4 < n {
		size *= 2
	}
	s.slots = make([]uint64, size)
	s.shift = uint8(64 - bits.TrailingZeros(uint(size)))
	for _, id := range old {
		if id != 0 {
			s.slots[s.find(id)] = id
		}
	}
}

// find returns the slot holding id, or the empty slot where it would go.
func (s *idSet) find(id uint64) int {
	mask := len(s.slots) - 1
	i := int((id * 0x9E3779B97F4A7C15) >> s.shift)
	for s.slots[i] != 0 && s.slots[i] != id {
		i = (i + 1) & mask
	}
	return i
}

// Len returns the number of ids.
func (s *idSet) Len() int {
	if s.zero {
		return s.n + 1
	}
	return s.n
}

// Has reports whether id is in the set.
func (s *idSet) Has(id uint64) bool {
	if id == 0 {
		return s.zero
	}
	return len(s.slots) > 0 && s.slots[s.find(id)] == id
}

// Add adds id.
func (s *idSet) Add(id uint64) {
	if id == 0 {
		s.zero = true
		return
	}
	if (s.n+1)*4 > len(s.slots)*3 {
		s.resize(s.n + 1)
	}
	if i := s.find(id); s.slots[i] == 0 {
		s.slots[i] = id
		s.n++
	}
}

// Delete removes id.
func (s *idSet) Delete(id uint64) {
	if id == 0 {
		s.zero = false
		return
	}
	if len(s.slots) == 0 {
		return
	}
	i := s.find(id)
	if s.slots[i] == 0 {
		return
	}
	// Backward shift: move later entries of the probe run into the hole
	// when the hole lies between their home slot and where they sit.
	mask := len(s.slots) - 1
	for j := (i + 1) & mask; s.slots[j] != 0; j = (j + 1) & mask {
		home := int((s.slots[j] * 0x9E3779B97F4A7C15) >> s.shift)
		if (j-home)&mask >= (j-i)&mask {
			s.slots[i] = s.slots[j]
			i = j
		}
	}
	s.slots[i] = 0
	s.n--
	if len(s.slots) > 64 && s.n*8 < len(s.slots) {
		s.resize(s.n)
	}
}

// Append appends every id to dst, in no particular order.
func (s *idSet) Append(dst []uint64) []uint64 {
	if s.zero {
		dst = append(dst, 0)
	}
	for _, id := range s.slots {
		if id != 0 {
			dst = append(dst, id)
		}
	}
	return dst
}
