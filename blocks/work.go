package blocks

import (
	"sort"
	"time"
)

// ComputeWork turns the queues into commands for datanodes. Only the leader
// calls it, periodically (e.g. every HeartbeatInterval):
//
//   - scheduled replications older than ReplicationTimeout, or whose
//     targets all died, are forgotten, so their blocks are scheduled again;
//   - replicas of blocks unknown for longer than UnknownReplicaGrace are
//     scheduled for deletion;
//   - verifies unanswered after ReplicationTimeout are given up, and every
//     suspect replica (see ReportSuspect) without one gets a Verify command;
//   - corrupt and stale replicas of complete blocks that have their
//     replication in verified good replicas are scheduled for deletion
//     (never the last replica);
//   - over-replicated blocks with their replication in verified good
//     replicas lose their excess replicas: unverified copies first, then
//     suspect ones, then verified ones, each from the fullest holders
//     first, never the last verified copy (see verify.go);
//   - a corrupt or over-replicated block with fewer verified good replicas
//     than its replication gets a Verify command for each unverified good
//     one instead, and loses nothing until enough answers arrive;
//   - under-replicated blocks, fewest good replicas first, get a Replicate
//     command on a live verified good holder (without one, Verify commands
//     for the unverified) with fewer than MaxReplicationStreams
//     replications in flight, to targets from ChooseTargets that exclude
//     every current holder; the block is then pending until its targets
//     report it or ReplicationTimeout passes, and is not scheduled again
//     meanwhile;
//   - balancer moves advance (move.go): a received copy is verified, a
//     verified one costs its source replica, a timed-out one is dropped;
//   - each datanode's scheduled deletes become one Delete command (at most
//     MaxBlocksPerDelete replicas) if none is already waiting.
//
// Commands wait for PendingCommands.
func (m *Manager) ComputeWork() {
	now := m.cfg.Now()
	type job struct {
		id   uint64
		good int
	}
	var todo []job
	// Without a free replication stream nothing can be scheduled, so the
	// under-replicated queue is not walked: after a restart it holds every
	// block until the datanodes register and report.
	collect := m.freeStreams() > 0
	due := now.Add(m.cfg.ReplicationTimeout)
	for si := range m.shards {
		s := &m.shards[si]
		s.mu.Lock()
		s.expireVerifies(now)
		s.verifySuspects(due)
		s.expireExpected(now)
		for id, p := range s.pending {
			if !now.Before(p.expiry) {
				s.dropPending(id, p)
			}
			// settle also drops a replication whose targets all died.
			b := s.blocks.get(id)
			s.settle(id, b, s.tally(b))
		}
		s.advanceMoves(now, due)
		for id, firstSeen := range s.unknown {
			if firstSeen != 0 && now.Sub(time.Unix(0, firstSeen)) < m.cfg.UnknownReplicaGrace {
				continue
			}
			b := s.blocks.get(id)
			before := s.tally(b)
			b.setState(bForgotten, true)
			ls := s.locs(b)
			for i := range ls {
				s.invalidate(b, &ls[i])
			}
			s.settle(id, b, before)
		}
		for id := range s.corrupt {
			b := s.blocks.get(id)
			before := s.tally(b)
			if !b.complete() || before.good < max(1, int(b.replication)) {
				continue
			}
			if !s.enoughVerified(b) {
				s.verifyUnverified(b, due)
				continue
			}
			ls := s.locs(b)
			for i := range ls {
				if s.isBad(b, ls[i]) {
					s.invalidate(b, &ls[i])
				}
			}
			s.settle(id, b, before)
		}
		for id := range s.over {
			if s.moves[id] != nil {
				continue // the extra copy is a move's (move.go)
			}
			b := s.blocks.get(id)
			before := s.tally(b)
			if !s.enoughVerified(b) {
				s.verifyUnverified(b, due)
				continue
			}
			for excess := s.count(b).normal - int(b.replication); excess > 0; excess-- {
				f := s.excessReplica(b)
				if f == nil {
					break
				}
				s.invalidate(b, f)
			}
			s.settle(id, b, before)
		}
		for id := range s.misplaced {
			if !collect {
				break
			}
			if _, under := s.under[id]; s.pending[id] == nil && !under {
				todo = append(todo, job{id, s.tally(s.blocks.get(id)).good})
			}
		}
		for id := range s.under {
			if !collect {
				break
			}
			if s.pending[id] != nil {
				continue
			}
			// A source may be a leaving node; the order is by the
			// replicas that count.
			if b := s.blocks.get(id); s.tally(b).good > 0 {
				todo = append(todo, job{id, s.count(b).normal})
			}
		}
		s.shrink()
		s.mu.Unlock()
	}

	if len(todo) > 0 {
		sort.Slice(todo, func(i, j int) bool {
			if todo[i].good != todo[j].good {
				return todo[i].good < todo[j].good
			}
			return todo[i].id < todo[j].id
		})
		free := m.freeStreams()
		for _, j := range todo {
			if free <= 0 {
				break
			}
			if m.scheduleReplication(j.id, now) {
				free--
			}
		}
	}

	for _, n := range m.nodes() {
		if n.snap.Load().State == Live {
			n.flushInvalidates(m.cfg.MaxBlocksPerDelete)
		}
	}
}

