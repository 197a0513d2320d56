// Package robustness is blockfs's in-process cluster fault suite, after
// etcd's robustness tests and Jepsen: clients run concurrent namespace
// operations (create, mkdir, delete, rename, get file info, list) on a tiny
// set of paths while a fault is injected into a 3-namenode localcluster,
// and the recorded history is checked.
//
// Faults (subtests of TestFaultsLinearizable and TestFaultsStale): kill the
// leader, kill a follower, partition the leader from the majority,
// partition a follower, restart a node, and make a follower catch up from
// a snapshot. Partitions cut Raft traffic only (localcluster's InmemRaft);
// gRPC between namenodes (write forwarding, read index) and from clients
// still flows, so a partitioned namenode keeps accepting client calls and
// forwarding them to the leader it last knew. That is the interesting case
// for reads (a deposed leader must not answer from local state), but it is
// not a full network partition.
//
// Checks, per fault:
//   - the history is linearizable (porcupine, against Model: a map of
//     path -> kind); a write that failed without a namespace verdict
//     (unavailable, timeout, not leader) is indeterminate and gets an
//     infinite return time; failed reads are dropped;
//   - every acknowledged create/mkdir that nothing could have removed is
//     present at the end (LostWrites);
//   - every namenode's namespace hash is equal once healed;
//   - at most one leader per term (from the AppendEntries/InstallSnapshot
//     each node sends, seen by the in-memory transport);
//   - no goroutines leak (goleak, in TestMain).
//
// In the stale read mode, reads are not part of the linearizability check
// (they may be stale); instead each namenode's reads must never go back in
// applied index (within one process lifetime: a restarted node starts over
// from its snapshot), and read-your-writes holds: a stale read carrying the
// index of the client's own acknowledged create sees the file, on any node.
//
// TestVisibleLength checks a second model, LengthModel, on a cluster with
// datanodes: one writer appends, hflushes and closes while readers stat
// and read the file and the leader and a datanode restart; a read after
// an acknowledged hflush must see at least those bytes, and the visible
// length never goes back.
//
// Environment: BLOCKFS_FAULT_ROUNDS=N repeats every fault N times;
// BLOCKFS_SEED fixes the workload's random seed.
package robustness
