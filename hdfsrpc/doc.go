// Package hdfsrpc is the namenode's HDFS door: it serves Hadoop's
// ClientNamenodeProtocol (org.apache.hadoop.hdfs.protocol.ClientProtocol)
// over Hadoop IPC (package hadoopipc) by translating each method into a
// call of blockfs's client service (api.ClientServiceServer), in process,
// as the connection's user. It is a translation, never a second
// implementation: the read barrier, forwarding, permission checks, leases
// and quotas are the client service's, and every method is first admitted
// by the one policy table (security.Policy, rows "hadoop.ClientProtocol/<method>").
//
// What it adds is only what is Hadoop's own: its message shapes
// (HdfsFileStatusProto, LocatedBlocksProto, DirectoryListingProto), its
// exception class names and message texts for blockfs's error kinds, its
// create flags, and StandbyException for a write sent to a follower, so
// that an HDFS client fails over to the leader as it does between HDFS's
// active and standby namenodes.
//
// Block tokens travel the HDFS-1081 way: a LocatedBlockProto's blockToken
// is a Hadoop TokenProto whose identifier is blockfs's signed token, kind
// HDFS_BLOCK_TOKEN and an empty password. In per-request and cached token
// mode every block of a reply carries the same token bytes (the one
// token covering the request's blocks); in per-block mode each its own.
// The client treats them as opaque and hands them to the datanode, whose
// DataTransferProtocol door verifies them as its gRPC door does.
//
// docs/OPERATIONS.md lists every method, its status and its test.
package hdfsrpc
