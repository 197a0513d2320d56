package blocks

import (
	"sync/atomic"
	"time"
)

// A datanode's admin state is the operator's say about it (HDFS's
// AdminStates), beside its liveness (State). The namenode replicates it
// through Raft and tells every Manager the whole table as it applies it
// (SetAdminStates), so a follower's Manager counts replicas as the
// leader's does.
//
// What each state means to the block map:
//
//   - Normal: a placement target; its good replicas are served and count
//     toward their block's replication.
//   - Decommissioning, Decommissioned: never a placement target; their
//     replicas are served after every normal one, may be replication
//     sources (preferred on ties: they take no new writes), and never count
//     toward replication (HDFS's "decommissioning replicas"), so their
//     blocks are re-replicated onto normal nodes and never deleted as
//     excess.
//   - EnteringMaintenance, InMaintenance: never a placement target; their
//     replicas are served last while the node is live and do not count
//     either, but a block with a maintenance replica only needs
//     max(replication - maintenance replicas, min(MinReplicas,
//     replication)) normal copies (HDFS's getExpectedLiveRedundancyNum):
//     with the default MinReplicas of 1 a 3-replica block with one copy in
//     maintenance is not re-replicated while two normal copies remain. A
//     node in maintenance that dies keeps its replicas in the map
//     (unserved): its death schedules no copies. Leaving maintenance while
//     dead drops them as death does.

// AdminState is a datanode's administrative state.
type AdminState uint8

// The admin states; the numbers are those of api.AdminState and of the
// FSM's table (docs/FORMATS.md): never renumber.
const (
	AdminNormal AdminState = iota
	AdminDecommissioning
	AdminDecommissioned
	AdminEnteringMaintenance
	AdminInMaintenance
)

var adminNames = [...]struct{ short, hdfs string }{
	AdminNormal:              {"normal", "NORMAL"},
	AdminDecommissioning:     {"decommissioning", "DECOMMISSION_INPROGRESS"},
	AdminDecommissioned:      {"decommissioned", "DECOMMISSIONED"},
	AdminEnteringMaintenance: {"entering-maintenance", "ENTERING_MAINTENANCE"},
	AdminInMaintenance:       {"in-maintenance", "IN_MAINTENANCE"},
}

// AdminStates lists every admin state in order.
var AdminStates = []AdminState{AdminNormal, AdminDecommissioning, AdminDecommissioned, AdminEnteringMaintenance, AdminInMaintenance}

func (a AdminState) String() string {
	if int(a) < len(adminNames) {
		return adminNames[a].short
	}
	return "unknown"
}

// HDFS is the state's name in HDFS (WebHDFS's adminState, the web UI).
func (a AdminState) HDFS() string {
	if int(a) < len(adminNames) {
		return adminNames[a].hdfs
	}
	return "UNKNOWN"
}

// Valid reports whether a is one of the admin states.
func (a AdminState) Valid() bool { return int(a) < len(adminNames) }

// Maintenance reports whether a is EnteringMaintenance or InMaintenance.
func (a AdminState) Maintenance() bool {
	return a == AdminEnteringMaintenance || a == AdminInMaintenance
}

// Decommission reports whether a is Decommissioning or Decommissioned.
func (a AdminState) Decommission() bool {
	return a == AdminDecommissioning || a == AdminDecommissioned
}

// Admin is a datanode's admin state with its maintenance terms.
type Admin struct {
	State AdminState
	// Expiry is when a maintenance ends (the leader then proposes Normal);
	// zero outside maintenance.
	Expiry time.Time
	// MinReplicas is how many normal live copies each of the node's
	// blocks keeps while it is in maintenance (0 means 1).
	MinReplicas int
}

// minReplicas is MinReplicas with its default.
func (a Admin) minReplicas() int { return max(1, a.MinReplicas) }

// adminTable is the Manager's copy of the replicated table. Nodes that
// register later take their state from it (Register).
type adminTable struct {
	states atomic.Pointer[map[string]Admin]
	// any: some node is not normal; while false, counting skips the
	// per-replica datanode lookups.
	any atomic.Bool
}

// of returns datanode id's admin state (Normal if it has none).
func (t *adminTable) of(id string) Admin {
	if p := t.states.Load(); p != nil {
		return (*p)[id]
	}
	return Admin{}
}

