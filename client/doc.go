// Package client is the Go client library for blockfs: namespace calls to
// the namenodes (finding the leader and retrying on NotLeader and
// Unavailable, with backoff, within the caller's deadline), and the block
// write pipeline and replica-failover reads against datanodes.
package client
