// Package datatransfer is the datanode's door for HDFS's own
// DataTransferProtocol (data-transfer version 28), so that unmodified HDFS
// clients read and write blockfs's blocks: READ_BLOCK, WRITE_BLOCK and
// BLOCK_CHECKSUM, over plain TCP.
//
// It translates and implements nothing twice. A read is the datanode's own
// read path (BlockReader), sending the CRC32Cs the store holds: HDFS's
// 512-byte CRC32C chunks are blockfs's chunks. A write is the datanode's
// own write path and pipeline (BlockWriter): the door on the first
// datanode feeds its local write, which stores each packet and forwards it
// to the other targets over blockfs's gRPC pipeline. The block token an
// HDFS client presents is Hadoop's TokenProto with blockfs's signed token
// as its identifier; the door passes that identifier to the read or write
// path, which verifies it as it verifies a gRPC call's token (the same
// verifier, access modes and block checks), so the door has no verifier
// of its own.
//
// What the door does itself is its protocol's own: the framing and its
// bounds, the block pool check, Hadoop's construction stages and seqnos,
// heartbeat packets, the MD5-of-CRCs a BLOCK_CHECKSUM answers, and the
// mapping of errs.Kind to Hadoop's Status. Its operations are the table in
// ops.go; docs/FORMATS.md ("HDFS data transfer") has the framing byte by
// byte and docs/OPERATIONS.md the operations.
//
// The door has no transport security (HDFS's without SASL): a block token
// is its only credential, so the datanode binds it to loopback unless told
// otherwise (docs/SECURITY.md).
package datatransfer
