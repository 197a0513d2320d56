package webui

import (
	"context"
	"time"

	"github.com/blockfs/blockfs/api"
)

// StatusSource is what the cluster pages (overview, namenodes, datanodes,
// one datanode) show: this namenode's own view of Raft, of the namespace's
// size and of the datanodes. The namenode implements it.
//
// Every method reads this node's local state and must be safe to call
// from many goroutines at once. None may block on Raft or on another node
// except PeerStatus, which must return by ctx's deadline. Values returned
// are copies the UI may keep; the source never changes them afterwards.
type StatusSource interface {
	// Node returns this namenode's identity and Raft view. On a node
	// whose Raft has not started or has shut down, State is "shut down"
	// and the numbers are zero.
	Node() Node

	// Members returns the servers of the Raft configuration this node
	// holds, each joined with the addresses the replicated member table
	// records for it (empty when it has none yet). It fails with an
	// errs.Unavailable error when the configuration cannot be read.
	Members() ([]Member, error)

	// PeerStatus asks the namenode serving gRPC at grpcAddr for its own
	// view (its ClientService.ClusterStatus), as this node's peer.
	PeerStatus(ctx context.Context, grpcAddr string) (*api.ClusterStatusResponse, error)

	// Counts returns the namespace's inode and block counts as this
	// node has applied them.
	Counts() Counts

	// BlockStats returns the block manager's summary: datanodes, space
	// and the replication backlog.
	BlockStats() BlockStats

	// Datanodes returns every datanode that has registered with this
	// namenode, live or dead, in no particular order.
	Datanodes() []Datanode

	// Datanode returns the registered datanode id, and false when no
	// datanode of that id has registered.
	Datanode(id string) (Datanode, bool)
}

// Node is a namenode's view of itself and of Raft.
type Node struct {
	ID string
	// State is the Raft state in lower case ("leader", "follower",
	// "candidate"), or "shut down".
	State string
	// Leader is the leader's id as this node knows it, "" when unknown.
	Leader                              string
	Term, CommitIndex, Applied, LastLog uint64
}

// Member is one server of the Raft configuration.
type Member struct {
	ID string
	// Suffrage is "voter", "nonvoter" or "staging".
	Suffrage string
	RaftAddr string
	// GRPCAddr and HTTPAddr are what the member table records ("" when
	// the member has not registered them yet).
	GRPCAddr, HTTPAddr string
}

// Counts are the namespace's sizes.
type Counts struct {
	Files, Directories, Blocks int
}

// BlockStats summarizes the block manager.
type BlockStats struct {
	Live, Dead                          int
	Capacity, Used                      uint64
	UnderReplicated, Missing, Corrupt   int
	PendingReplication, PendingDeletion int
	// MisReplicated: blocks whose replicas span fewer racks than the
	// placement policy wants.
	MisReplicated int
}

// Datanode is one registered datanode.
type Datanode struct {
	ID string
	// Addr is its data (gRPC) address, HTTPAddr its HTTP port's ("" when
	// it serves none).
	Addr, HTTPAddr string
	// Rack is its failure domain, as the namenode's topology says.
	Rack           string
	Live           bool
	Capacity, Used uint64
	// Replicas is how many block replicas it holds.
	Replicas      int
	LastHeartbeat time.Time
	FailedVolumes uint32
	// AdminState is the operator's state in HDFS's names (NORMAL,
	// DECOMMISSION_INPROGRESS, DECOMMISSIONED, ENTERING_MAINTENANCE,
	// IN_MAINTENANCE); BlocksLeft and BytesLeft what a datanode leaving
	// still waits for.
	AdminState string
	BlocksLeft int
	BytesLeft  uint64
}