// SetAdminStates makes states (by datanode id; ids absent are Normal) the
// admin states of every datanode, registered or not. Each registered
// datanode whose state changes has its blocks' queues settled again: a
// decommission puts them in the under-replicated queue, a recommission
// may make them over-replicated. The namenode calls it with the FSM's
// whole table after every change and restore.
func (m *Manager) SetAdminStates(states map[string]Admin) {
	cp := make(map[string]Admin, len(states))
	for id, a := range states {
		if a.State != AdminNormal {
			cp[id] = a
		}
	}
	m.admin.states.Store(&cp)
	if len(cp) > 0 {
		m.admin.any.Store(true)
	}
	for _, n := range m.nodes() {
		m.setAdmin(n, cp[n.id])
	}
	if len(cp) == 0 {
		m.admin.any.Store(false) // every node is normal again
	}
}

// setAdmin gives n admin state a and settles the blocks it holds.
func (m *Manager) setAdmin(n *node, a Admin) {
	n.mu.Lock()
	defer n.mu.Unlock()
	d := *n.snap.Load()
	old := d.Admin
	if old == a {
		return
	}
	d.Admin = a
	n.snap.Store(&d)
	if d.State == Dead && old.State.Maintenance() && !a.State.Maintenance() {
		m.dropReplicas(n) // kept while it was in maintenance
		return
	}
	held := n.blocks.Append(make([]uint64, 0, n.blocks.Len()))
	forEachShard(m, len(held), func(i int) uint64 { return held[i] }, func(s *shard, i int) {
		if b := s.blocks.get(held[i]); b != nil {
			s.settle(held[i], b, s.tally(b))
		}
	})
}

// dropReplicas removes every replica of n from the block map, as death
// does. Caller holds n.mu.
func (m *Manager) dropReplicas(n *node) {
	held := n.blocks.Append(make([]uint64, 0, n.blocks.Len()))
	n.blocks = idSet{}
	forEachShard(m, len(held), func(i int) uint64 { return held[i] }, func(s *shard, i int) {
		s.removeReplica(n, held[i])
	})
}

// liveCount is a block's good replicas as admin states count them.
type liveCount struct {
	normal   int // on live normal datanodes: what counts
	verified int // of those, verified
	other    int // on live decommissioning, decommissioned or maintenance nodes
	maint    int // on maintenance nodes, live or dead
	minMaint int // the largest MinReplicas of those nodes
}

// count counts b's good replicas by their datanode's state. Caller holds
// s.mu.
func (s *shard) count(b *blockInfo) liveCount {
	var c liveCount
	all := !s.m.admin.any.Load()
	for _, l := range s.locs(b) {
		if !s.isGood(b, l) {
			continue
		}
		if !all {
			d := s.node(l).snap.Load()
			switch {
			case d.Admin.State.Maintenance():
				c.maint++
				c.minMaint = max(c.minMaint, d.Admin.minReplicas())
				if d.State == Live {
					c.other++
				}
				continue
			case d.Admin.State != AdminNormal:
				c.other++
				continue
			case d.State != Live:
				continue
			}
		}
		c.normal++
		if l.has(locVerified) {
			c.verified++
		}
	}
	return c
}

// want is how many normal replicas a block of replication repl needs.
func (c liveCount) want(repl int) int {
	if c.maint == 0 {
		return repl
	}
	return max(repl-c.maint, min(c.minMaint, repl))
}

// counted reports whether replica l of b is good and counts toward its
// replication: its datanode is live and normal. Caller holds s.mu.
func (s *shard) counted(b *blockInfo, l loc) bool {
	if !s.isGood(b, l) {
		return false
	}
	if !s.m.admin.any.Load() {
		return true
	}
	d := s.node(l).snap.Load()
	return d.State == Live && d.Admin.State == AdminNormal
}

// retiring reports whether node n is decommissioning or decommissioned
// (a preferred replication source).
func retiring(n *node) bool { return n.snap.Load().Admin.State.Decommission() }

// adminRank is how far back Locations puts a replica on d: normal nodes
// first.
func adminRank(d *Datanode) int {
	if d.Admin.State != AdminNormal {
		return 3
	}
	return 0
}
