package blocks

import (
	"fmt"
	"sort"
	"strings"

	"github.com/blockfs/blockfs/errs"
)

// Progress is how far a datanode is from leaving: from Decommissioning to
// Decommissioned, or from EnteringMaintenance to InMaintenance.
type Progress struct {
	// Blocks are the blocks the node holds, or is in the recorded write
	// pipeline of, that lack their copies on other nodes: for a
	// decommission their full replication in verified replicas on live
	// normal nodes, for a maintenance min(MinReplicas, replication) of
	// them. Blocks under construction always count (HDFS-17658: not
	// counting them lost data): a block being written, or the last block
	// of a file hflushed and still open, is only safe once its file is
	// closed and the block copied.
	Blocks int
	// Bytes are those blocks' bytes.
	Bytes uint64
	// UnderConstruction are the blocks of Blocks still being written, and
	// OpenFiles their distinct files: what holds the node back until
	// their writers close.
	UnderConstruction, OpenFiles int
	// Reported: the node is live and sent a full block report since it
	// registered here; until then what it holds is unknown and it is
	// never done.
	Reported bool
}

// Done reports whether the node may take its next state.
func (p Progress) Done() bool { return p.Reported && p.Blocks == 0 }

// AdminProgress returns datanode id's progress toward leaving (see
// Progress), as its admin state asks: the decommission rule for a
// Decommissioning or Decommissioned node, the maintenance rule for one in
// maintenance. It returns false for an unknown or normal datanode. With
// verify (the leader's monitor), a block whose normal copies suffice in
// number but are not all verified gets Verify commands for them, so that
// a datanode's unverified say-so never lets another node leave (doc.go).
func (m *Manager) AdminProgress(id string, verify bool) (Progress, bool) {
	n := m.lookup(id)
	if n == nil {
		return Progress{}, false
	}
	n.mu.Lock()
	d := n.snap.Load()
	a := d.Admin
	if a.State == AdminNormal {
		n.mu.Unlock()
		return Progress{}, false
	}
	p := Progress{Reported: d.State == Live && !n.needFull}
	held := n.blocks.Append(make([]uint64, 0, n.blocks.Len()))
	n.mu.Unlock()

	due := m.cfg.Now().Add(m.cfg.ReplicationTimeout)
	open := map[uint64]struct{}{}
	seen := map[uint64]struct{}{}
	short := func(s *shard, b *blockInfo) {
		if _, dup := seen[b.id]; dup || !b.expected() {
			return
		}
		seen[b.id] = struct{}{}
		repl := int(b.replication)
		if !b.complete() {
			p.Blocks++
			p.Bytes += b.length
			p.UnderConstruction++
			open[b.inode] = struct{}{}
			return
		}
		want := repl
		if a.State.Maintenance() {
			want = min(a.minReplicas(), repl)
		}
		c := s.count(b)
		if c.verified >= want {
			return
		}
		p.Blocks++
		p.Bytes += b.length
		if verify && c.normal >= want {
			s.verifyUnverified(b, due)
		}
	}
	forEachShard(m, len(held), func(i int) uint64 { return held[i] }, func(s *shard, i int) {
		if b := s.blocks.get(held[i]); b != nil {
			short(s, b)
		}
	})
	// Blocks whose pipeline names the node and that it has not reported
	// (a replica being written is not in a report until finalized).
	for si := range m.shards {
		s := &m.shards[si]
		s.mu.Lock()
		for bid, ids := range s.writing {
			for _, x := range ids {
				if x == id {
					if b := s.blocks.get(bid); b != nil {
						short(s, b)
					}
					break
				}
			}
		}
		s.mu.Unlock()
	}
	p.OpenFiles = len(open)
	return p, true
}

// maxNamed bounds the block ids a refusal names.
const maxNamed = 10

