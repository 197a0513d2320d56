package blocks

import "time"

// A replica is verified when this namenode has evidence, beyond the
// datanode's say-so in a full report, that it holds the block's bytes:
//
//   - it arrived in an incremental report (the datanode just stored it)
//     with the expected generation stamp from a datanode of the block's
//     recorded write pipeline (the AddBlock or UpdatePipeline targets,
//     pipeline.go), or
//   - its datanode was a target of a replication this namenode scheduled,
//     or
//   - its datanode re-read it on a Verify command this namenode ordered and
//     answered that the stored checksum matches (ReportVerified).
//
// A replica that only appears in a full report (a namenode restart, a
// datanode coming back, or a datanode claiming blocks it never received),
// or in a "received" report for a block without a recorded pipeline (every
// block after a namenode restart), is unverified: its datanode's word is
// all there is, and any datanode can name any block id. Verification is soft state like the rest of the map: a
// restarted or newly elected namenode re-verifies before it relies on it.
//
// ComputeWork uses it so that no report can talk the namenode into deleting
// the real copies: a block loses a replica (excess or corrupt) only once it
// has at least its replication in verified good replicas (enoughVerified),
// over-replication then deletes unverified copies first and never the last
// verified one, and a replication copies only from a verified source. When
// a block has too few, the namenode orders Verify commands of its
// unverified replicas and deletes nothing until answers arrive: after a
// restart, an unverified replica never outranks the copies a block has.

// verifiedGood counts b's good replicas that are verified. Caller holds
// s.mu.
func (s *shard) verifiedGood(b *blockInfo) int {
	k := 0
	for _, l := range s.locs(b) {
		if l.has(locVerified) && s.isGood(b, l) {
			k++
		}
	}
	return k
}

// writtenHere reports whether a replica its datanode just reported
// receiving counts as verified (see above). Caller holds s.mu.
func (s *shard) writtenHere(id uint64, b *blockInfo, l loc) bool {
	if !s.isGood(b, l) {
		return false
	}
	if p := s.pending[id]; p != nil && !p.expectOnly {
		for _, t := range p.targets {
			if t.num == l.num() {
				return true
			}
		}
	}
	member, _ := s.inPipeline(id, l.num())
	return member
}

// enoughVerified reports whether b has at least its replication (and at
// least one) in verified good replicas, the condition for deleting any of
// its replicas. Caller holds s.mu.
func (s *shard) enoughVerified(b *blockInfo) bool {
	return s.count(b).verified >= max(1, int(b.replication))
}

// orderVerify queues a Verify command for replica *l of b, unless one is
// outstanding, the replica is being deleted, or its datanode is not live.
// due is when an unanswered verify is given up (and may be ordered again).
// Caller holds s.mu.
func (s *shard) orderVerify(b *blockInfo, l *loc, due time.Time) {
	n := s.node(*l)
	if l.has(locVerifying|locInvalidating) || n.snap.Load().State != Live {
		return
	}
	l.set(locVerifying, true)
	if d, ok := s.verifying[b.id]; !ok || d.Before(due) {
		s.verifying[b.id] = due
	}
	n.queueCommand(Command{Kind: Verify, Block: s.replica(b, *l)})
}

// verifyUnverified orders a verify of every good unverified replica of b.
func (s *shard) verifyUnverified(b *blockInfo, due time.Time) {
	ls := s.locs(b)
	for i := range ls {
		if l := &ls[i]; !l.has(locVerified) && s.isGood(b, *l) {
			s.orderVerify(b, l, due)
		}
	}
}

// expireVerifies gives up verifies unanswered by their deadline, so the
// next round may order them again. Caller holds s.mu.
func (s *shard) expireVerifies(now time.Time) {
	for id, due := range s.verifying {
		b := s.blocks.get(id)
		if b != nil && now.Before(due) {
			continue
		}
		delete(s.verifying, id)
		if b == nil {
			continue
		}
		ls := s.locs(b)
		for i := range ls {
			ls[i].set(locVerifying, false)
		}
	}
}

// verifyDone drops block id from the verifying queue once none of its
// replicas waits for an answer. Caller holds s.mu.
func (s *shard) verifyDone(id uint64, b *blockInfo) {
	for _, l := range s.locs(b) {
		if l.has(locVerifying) {
			return
		}
	}
	delete(s.verifying, id)
}

// verifySuspects orders a verify of every suspect replica that has none
// outstanding, and drops blocks without suspect replicas from the queue.
// Caller holds s.mu.
func (s *shard) verifySuspects(due time.Time) {
	for id := range s.suspect {
		b := s.blocks.get(id)
		any := false
		if b != nil {
			ls := s.locs(b)
			for i := range ls {
				if l := &ls[i]; l.has(locSuspect) && !l.has(locInvalidating) {
					any = true
					s.orderVerify(b, l, due)
				}
			}
		}
		if !any {
			delete(s.suspect, id)
		}
	}
}

