// Package blocks is the namenode's soft state about datanodes and replicas:
// the datanode registry and its liveness, the block map (which live
// datanode holds which replica of which block), the placement policy for new
// replicas, and the replication and invalidation work queues.
//
// None of this is in Raft. As in HDFS HA, every datanode registers with,
// heartbeats to and sends block reports to every namenode, and each namenode
// builds its own Manager from them. The namespace tells the Manager which
// blocks should exist (SetExpected, Forget) as it applies the Raft log, so a
// follower's Manager is as complete as a leader's (a snapshot restore
// replaces the whole expected set with a Reset); only the leader calls
// ComputeWork and hands the resulting commands to datanodes
// (PendingCommands).
//
// # Replica states
//
// A reported replica is, from the Manager's point of view, one of:
//
//   - good: the block is expected, the replica's generation stamp matches,
//     it is not marked corrupt and no delete is scheduled. Only good replicas
//     on live datanodes are served by Locations and counted toward the
//     block's replication.
//   - corrupt: marked by ReportCorrupt, or stale (its generation stamp
//     differs from the expected one). Never served; deleted by ComputeWork
//     once the block has enough good replicas (never before: a corrupt copy
//     may be the last one).
//   - unknown: the namespace has not said the block exists. Held, not
//     served, not counted, until SetExpected arrives or
//     Config.UnknownReplicaGrace passes, after which ComputeWork deletes it.
//     The grace covers a follower-turned-leader that has not yet applied the
//     log entries creating the block.
//   - invalidating: a delete was scheduled (Forget, over-replication,
//     corrupt, unknown past grace). It stays in the map, uncounted and
//     unserved, until the datanode reports the replica gone.
//
// A good replica is also verified or not, and may be suspect (verify.go):
// verified when this namenode saw it written or its datanode re-checked it
// on a Verify command; suspect when a client reported it bad, which only
// orders that re-check. Deletions of good copies prefer unverified ones and
// never take the last verified one.
//
// # Admin states
//
// A datanode's admin state (admin.go: Normal, Decommissioning,
// Decommissioned, Entering/In Maintenance, replicated through Raft and set
// by SetAdminStates) changes what its good replicas count for, not whether
// they are good: only replicas on live normal datanodes count toward
// replication and may go as excess, so a leaving node's blocks are copied
// elsewhere by the rules above and its own copies are never deleted while
// the others are unverified. AdminProgress (decommission.go) says when a
// leaving node is done; placement never picks one.
//
// # Concurrency
//
// All methods are safe for concurrent use. The block map is split into 64
// shards by block id, each behind its own read-mostly lock, so a
// LocationReader (the GetBlockLocations hot path; Locations is built on it)
// only ever takes one shard's read lock per block, and never a
// Manager-wide lock; it reads the clock and each datanode's snapshot once
// per request, not once per block. Datanode descriptions are immutable
// snapshots swapped atomically on each heartbeat. Lock order: node.mu, then shard.mu, then node.qmu or the
// random source; the registry is copy-on-write and read without locks.
//
// Time comes only from Config.Now, so tests drive liveness, timeouts and
// grace periods by advancing a fake clock.
package blocks