// freeStreams returns the replication streams left across live datanodes.
func (m *Manager) freeStreams() int {
	free := 0
	for _, n := range m.nodes() {
		if n.snap.Load().State == Live {
			free += max(0, m.cfg.MaxReplicationStreams-int(n.streams.Load()))
		}
	}
	return free
}

// scheduleReplication schedules one replication of block id if it is still
// under-replicated and unscheduled, and reports whether it did.
func (m *Manager) scheduleReplication(id uint64, now time.Time) bool {
	s := m.shard(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.blocks.get(id)
	if b == nil || s.pending[id] != nil {
		return false
	}
	_, under := s.under[id]
	_, misplaced := s.misplaced[id]
	if !under && !misplaced {
		return false
	}
	before := s.tally(b)
	lc := s.count(b)
	need := lc.want(int(b.replication)) - lc.normal
	if need <= 0 && misplaced {
		need = 1 // a copy in another rack; the excess deletion keeps the spread
	}
	if need <= 0 {
		return false
	}
	// Source: a live verified good holder with a free stream, the least
	// busy one. An unverified one may be a datanode that only claims the
	// block, and its targets would then count as verified copies.
	if s.verifiedGood(b) == 0 {
		s.verifyUnverified(b, now.Add(m.cfg.ReplicationTimeout))
		return false
	}
	var src *node
	var srcLoc loc
	for _, l := range s.locs(b) {
		n := s.node(l)
		if !s.isGood(b, l) || !l.has(locVerified) || n.snap.Load().State != Live ||
			int(n.streams.Load()) >= m.cfg.MaxReplicationStreams {
			continue
		}
		// Least busy first; on a tie a decommissioning node, which takes
		// no new writes (HDFS prefers them too).
		if src == nil || n.streams.Load() < src.streams.Load() ||
			(n.streams.Load() == src.streams.Load() && retiring(n) && !retiring(src)) {
			src, srcLoc = n, l
		}
	}
	if src == nil {
		return false
	}
	r := s.replica(b, srcLoc)
	// The counted replicas count against the rack policy: a block with two
	// copies in one rack gets its third in another. Those on
	// decommissioning or maintenance nodes are leaving.
	var have []*node
	for _, l := range s.locs(b) {
		if s.counted(b, l) {
			have = append(have, s.node(l))
		}
	}
	picked := m.choose(need, r.Length, have, nil, func(x *node) bool { return s.find(b, x) >= 0 })
	if len(picked) == 0 {
		return false
	}
	p := &pending{expiry: now.Add(m.cfg.ReplicationTimeout), source: src, targets: make([]*node, len(picked))}
	c := Command{Kind: Replicate, Block: r, Targets: make([]Datanode, len(picked))}
	for i, t := range picked {
		p.targets[i] = t.n
		c.Targets[i] = *t.d
	}
	s.pending[id] = p
	src.streams.Add(1)
	src.queueCommand(c)
	s.settle(id, b, before)
	return true
}

// PendingCommands hands out (and forgets) up to MaxCommandsPerHeartbeat of
// the commands queued for datanode id, oldest first, for the reply to its
// heartbeat. Replicate and Verify commands for blocks the namespace has
// since forgotten are dropped. Nil if there are none or id is unknown.
func (m *Manager) PendingCommands(id string) []Command {
	n := m.lookup(id)
	if n == nil {
		return nil
	}
	n.qmu.Lock()
	k := min(len(n.cmds), m.cfg.MaxCommandsPerHeartbeat)
	if k == 0 {
		n.qmu.Unlock()
		return nil
	}
	out := make([]Command, k)
	copy(out, n.cmds)
	rest := copy(n.cmds, n.cmds[k:])
	clear(n.cmds[rest:])
	n.cmds = n.cmds[:rest]
	n.qmu.Unlock()

	kept := out[:0]
	for _, c := range out {
		if (c.Kind == Replicate || c.Kind == Verify) && !m.expected(c.Block.BlockID) {
			continue
		}
		kept = append(kept, c)
	}
	if len(kept) == 0 {
		return nil
	}
	return kept
}

func (m *Manager) expected(id uint64) bool {
	s := m.shard(id)
	rl := s.mu.RLock()
	defer rl.RUnlock()
	b := s.blocks.get(id)
	return b != nil && b.expected()
}
