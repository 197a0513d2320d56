package blocks

// loc is one datanode's replica of a block, in 4 bytes: the datanode's
// registration number (node.num) in the low numBits bits, the replica's
// state flags above them. As in HDFS, a block's record names its replicas'
// datanodes by small index, not by pointer, and a replica's generation
// stamp and length are the block's own unless they differ (locOwnStamp,
// shard.stamps).
type loc uint32

const (
	// numBits bounds the datanode registrations a Manager takes in its
	// life (Register refuses more): some 67 million.
	numBits  = 26
	maxNodes = 1 << numBits
	numMask  = maxNodes - 1
)

const (
	// locCorrupt: reported corrupt by a client or datanode.
	locCorrupt loc = 1 << (numBits + iota)
	// locInvalidating: a delete was scheduled; uncounted and unserved
	// until the datanode reports the replica gone.
	locInvalidating
	// locVerified: this namenode has evidence the replica holds the
	// block's bytes (see verify.go); unverified copies are deleted first
	// and the last verified one never is.
	locVerified
	// locSuspect: a client reported it bad; still good until its datanode
	// re-verifies it (verified again) or reports it corrupt.
	locSuspect
	// locVerifying: a Verify command was queued for it and not yet
	// answered.
	locVerifying
	// locOwnStamp: the replica's generation stamp or length differs from
	// the block's (blockInfo.genStamp, length); both are in shard.stamps.
	locOwnStamp
)

func newLoc(num uint32) loc { return loc(num) }

func (l loc) num() uint32 { return uint32(l & numMask) }

func (l loc) has(f loc) bool { return l&f != 0 }

// set turns flags f on or off.
func (l *loc) set(f loc, on bool) {
	if on {
		*l |= f
	} else {
		*l &^= f
	}
}

// stampKey names one replica in shard.stamps.
type stampKey struct {
	id  uint64
	num uint32
}

// stamp is a replica's generation stamp and length when they differ from
// its block's: after an append or a pipeline recovery, until the replica is
// reported again under the new stamp, or a short or stale copy.
type stamp struct{ genStamp, length uint64 }

// inlineLocs is how many replicas a blockInfo holds itself; a block with
// more (over-replicated, or replication above 3) keeps all of them in
// shard.extra, and blockInfo.n is spilled.
const (
	inlineLocs = 3
	spilled    = 0xFF
)

// locs returns b's replicas, to read or to change in place. Appending
// (addLoc) may move them, so a slice or pointer into it is stale after an
// addLoc. Caller holds s.mu (read or write).
func (s *shard) locs(b *blockInfo) []loc {
	if b.n <= inlineLocs {
		return b.inline[:b.n]
	}
	return s.extra[b.id]
}

// numLocs returns how many replicas b has.
func (s *shard) numLocs(b *blockInfo) int {
	if b.n <= inlineLocs {
		return int(b.n)
	}
	return len(s.extra[b.id])
}

// addLoc appends l to b's replicas and returns its index. Caller holds
// s.mu.
func (s *shard) addLoc(b *blockInfo, l loc) int {
	switch {
	case b.n < inlineLocs:
		b.inline[b.n] = l
		b.n++
		return int(b.n) - 1
	case b.n == inlineLocs:
		x := make([]loc, inlineLocs+1, 2*inlineLocs)
		copy(x, b.inline[:])
		x[inlineLocs] = l
		s.extra[b.id] = x
		b.inline, b.n = [inlineLocs]loc{}, spilled
		return inlineLocs
	}
	x := append(s.extra[b.id], l)
	s.extra[b.id] = x
	return len(x) - 1
}

// removeLoc drops b's replica i (the last one takes its place), with its
// own stamp if it has one. Caller holds s.mu.
func (s *shard) removeLoc(b *blockInfo, i int) {
	ls := s.locs(b)
	if ls[i].has(locOwnStamp) {
		delete(s.stamps, stampKey{b.id, ls[i].num()})
	}
	last := len(ls) - 1
	ls[i] = ls[last]
	ls[last] = 0
	if b.n <= inlineLocs {
		b.n--
		return
	}
	ls = ls[:last]
	if len(ls) > inlineLocs {
		s.extra[b.id] = ls
		return
	}
	copy(b.inline[:], ls)
	b.n = uint8(len(ls))
	delete(s.extra, b.id)
}

// stampOf returns l's generation stamp and length. Caller holds s.mu.
func (s *shard) stampOf(b *blockInfo, l loc) (genStamp, length uint64) {
	if l.has(locOwnStamp) {
		st := s.stamps[stampKey{b.id, l.num()}]
		return st.genStamp, st.length
	}
	return b.genStamp, b.length
}

// setStamp gives replica *l of b the generation stamp and length given:
// an entry in s.stamps only if they differ from b's. Caller holds s.mu.
func (s *shard) setStamp(b *blockInfo, l *loc, genStamp, length uint64) {
	k := stampKey{b.id, l.num()}
	if genStamp == b.genStamp && length == b.length {
		if l.has(locOwnStamp) {
			delete(s.stamps, k)
			l.set(locOwnStamp, false)
		}
		return
	}
	s.stamps[k] = stamp{genStamp, length}
	l.set(locOwnStamp, true)
}

// rebase makes (genStamp, length) b's own, keeping each replica's: those
// that had b's old ones get entries in s.stamps, those that have the new
// ones lose theirs. Caller holds s.mu.
func (s *shard) rebase(b *blockInfo, genStamp, length uint64) {
	if genStamp == b.genStamp && length == b.length {
		return
	}
	ls := s.locs(b)
	var buf [2 * inlineLocs]stamp
	old := buf[:0]
	for _, l := range ls {
		g, n := s.stampOf(b, l)
		old = append(old, stamp{g, n})
	}
	b.genStamp, b.length = genStamp, length
	for i := range ls {
		s.setStamp(b, &ls[i], old[i].genStamp, old[i].length)
	}
}

// updateStamp records that replica i of b now has (genStamp, length).
// Caller holds s.mu.
func (s *shard) updateStamp(b *blockInfo, i int, genStamp, length uint64) {
	ls := s.locs(b)
	s.setStamp(b, &ls[i], genStamp, length)
	if ls[i].has(locOwnStamp) {
		s.adopt(b)
	}
}

// adopt gives b the stamp of one of its replicas when none has b's own, so
// that replicas which all moved on together (an append) or outlived the
// odd one (a stale copy deleted) keep no side entries. An expected block's
// generation stamp is the namespace's: it only adopts a replica of that
// stamp. Caller holds s.mu.
func (s *shard) adopt(b *blockInfo) {
	ls := s.locs(b)
	for _, l := range ls {
		if !l.has(locOwnStamp) {
			return
		}
	}
	for _, l := range ls {
		if g, n := s.stampOf(b, l); !b.expected() || g == b.genStamp {
			s.rebase(b, g, n)
			return
		}
	}
}
