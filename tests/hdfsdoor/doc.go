// Package hdfsdoor tests blockfs's HDFS doors (package hdfsrpc on the
// namenodes, Hadoop IPC; the DataTransferProtocol door on the datanodes)
// with a real HDFS client, github.com/colinmarc/hdfs/v2, against an
// in-process cluster; and runs that client's own test suite (suite_test.go).
package hdfsdoor
