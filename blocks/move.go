package blocks

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/blockfs/blockfs/errs"
)

// A move (the balancer's unit of work) relocates one replica of a complete
// block from a source datanode to a target that does not hold the block,
// without the block ever having fewer good replicas than its replication:
//
//  1. copying: StartMove queues a Replicate command on a sender (the source
//     if its replica is verified, else another verified holder), paced at
//     the move's bandwidth, and records it as a pending replication to the
//     target, so the target's "received" report makes its replica verified
//     (verify.go: a target of a replication this namenode scheduled). A copy
//     not received within ReplicationTimeout (plus the time the sender's
//     MaxReplicationStreams copies of the block take at the bandwidth) is
//     dropped with the pending replication; the source keeps its replica.
//  2. verifying: once the target holds a good replica, ComputeWork orders a
//     Verify command of it; the Verify carries the namespace's CRC32C, and
//     only the target's answer (ReportVerified) confirms the move. An
//     answer not in by ReplicationTimeout drops the move.
//  3. done: on the next ComputeWork, if the block still has its replication
//     (and at least one) in verified good replicas besides the source, and
//     its good replicas without the source keep the rack policy, the source
//     replica is scheduled for deletion. Otherwise the move is dropped and
//     the source kept (the block is then over-replicated, and the ordinary
//     excess deletion, which never takes the last verified copy, tidies it).
//
// While a move is open its block is left alone by the excess deletion
// (the extra copy is the move's), and every step runs in ComputeWork, which
// the namenode runs only as a leader out of safe mode. A move is refused on
// datanodes that are not live, on a sender without a free replication
// stream (MaxReplicationStreams, shared with re-replication), on a target
// with MaxReplicationStreams moves already coming in, and on blocks that
// are under construction, under-, over- or mis-replicated, corrupt,
// suspect, or already being replicated or moved.

// Move asks for one replica of BlockID to go from Source to Target.
type Move struct {
	BlockID        uint64
	Source, Target string // datanode ids
	// Bandwidth paces the copy on its sender, bytes per second shared by
	// all its moves (0: unpaced).
	Bandwidth uint64
}

// MoveState is where a move is.
type MoveState uint32

const (
	MoveCopying MoveState = iota
	MoveVerifying
	// MoveDone: the source replica is scheduled for deletion.
	MoveDone
	// MoveDropped: given up; the source keeps its replica.
	MoveDropped
)

func (s MoveState) String() string {
	return [...]string{"copying", "verifying", "done", "dropped"}[s]
}

// MoveHandle follows one move started by StartMove.
type MoveHandle struct {
	Move
	Length uint64 // the block's bytes
	m      *Manager
	state  atomic.Uint32
	reason atomic.Pointer[string]
}

// State returns the move's state and, once dropped, why.
func (h *MoveHandle) State() (MoveState, string) {
	st := MoveState(h.state.Load())
	if r := h.reason.Load(); r != nil {
		return st, *r
	}
	return st, ""
}

// Finished reports whether the move is done or dropped.
func (h *MoveHandle) Finished() bool {
	st, _ := h.State()
	return st == MoveDone || st == MoveDropped
}

// Cancel drops the move if it is still open: a copy not yet handed to its
// sender is withdrawn, and the source keeps its replica.
func (h *MoveHandle) Cancel() {
	s := h.m.shard(h.BlockID)
	s.mu.Lock()
	defer s.mu.Unlock()
	if mv := s.moves[h.BlockID]; mv != nil && mv.h == h {
		mv.sender.withdraw(h.BlockID, mv.target.id)
		s.dropMove(h.BlockID, mv, "cancelled")
	}
}

// move is an open move, in shard.moves. Guarded by the shard's mu.
type move struct {
	h              *MoveHandle
	source, target *node
	sender         *node
	due            time.Time // verifying: when an unanswered verify is given up
	confirmed      bool      // the target answered a Verify
}

