// Package namenode is the blockfs namenode server: a hashicorp/raft state
// machine over the namespace, the gRPC services clients and datanodes call,
// and the block map built from datanode reports.
//
// # Replication
//
// Namespace changes are typed commands (command.go): one type byte, then a
// protobuf message from api/fsm.proto. The leader proposes them to Raft; a
// follower forwards the encoded command to the leader through
// NamenodeInternal.Apply. The FSM applies them deterministically: the
// proposer fixes every input (mtime, caller), the FSM allocates block ids and
// generation stamps from counters inside the namespace.
//
// Snapshots are the member table, the signing keys and the retry cache,
// then the namespace image, streamed to the sink from a copy-on-write
// namespace.View in slices under the read lock, so writes go on while it is
// encoded; restore reads them into a fresh state and swaps it in.
//
// # Reads
//
// Reads are linearizable by default: the serving node obtains a read index
// (on the leader, the commit index confirmed by one VerifyLeader round that
// concurrent reads share; on a follower, the same obtained from the leader
// through NamenodeInternal.ReadIndex) and serves the read locally once it has
// applied that index. READ_CONSISTENCY_STALE serves from local state at once,
// after waiting for ReadOptions.min_applied_index (read-your-writes).
//
// # Block map
//
// Replica locations are soft state outside Raft, as in HDFS HA: every
// datanode reports to every namenode, and each namenode keeps its own
// blocks.Manager. Only the leader hands out commands (replicate, delete).
package namenode
