package blocks

import "time"

// State is a datanode's liveness.
type State uint8

const (
	// Live: the datanode heartbeats; its good replicas are served and counted.
	Live State = iota
	// Dead: no heartbeat for Config.DeadAfterMissed intervals. Its replicas
	// were dropped from the block map; a heartbeat makes it Live again and
	// its replicas count again after its next full report.
	Dead
)

func (s State) String() string {
	switch s {
	case Live:
		return "live"
	case Dead:
		return "dead"
	}
	return "unknown"
}

// Datanode is a value snapshot of a datanode as this namenode sees it. The
// Manager never mutates a snapshot it has handed out.
type Datanode struct {
	ID       string // stable identity across restarts
	Addr     string // data-transfer (gRPC) address
	HTTPAddr string
	// HDFSDataAddr is its DataTransferProtocol door ("" when off).
	HDFSDataAddr string
	// Rack is the datanode's failure domain as the namenode's topology
	// resolves it ("" is DefaultRack); never the datanode's own claim.
	Rack     string
	Capacity uint64 // bytes
	Used     uint64 // bytes
	// FailedVolumes is the number of the datanode's volumes that failed.
	FailedVolumes uint32
	LastHeartbeat time.Time
	State         State
	// Admin is the operator's state for it, from the replicated table
	// (admin.go).
	Admin Admin
}

// IDs is the ids of ds, in order.
func IDs(ds []Datanode) []string {
	ids := make([]string, len(ds))
	for i, d := range ds {
		ids[i] = d.ID
	}
	return ids
}

// free is the space left, never negative.
func (d *Datanode) free() uint64 {
	if d.Used >= d.Capacity {
		return 0
	}
	return d.Capacity - d.Used
}

// utilization is Used/Capacity, 1 for a node without capacity.
func (d *Datanode) utilization() float64 {
	if d.Capacity == 0 {
		return 1
	}
	return float64(d.Used) / float64(d.Capacity)
}

// Replica is one copy of a block as a datanode holds it.
type Replica struct {
	BlockID  uint64
	GenStamp uint64
	Length   uint64
	Inode    uint64 // the file the block belongs to (block-token scope)
}

// CommandKind is the kind of a Command.
type CommandKind uint8

const (
	// Delete: remove Command.Blocks from the receiving datanode.
	Delete CommandKind = iota + 1
	// Replicate: copy Command.Block from the receiving datanode (the source)
	// to Command.Targets.
	Replicate
	// Verify: re-read Command.Block on the receiving datanode and check it
	// against its stored checksum; the datanode answers with ReportVerified
	// or a corruption report.
	Verify
)

func (k CommandKind) String() string {
	switch k {
	case Delete:
		return "delete"
	case Replicate:
		return "replicate"
	case Verify:
		return "verify"
	}
	return "unknown"
}

// Command is work for one datanode, handed out by PendingCommands.
type Command struct {
	Kind CommandKind
	// Blocks are the replicas to delete (Delete).
	Blocks []Replica
	// Block is the replica to copy and Targets where to (Replicate), or the
	// replica to re-check (Verify).
	Block   Replica
	Targets []Datanode
	// Bandwidth paces a balancer move's copy (Replicate), bytes per second
	// shared by the sender's moves; 0 for re-replication (move.go).
	Bandwidth uint64
}

// Stats is a point-in-time summary; see Manager.Stats.
type Stats struct {
	Live, Dead     int    // datanodes
	Capacity, Used uint64 // bytes, summed over live datanodes
	Blocks         int    // blocks the namespace expects
	Replicas       int    // good replicas of expected blocks
	// UnderReplicated: complete blocks with fewer good (plus in-flight)
	// replicas than expected, not yet scheduled.
	UnderReplicated int
	// OverReplicated: complete blocks with more good replicas than expected.
	OverReplicated int
	// PendingReplication: scheduled replications not yet completed.
	PendingReplication int
	// PendingDeletion: replicas queued for deletion, not yet handed out.
	PendingDeletion int
	// Corrupt: corrupt or stale replicas of expected blocks not yet
	// scheduled for deletion.
	Corrupt int
	// Unknown: blocks reported by datanodes that the namespace does not know.
	Unknown int
	// Suspect: blocks with a replica a client reported bad, waiting for its
	// datanode to re-verify it.
	Suspect int
	// Verifying: blocks with a verify command outstanding.
	Verifying int
	// MisReplicated: blocks with their replication in one rack of a
	// cluster with more (the rack policy wants at least two).
	MisReplicated int
}
