// Package hadoopipc serves Hadoop IPC, the RPC protocol HDFS clients speak
// to a namenode (RPC version 9, protobuf engine), over plain TCP with
// Hadoop's simple authentication. It holds the framing and the connection
// loop only: what a method does is its Handler's (package hdfsrpc
// translates ClientProtocol into blockfs's client service).
//
// # The wire, as this package implements it
//
// A connection opens with a 7-byte header:
//
//	"hrpc" (4 bytes) | version 9 (1) | service class (1) | auth protocol (1)
//
// The auth protocol is 0 (none: simple authentication) or 0xDF (SASL, which
// this server refuses: it has no Kerberos). Every later message in either
// direction is a frame:
//
//	length (4 bytes, big-endian, of what follows) | message | message ...
//
// where each message is a varint length followed by that many bytes of
// protobuf. A request frame holds RpcRequestHeaderProto, then (for a call)
// RequestHeaderProto and the method's request message. The first frame of
// a connection must be call id -3 with the IpcConnectionContextProto, which
// names the user (userInfo.effectiveUser) and the protocol. Call id -4 is a
// ping and has no answer. A response frame holds RpcResponseHeaderProto
// (call id, status, and on an error the Java exception class name and a
// message) and, on success, the method's response message.
//
// Calls on one connection run concurrently (at most Config.MaxInFlight at
// once, then the reader waits) and are answered as they finish, each
// carrying its call id. A frame over Config.MaxFrame, a malformed header or
// a wrong version ends the connection with a FATAL response, as Hadoop's
// server does; an error of one call (an unknown method, a bad request
// message, the handler's refusal) is an ERROR response and the connection
// goes on. docs/FORMATS.md ("Hadoop IPC") has the same byte by byte.
//
// Client is the other end: one connection whose concurrent calls are
// told apart by call id, as Hadoop's own client multiplexes them; loadgen
// times the namenode's HDFS door with it.
package hadoopipc
