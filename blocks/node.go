package blocks

import (
	"sort"
	"sync"
	"sync/atomic"
)

// node is the Manager's record of one datanode. It is created on first
// registration and never removed, so the block map names it by its number
// (num, an index into registry.byNum) and that number stays valid.
type node struct {
	id string
	// num is the node's registration number: 0 for the first datanode
	// registered, then 1, 2...; dense and never reused (nodes are never
	// removed), so readers can index a table by it (see Located).
	num uint32
	// snap is the current immutable description; replaced, never mutated.
	snap atomic.Pointer[Datanode]
	// streams counts scheduled replications with this node as source.
	streams atomic.Int32
	// inbound counts open moves with this node as target (move.go).
	inbound atomic.Int32

	// mu serializes liveness transitions and reports from this node, and
	// guards blocks and needFull. Taken before any shard lock.
	mu       sync.Mutex
	blocks   idSet // what the node last reported holding
	needFull bool  // registered or revived, no full report since

	// qmu guards invalidate and cmds. A leaf lock: nothing is taken while
	// holding it.
	qmu        sync.Mutex
	invalidate map[uint64]Replica // deletes scheduled, not yet in a command
	cmds       []Command          // commands not yet handed out
}

func newNode(d Datanode) *node {
	n := &node{
		id:         d.ID,
		invalidate: make(map[uint64]Replica),
		needFull:   true,
	}
	n.snap.Store(&d)
	return n
}

func (n *node) queueInvalidate(r Replica) {
	n.qmu.Lock()
	n.invalidate[r.BlockID] = r
	n.qmu.Unlock()
}

func (n *node) queueCommand(c Command) {
	n.qmu.Lock()
	n.cmds = append(n.cmds, c)
	n.qmu.Unlock()
}

// flushInvalidates turns up to limit scheduled deletes into one Delete
// command, unless one is already waiting to be handed out.
func (n *node) flushInvalidates(limit int) {
	n.qmu.Lock()
	defer n.qmu.Unlock()
	if len(n.invalidate) == 0 {
		return
	}
	for i := range n.cmds {
		if n.cmds[i].Kind == Delete {
			return
		}
	}
	ids := make([]uint64, 0, len(n.invalidate))
	for id := range n.invalidate {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	if len(ids) > limit {
		ids = ids[:limit]
	}
	c := Command{Kind: Delete, Blocks: make([]Replica, len(ids))}
	for i, id := range ids {
		c.Blocks[i] = n.invalidate[id]
		delete(n.invalidate, id)
	}
	n.cmds = append(n.cmds, c)
}

// pendingDeletes counts scheduled deletes not yet handed out.
func (n *node) pendingDeletes() int {
	n.qmu.Lock()
	defer n.qmu.Unlock()
	k := len(n.invalidate)
	for i := range n.cmds {
		if n.cmds[i].Kind == Delete {
			k += len(n.cmds[i].Blocks)
		}
	}
	return k
}

// registry is an immutable view of all datanodes, replaced on registration
// of a new id (rare), so lookups take no lock.
type registry struct {
	byID   map[string]*node
	sorted []*node // by id
	byNum  []*node // by node.num
	// rank is each node's position in sorted, by node.num: readers order
	// datanodes by id with an integer compare.
	rank []uint32
}
