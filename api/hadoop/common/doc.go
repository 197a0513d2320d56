// Package hadoopcommon holds the generated Go for Hadoop's common RPC
// messages (hadoop-common's RpcHeader, IpcConnectionContext,
// ProtobufRpcEngine, Security and HAServiceProtocol .proto files), the
// framing of Hadoop IPC that the HDFS door (package hadooprpc) speaks.
//
// The .proto files are Apache Hadoop's, under the Apache License 2.0 whose
// header each keeps, as vendored by github.com/colinmarc/hdfs/v2 v2.4.0
// (internal/protocol). Three things were changed here, none of them on the
// wire: the protobuf package is blockfs.hadoop.common (Hadoop's is
// hadoop.common), go_package names this package, and imports name files by
// their path in this repository. Protobuf package names and file paths never
// reach Hadoop's wire format, and with them changed this copy can be linked
// into one binary beside another copy of Hadoop's messages (an HDFS client
// in a test) without a registry conflict.
//
// Regenerate with `make proto`.
package hadoopcommon
