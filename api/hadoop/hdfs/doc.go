// Package hadoophdfs holds the generated Go for HDFS's own .proto files:
// ClientNamenodeProtocol (the namenode methods HDFS clients call), hdfs
// (LocatedBlocks, HdfsFileStatus and the other shared types), datatransfer
// (the DataTransferProtocol's op headers, packets and acks), and the files
// they import (acl, xattr, encryption, erasurecoding, inotify,
// ClientDatanodeProtocol, ReconfigurationProtocol).
//
// The .proto files are Apache Hadoop's, under the Apache License 2.0 whose
// header each keeps, as vendored by github.com/colinmarc/hdfs/v2 v2.4.0
// (internal/protocol). As in package hadoopcommon, only the protobuf
// package (blockfs.hadoop.hdfs), go_package and import paths were changed;
// none of them reaches the wire.
//
// Regenerate with `make proto`.
package hadoophdfs