// CheckDecommission reports whether datanodes ids may be decommissioned
// together, changing nothing. It refuses, with an errs.Invalid error, an
// id that is not registered, and with an errs.Precondition error a dead
// datanode, or a set whose leaving would leave some block without room
// for its replication on the live normal datanodes that remain: fewer of
// them than the block's replication, too few with the block's size free
// beside the copies it keeps, or (in a cluster of several racks) one rack
// left for a block of more than one replica. The error names the first
// blocks that could not be placed and how many there are. Datanodes
// already decommissioning or decommissioned pass.
func (m *Manager) CheckDecommission(ids []string) error {
	const op = "Decommission"
	leaving, err := m.checkLeaving(op, ids)
	if err != nil {
		return err
	}
	// The nodes that stay: live and normal, not leaving.
	var frees []uint64
	racks := map[int32]struct{}{}
	idx := m.place.Load()
	for _, n := range m.nodes() {
		d := n.snap.Load()
		if d.State != Live || d.Admin.State != AdminNormal || leaving[n.num] {
			continue
		}
		frees = append(frees, d.free())
		racks[idx.rack(n)] = struct{}{}
	}
	sort.Slice(frees, func(i, j int) bool { return frees[i] < frees[j] })
	roomFor := func(size uint64) int { // nodes with size free
		return len(frees) - sort.Search(len(frees), func(i int) bool { return frees[i] >= size })
	}
	oneRackLeft := len(idx.racks) > 1 && len(racks) < 2

	var bad []uint64
	for si := range m.shards {
		s := &m.shards[si]
		rl := s.mu.RLock()
		for _, b := range s.blocks.slots {
			if b == nil || !b.expected() {
				continue
			}
			repl := int(b.replication)
			if repl > len(frees) {
				bad = append(bad, b.id) // the cluster cannot keep it at all
				continue
			}
			keep, touched := 0, false
			for _, l := range s.locs(b) {
				if leaving[l.num()] {
					touched = true
				} else if s.counted(b, l) {
					keep++
				}
			}
			if !touched {
				continue
			}
			if (repl > 1 && oneRackLeft) || repl-keep > roomFor(b.length)-keep {
				bad = append(bad, b.id)
			}
		}
		rl.RUnlock()
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Slice(bad, func(i, j int) bool { return bad[i] < bad[j] })
	why := fmt.Sprintf("%d normal live datanodes would remain", len(frees))
	if oneRackLeft {
		why += ", all in one rack"
	}
	return errs.Newf(errs.Precondition, op, strings.Join(ids, ","),
		"decommissioning would leave %d blocks without room for their replication (%s); first %s",
		len(bad), why, namedBlocks(bad))
}

// CheckMaintenance reports whether datanodes ids may enter maintenance,
// changing nothing: every one registered (else errs.Invalid) and live
// (else errs.Precondition).
func (m *Manager) CheckMaintenance(ids []string) error {
	_, err := m.checkLeaving("Maintenance", ids)
	return err
}

// checkLeaving checks that every id is a registered live datanode and
// returns them by node number.
func (m *Manager) checkLeaving(op string, ids []string) (map[uint32]bool, error) {
	if len(ids) == 0 {
		return nil, errs.New(errs.Invalid, op, "", "no datanode named")
	}
	leaving := make(map[uint32]bool, len(ids))
	for _, id := range ids {
		n := m.lookup(id)
		if n == nil {
			return nil, errs.Newf(errs.Invalid, op, id, "no datanode %q is registered", id)
		}
		if n.snap.Load().State != Live {
			return nil, errs.Newf(errs.Precondition, op, id, "datanode %s is dead: its blocks are re-replicated already, and it cannot serve copies", id)
		}
		leaving[n.num] = true
	}
	return leaving, nil
}

// namedBlocks lists the first maxNamed ids of bad.
func namedBlocks(bad []uint64) string {
	k := min(len(bad), maxNamed)
	parts := make([]string, k)
	for i := range k {
		parts[i] = fmt.Sprint(bad[i])
	}
	s := "[" + strings.Join(parts, " ") + "]"
	if len(bad) > k {
		s += fmt.Sprintf(" and %d more", len(bad)-k)
	}
	return s
}

// AdminCounts returns how many registered datanodes are in each admin
// state (for metrics and status pages).
func (m *Manager) AdminCounts() map[AdminState]int {
	out := make(map[AdminState]int, len(AdminStates))
	for _, a := range AdminStates {
		out[a] = 0
	}
	for _, n := range m.nodes() {
		out[n.snap.Load().Admin.State]++
	}
	return out
}
