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
// without blocking the caller and sent after IncrementalReportDelay (0 by
// default: at once, those queued while one is in flight going together in
// the next), or to a namenode that last said it is not the leader after
// at least FollowerReportDelay (50 ms: only the leader's Complete waits for
// a report, so the followers' gather); a failed send keeps them queued.
// Commands come
// only from the leader's heartbeat replies and run on a small worker pool,
// so a slow replication never delays a heartbeat.
//
// # Write pipeline
//
// WriteBlock takes a header, then packets of whole chunks with their
// CRC32Cs (docs/FORMATS.md, "Data transfer"). For each packet the receive
// loop checks sequence and offset, verifies every chunk, forwards the
// packet to the next datanode and writes it into an lbm BlockWriter at
// once; a responder goroutine waits for the downstream ack of each packet
// and then acks it upstream, in order. The last packet commits the
// replica; its ack (the final one) goes up once the downstream committed
// too. Bytes are held only from a packet's receipt to its ack, and all
// streams together hold at most MaxInflightBytes: past it a stream stops
// receiving. A failure names the member to blame in the trailer
// (BadNodeKey, BadOffsetKey) and drops what this datanode wrote, so a
// failed write leaves nothing visible anywhere. A peer idle past
// StreamIdleTimeout ends the call (watch).
//
// ReadBlock answers chunk-aligned messages with the stored chunk CRCs,
// read with lbm ReadChunks: only the chunks the range touches.
//
// # Tokens
//
// Block tokens are not checked yet. Config.TokenChecker is the seam: nil
// means no checking; the inode id from the write header is recorded with
// every block (lbm BlockMeta.Inode) so a later read token can be matched to
// it.
package datanode
