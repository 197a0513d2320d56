// Package datanode is the blockfs datanode server: a gRPC DataService over
// the lbm block store, heartbeats and block reports to every namenode,
// commands (delete, replicate) from the leader, the write pipeline, and
// replication transfers.
//
// # Namenodes
//
// Like an HDFS BPServiceActor, one goroutine per namenode registers, sends
// a full block report, then heartbeats every HeartbeatInterval. A reply with
// reregister (or any failed heartbeat, after which the namenode may have
// declared this node dead) makes it register and send a full report again.
// Incremental reports (blocks received and deleted) are queued per namenode
// without blocking the caller and sent in batches after
// IncrementalReportDelay; a failed send keeps them queued. Commands come
// only from the leader's heartbeat replies and run on a small worker pool,
// so a slow replication never delays a heartbeat.
//
// # Write pipeline
//
// WriteBlock takes a header, then chunks. Each chunk is forwarded at once
// to the next datanode of the pipeline (header.pipeline[0], with the rest
// of the pipeline) and appended to an in-memory buffer. When the client
// closes its side with exactly header.block.length bytes, the local lbm Put
// (all or nothing, durable on return) and the downstream acknowledgement
// proceed in parallel; the response goes back only when both succeeded. A
// downstream failure fails the write with Unavailable and names, in the
// trailer key BadNodeKey, the first datanode that failed; the local copy,
// if it was just stored, is deleted again, so a failed write leaves nothing
// visible anywhere.
//
// # Tokens
//
// Block tokens are not checked yet. Config.TokenChecker is the seam: nil
// means no checking; the inode id from the write header is recorded with
// every block (lbm BlockMeta.Inode) so a later read token can be matched to
// it.
package datanode