// StartMove starts mv. It returns an errs.NotFound error for an unknown
// datanode or block, and an errs.Precondition error saying why when the
// move may not start now (see above); nothing changes then, except that a
// block with no verified replica has its replicas' verifies ordered.
func (m *Manager) StartMove(mv Move) (*MoveHandle, error) {
	const op = "blocks.Manager.StartMove"
	src, dst := m.lookup(mv.Source), m.lookup(mv.Target)
	switch {
	case src == nil:
		return nil, errs.New(errs.NotFound, op, mv.Source, "unknown datanode")
	case dst == nil:
		return nil, errs.New(errs.NotFound, op, mv.Target, "unknown datanode")
	case src == dst:
		return nil, errs.New(errs.Invalid, op, mv.Source, "source and target are the same datanode")
	case src.snap.Load().State != Live || dst.snap.Load().State != Live:
		return nil, errs.New(errs.Precondition, op, mv.Source+"->"+mv.Target, "both datanodes must be live")
	}
	now := m.cfg.Now()
	s := m.shard(mv.BlockID)
	s.mu.Lock()
	defer s.mu.Unlock()
	name := "block " + strconv.FormatUint(mv.BlockID, 10)
	b := s.blocks.get(mv.BlockID)
	if b == nil || !b.expected() {
		return nil, errs.New(errs.NotFound, op, name, "no such block")
	}
	if why := s.unmovable(b); why != "" {
		return nil, errs.New(errs.Precondition, op, name, why)
	}
	si := s.find(b, src)
	if si < 0 || !s.isGood(b, s.locs(b)[si]) {
		return nil, errs.New(errs.Precondition, op, name, "the source holds no good replica")
	}
	if s.find(b, dst) >= 0 {
		return nil, errs.New(errs.Precondition, op, name, "the target already holds a replica")
	}
	if dst.snap.Load().free() < b.length {
		return nil, errs.New(errs.Precondition, op, name, "the target has no room for the block")
	}
	if int(dst.inbound.Load()) >= m.cfg.MaxReplicationStreams {
		return nil, errs.New(errs.Precondition, op, name, "the target has its most moves coming in")
	}
	if !s.keepsRacks(b, src, dst) {
		return nil, errs.New(errs.Precondition, op, name, "the move would break the rack policy")
	}
	sender, sl := s.moveSender(b, src)
	if sender == nil {
		if s.verifiedGood(b) == 0 {
			// As for re-replication: only a verified replica is copied.
			// A leader that did not see the block written (it took over
			// since, or restarted) has only reports, so it asks the
			// holders to verify theirs, and a later plan can move it.
			s.verifyUnverified(b, now.Add(m.cfg.ReplicationTimeout))
		}
		return nil, errs.New(errs.Precondition, op, name, "no live verified holder with a free replication stream")
	}
	before := s.tally(b)
	h := &MoveHandle{Move: mv, Length: b.length, m: m}
	s.pending[b.id] = &pending{expiry: now.Add(m.cfg.ReplicationTimeout + m.pacedCopy(b.length, mv.Bandwidth)), source: sender, targets: []*node{dst}}
	sender.streams.Add(1)
	dst.inbound.Add(1)
	s.moves[b.id] = &move{h: h, source: src, target: dst, sender: sender}
	sender.queueCommand(Command{Kind: Replicate, Block: s.replica(b, sl), Targets: []Datanode{*dst.snap.Load()}, Bandwidth: mv.Bandwidth})
	s.settle(b.id, b, before)
	return h, nil
}

// pacedCopy is how long a copy of length bytes may take at bw bytes/s
// when the sender runs its most streams at once, all paced together: what
// a move's copy gets beyond ReplicationTimeout, so that a low bandwidth
// does not time every copy out.
func (m *Manager) pacedCopy(length, bw uint64) time.Duration {
	if bw == 0 {
		return 0
	}
	return time.Duration(float64(length) * float64(m.cfg.MaxReplicationStreams) / float64(bw) * float64(time.Second))
}

// unmovable says why b may not be moved now, "" if it may. Caller holds
// s.mu.
func (s *shard) unmovable(b *blockInfo) string {
	id := b.id
	_, under := s.under[id]
	_, over := s.over[id]
	_, bad := s.corrupt[id]
	_, sus := s.suspect[id]
	_, ver := s.verifying[id]
	_, mis := s.misplaced[id]
	switch {
	case !b.complete():
		return "the block is under construction"
	case s.moves[id] != nil:
		return "the block is already being moved"
	case s.pending[id] != nil:
		return "the block is being replicated"
	case under || over || mis:
		return "the block is not at its replication in the rack policy"
	case bad || sus || ver:
		return "the block has a corrupt, suspect or unverified replica being checked"
	}
	return ""
}

// moveSender picks the datanode that copies b for a move off src: src if
// its replica is verified and it has a free stream, else the least busy
// live verified holder with one; nil if none. Caller holds s.mu.
func (s *shard) moveSender(b *blockInfo, src *node) (*node, loc) {
	limit := int32(s.m.cfg.MaxReplicationStreams)
	var best *node
	var bl loc
	for _, l := range s.locs(b) {
		n := s.node(l)
		if !s.isGood(b, l) || !l.has(locVerified) || n.snap.Load().State != Live || n.streams.Load() >= limit {
			continue
		}
		if n == src {
			return n, l
		}
		if best == nil || n.streams.Load() < best.streams.Load() {
			best, bl = n, l
		}
	}
	return best, bl
}

// keepsRacks reports whether b's good replicas, with src's replaced by
// dst's, keep the rack policy (placement.go): at least two racks when the
// cluster has more and the block more than one replica, and at most
// (replicas-1)/racks + 2 in one rack. Caller holds s.mu.
func (s *shard) keepsRacks(b *blockInfo, src, dst *node) bool {
	idx := s.m.place.Load()
	racks := len(idx.racks)
	if racks < 2 {
		return true
	}
	count := map[int32]int{idx.rack(dst): 1}
	total := 1
	for _, l := range s.locs(b) {
		if n := s.node(l); n != src && n != dst && s.isGood(b, l) {
			count[idx.rack(n)]++
			total++
		}
	}
	for r, k := range count {
		if r < 0 || k > (total-1)/racks+2 {
			return false // a node newer than the index: decide next time
		}
	}
	return total < 2 || len(count) >= 2
}

