// Package audit writes the namenode's audit log: one line per namespace
// operation, allowed or refused, in the shape of HDFS's FSNamesystem.audit
// log, so the tools that read HDFS audit logs read this one:
//
//	2026-12-01 22:57:24,123 INFO FSNamesystem.audit: allowed=true	ugi=alice (auth:MTLS)	ip=/127.0.0.1	cmd=create	src=/data/x	dst=null	perm=alice:supergroup:rw-r--r--	proto=rpc
//
// Fields are separated by tabs. A field with nothing to say is "null", as
// in HDFS. ugi is the caller's authenticated identity, ip the address the
// call came from, cmd HDFS's name for the operation, src and dst its paths,
// perm the owner, group and mode of the inode the operation made or
// changed, proto "rpc", "webhdfs" or "http" (the web UI).
//
// Logging is off the request path: Log appends the event, unformatted, to
// one of several buffers (so concurrent requests do not serialize on one
// lock) and returns; a writer goroutine takes the buffers every
// FlushInterval, orders the events by time, formats them and writes them
// to the rotating file and, if asked, to standard output. When the buffers
// are full (the writer cannot keep up), events are dropped and counted,
// never waited for.
package audit
