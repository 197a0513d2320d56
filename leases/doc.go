// Package leases is the namenode's lease table (HDFS's LeaseManager): who
// holds files open for writing, when each holder last renewed, and the
// block recoveries in progress. It is part of the replicated state: every
// change comes from an applied Raft command with the leader's clock in it,
// so the table is the same on every namenode, and it is saved in the FSM
// snapshot (docs/FORMATS.md, "Lease table").
//
// A holder is a client (its client id) acting as one user. A holder that
// does not renew for the soft limit may lose its files to another client's
// create, append or recoverLease; after the hard limit the leader recovers
// them itself. Recovery of a file cuts its last block to the length its
// replicas agree on, under a new generation stamp (the recovery id), and
// closes it.
//
// The table is not safe for concurrent use: the FSM's lock guards it.
package leases