// advanceMoves takes each open move of the shard a step (see above); due
// is when a verify ordered now is given up. ComputeWork calls it after
// expiring pending replications. Caller holds s.mu.
func (s *shard) advanceMoves(now, due time.Time) {
	for id, mv := range s.moves {
		b := s.blocks.get(id)
		switch {
		case b == nil || !b.expected() || !b.complete():
			s.dropMove(id, mv, "the block was deleted or reopened")
			continue
		case mv.source.snap.Load().State != Live || mv.target.snap.Load().State != Live:
			s.dropMove(id, mv, "a datanode of the move is not live")
			continue
		}
		si, ti := s.find(b, mv.source), s.find(b, mv.target)
		if si < 0 || !s.isGood(b, s.locs(b)[si]) {
			s.dropMove(id, mv, "the source replica went away")
			continue
		}
		has := ti >= 0 && s.isGood(b, s.locs(b)[ti])
		switch MoveState(mv.h.state.Load()) {
		case MoveCopying:
			if !has {
				if p := s.pending[id]; p == nil || !p.has(mv.target) {
					s.dropMove(id, mv, "the copy timed out")
				}
				continue
			}
			mv.h.state.Store(uint32(MoveVerifying))
			mv.due = due
			s.orderVerify(b, &s.locs(b)[ti], due)
		case MoveVerifying:
			switch {
			case !has:
				s.dropMove(id, mv, "the target replica went away")
			case mv.confirmed && s.locs(b)[ti].has(locVerified):
				s.finishMove(id, b, mv, si)
			case !now.Before(mv.due):
				s.dropMove(id, mv, "the target did not answer its verify")
			}
		}
	}
}

// finishMove deletes the source replica of b (at index si) if the block
// keeps its replication in verified good replicas and the rack policy
// without it, and drops the move otherwise. Caller holds s.mu.
func (s *shard) finishMove(id uint64, b *blockInfo, mv *move, si int) {
	verified := 0
	for _, l := range s.locs(b) {
		if s.node(l) != mv.source && l.has(locVerified) && s.isGood(b, l) {
			verified++
		}
	}
	if verified < max(1, int(b.replication)) {
		s.dropMove(id, mv, "the block would fall below its replication")
		return
	}
	if !s.keepsRacks(b, mv.source, mv.target) {
		s.dropMove(id, mv, "the move would now break the rack policy")
		return
	}
	before := s.tally(b)
	s.invalidate(b, &s.locs(b)[si])
	s.closeMove(id, mv)
	mv.h.state.Store(uint32(MoveDone))
	s.settle(id, b, before)
}

// dropMove gives up move mv of block id; the source keeps its replica.
// Caller holds s.mu.
func (s *shard) dropMove(id uint64, mv *move, why string) {
	if p := s.pending[id]; p != nil && p.has(mv.target) && MoveState(mv.h.state.Load()) == MoveCopying {
		s.dropPending(id, p)
		if b := s.blocks.get(id); b != nil {
			s.settle(id, b, s.tally(b))
		}
	}
	s.closeMove(id, mv)
	mv.h.reason.Store(&why)
	mv.h.state.Store(uint32(MoveDropped))
}

func (s *shard) closeMove(id uint64, mv *move) {
	delete(s.moves, id)
	mv.target.inbound.Add(-1)
}

// moveVerified notes that datanode n answered a Verify of block id: the
// confirmation an open move to n waits for. Caller holds s.mu.
func (s *shard) moveVerified(id uint64, n *node) {
	if mv := s.moves[id]; mv != nil && mv.target == n {
		mv.confirmed = true
	}
}

// has reports whether n is a target of p.
func (p *pending) has(n *node) bool {
	for _, t := range p.targets {
		if t == n {
			return true
		}
	}
	return false
}

// withdraw removes a still queued Replicate command of block id to
// datanode target (a move's copy: a re-replication of the block cannot be
// scheduled while the move is open).
func (n *node) withdraw(id uint64, target string) {
	n.qmu.Lock()
	defer n.qmu.Unlock()
	kept := n.cmds[:0]
	for _, c := range n.cmds {
		if c.Kind == Replicate && c.Block.BlockID == id && len(c.Targets) == 1 && c.Targets[0].ID == target {
			continue
		}
		kept = append(kept, c)
	}
	clear(n.cmds[len(kept):])
	n.cmds = kept
}

// OpenMoves counts the moves not yet done or dropped.
func (m *Manager) OpenMoves() int {
	k := 0
	for i := range m.shards {
		s := &m.shards[i]
		rl := s.mu.RLock()
		k += len(s.moves)
		rl.RUnlock()
	}
	return k
}
