// Package namenode is the blockfs namenode server: the core around the
// replicated state machine (package namenode/fsm), the gRPC services
// clients, datanodes, operators and peer namenodes call, and the block map
// built from datanode reports. Its doors to other protocols (the web UI in
// namenode/webui, WebHDFS in webhdfs) are packages of their own, wired in by
// one adapter file each (webui_door.go, webhdfs_door.go).
//
// # Replication
//
// Namespace changes are typed commands (fsm.CmdType): one type byte, then
// a protobuf message from api/fsm.proto. The leader proposes them to Raft,
// coalescing concurrent proposals into batches (package proposer); a follower
// forwards the encoded command to the leader through
// NamenodeInternal.Apply (propose.go). The FSM applies them
// deterministically: the proposer fixes every input (mtime, caller, the
// leader's lease limits), the FSM allocates block ids and generation stamps
// from counters inside the namespace.
//
// # Reads
//
// Every request is validated once, at its handler: its path is parsed
// (namespace.ParsePath) and the parsed path is what the namespace walks.
// Reads are linearizable by default: the serving node obtains a read index
// (on the leader, the commit index confirmed by one VerifyLeader round that
// concurrent reads share; on a follower, the same obtained from the leader
// through NamenodeInternal.ReadIndex) and serves the read locally once it has
// applied that index (reads.go). READ_CONSISTENCY_STALE serves from local
// state at once, after waiting for ReadOptions.min_applied_index
// (read-your-writes). Reads see the FSM only through fsm.FSM.View and its
// query methods.
//
// # Block map
//
// Replica locations are soft state outside Raft, as in HDFS HA: every
// datanode reports to every namenode, and each namenode keeps its own
// blocks.Manager, told by the FSM which blocks exist (fsm.BlockEvents).
// Only the leader hands out commands (replicate, delete).
//
// # Configuration
//
// Config has one section per concern (Raft, Namespace, Leases, Auth,
// Tokens, Blocks), each with its DefaultXConfig and Validate.
package namenode
