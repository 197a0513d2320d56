package blocks

// A Go map never gives memory back as it empties: a queue that held every
// block once (all of them under-replicated while a namenode starts and the
// first reports arrive) would keep that size for the life of the process.
// The shard's maps are rebuilt at their current size once they fall to a
// quarter of the largest size seen since the last rebuild.

// shrinkMin is the size below which a map is never rebuilt: small maps
// cost little, and rebuilding them often would cost more.
const shrinkMin = 1024

// peaks is the largest size seen of each of a shard's maps since it was
// last rebuilt.
type peaks struct {
	extra, stamps                                                       int
	under, over, corrupt, unknown, pending, writing, suspect, verifying int
}

// shrunk returns m, or a copy of m sized to its contents when m has fallen
// to a quarter of *peak. Each rebuild copies len(m) entries after at least
// 3*len(m) deletions, so the cost is constant per deletion.
func shrunk[K comparable, V any](m map[K]V, peak *int) map[K]V {
	n := len(m)
	*peak = max(*peak, n)
	if *peak < shrinkMin || n > *peak/4 {
		return m
	}
	c := make(map[K]V, n)
	for k, v := range m {
		c[k] = v
	}
	*peak = n
	return c
}

// notePeaks records the maps' sizes; settle calls it after every change,
// so no growth goes unseen. Caller holds s.mu.
func (s *shard) notePeaks() {
	p := &s.peaks
	p.extra = max(p.extra, len(s.extra))
	p.stamps = max(p.stamps, len(s.stamps))
	p.under = max(p.under, len(s.under))
	p.over = max(p.over, len(s.over))
	p.corrupt = max(p.corrupt, len(s.corrupt))
	p.unknown = max(p.unknown, len(s.unknown))
	p.pending = max(p.pending, len(s.pending))
	p.writing = max(p.writing, len(s.writing))
	p.suspect = max(p.suspect, len(s.suspect))
	p.verifying = max(p.verifying, len(s.verifying))
}

// shrink rebuilds every map of s that has mostly emptied. It replaces the
// maps, so it must not run inside a range over one of them: it runs just
// before the shard's lock is released, once its work is done. Caller
// holds s.mu.
func (s *shard) shrink() {
	p := &s.peaks
	s.extra = shrunk(s.extra, &p.extra)
	s.stamps = shrunk(s.stamps, &p.stamps)
	s.under = shrunk(s.under, &p.under)
	s.over = shrunk(s.over, &p.over)
	s.corrupt = shrunk(s.corrupt, &p.corrupt)
	s.unknown = shrunk(s.unknown, &p.unknown)
	s.pending = shrunk(s.pending, &p.pending)
	s.writing = shrunk(s.writing, &p.writing)
	s.suspect = shrunk(s.suspect, &p.suspect)
	s.verifying = shrunk(s.verifying, &p.verifying)
}