// excessReplica picks the good replica of an over-replicated block to
// delete next: unverified before suspect before verified, and within each
// the one on the datanode with the least free space (ties: highest id).
// It never picks the last verified good replica; nil if nothing may go.
// Caller holds s.mu.
func (s *shard) excessReplica(b *blockInfo) *loc {
	var f *loc
	var fd *Datanode
	fr := 0
	ls := s.locs(b)
	crowded := s.crowdedRacks(b)
	for i := range ls {
		l := &ls[i]
		if !s.counted(b, *l) {
			continue // a replica on a leaving node is never excess
		}
		// Within a rank, a replica in a rack holding another one goes
		// first, so that the block keeps the racks it spans.
		r, d := 2*excessRank(*l), s.node(*l).snap.Load()
		if crowded != nil && !crowded(s.node(*l)) {
			r++
		}
		if f == nil || r < fr || (r == fr && (d.free() < fd.free() || (d.free() == fd.free() && d.ID > fd.ID))) {
			f, fd, fr = l, d, r
		}
	}
	if f != nil && f.has(locVerified) && s.count(b).verified <= 1 {
		return nil
	}
	return f
}

// crowdedRacks returns whether a node's rack holds more than one of b's
// good replicas, or nil when the cluster has one rack. Caller holds s.mu.
func (s *shard) crowdedRacks(b *blockInfo) func(*node) bool {
	idx := s.m.place.Load()
	if len(idx.racks) < 2 {
		return nil
	}
	count := map[int32]int{}
	for _, l := range s.locs(b) {
		if s.counted(b, l) {
			count[idx.rack(s.node(l))]++
		}
	}
	return func(n *node) bool { return count[idx.rack(n)] > 1 }
}

func excessRank(l loc) int {
	switch {
	case !l.has(locVerified):
		return 0
	case l.has(locSuspect):
		return 1
	}
	return 2
}

// serveRank orders good replicas for readers: verified first, then
// unverified, suspect last.
func serveRank(l loc) int {
	switch {
	case l.has(locSuspect):
		return 2
	case !l.has(locVerified):
		return 1
	}
	return 0
}

// ReportSuspect records a client's claim that datanode datanodeID's replica
// of blockID (generation genStamp) is bad. A client cannot be trusted to
// say so (any user can name any replica), so the replica stays good and
// served, only listed last, and the leader's next ComputeWork asks its
// datanode to re-verify it: the datanode then reports it corrupt (trusted,
// ReportCorrupt) or verified (ReportVerified, which clears the mark). It
// returns false, changing nothing, if that replica is not in the map, has
// another generation stamp, or is already corrupt, stale or being deleted.
func (m *Manager) ReportSuspect(blockID, genStamp uint64, datanodeID string) (found bool) {
	return m.withReplica(blockID, datanodeID, func(s *shard, b *blockInfo, l *loc) bool {
		if g, _ := s.stampOf(b, *l); g != genStamp || !s.isGood(b, *l) {
			return false
		}
		l.set(locSuspect, true)
		s.suspect[blockID] = struct{}{}
		return true
	})
}

// ReportVerified records datanode id's answers to Verify commands: each
// replica in rs was re-read and its checksum matched. An answer counts only
// for a verify this Manager ordered and still waits for, about the same
// generation stamp and length; the replica becomes verified and stops being
// suspect. Other answers (a verify another namenode ordered, one given up,
// or a claim nobody asked for) change nothing and are counted as
// RefusedVerified. It returns how many answers counted.
func (m *Manager) ReportVerified(id string, rs []Replica) (accepted int) {
	n := m.lookup(id)
	if n == nil {
		for range rs {
			m.Refuse(RefusedVerified)
		}
		return 0
	}
	for _, r := range rs {
		s := m.shard(r.BlockID)
		s.mu.Lock()
		ok := false
		if b := s.blocks.get(r.BlockID); b != nil {
			if i := s.find(b, n); i >= 0 {
				l := &s.locs(b)[i]
				g, length := s.stampOf(b, *l)
				if l.has(locVerifying) && !l.has(locCorrupt) && g == r.GenStamp && length == r.Length {
					l.set(locVerifying|locSuspect, false)
					l.set(locVerified, true)
					s.verifyDone(r.BlockID, b)
					s.moveVerified(r.BlockID, n)
					ok = true
				}
			}
		}
		s.mu.Unlock()
		if ok {
			accepted++
		} else {
			m.Refuse(RefusedVerified)
		}
	}
	return accepted
}

// IsVerified reports whether datanode datanodeID holds a verified good
// replica of blockID. For tests and fsck.
func (m *Manager) IsVerified(blockID uint64, datanodeID string) bool {
	n := m.lookup(datanodeID)
	if n == nil {
		return false
	}
	s := m.shard(blockID)
	rl := s.mu.RLock()
	defer rl.RUnlock()
	b := s.blocks.get(blockID)
	if b == nil {
		return false
	}
	i := s.find(b, n)
	return i >= 0 && s.locs(b)[i].has(locVerified) && s.isGood(b, s.locs(b)[i])
}
