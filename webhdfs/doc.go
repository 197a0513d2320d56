// Package webhdfs is blockfs's WebHDFS door: Hadoop's WebHDFS REST API
// (/webhdfs/v1/<path>?op=...) translated into calls of the core, on both
// kinds of server.
//
// A door translates and never re-implements a rule of the core. The
// namenode half (NamenodeDoor) runs every op through the client service
// (api.ClientServiceServer), the same entrance every gRPC call goes
// through, so the read barrier, forwarding to the leader and the FSM's
// permission checks apply to it as to any client; it checks only what is
// its own (the op, its parameters, the caller). CREATE, APPEND and OPEN
// answer 307 to a datanode chosen by a DatanodePicker, with a redirect
// token from a RedirectIssuer. The datanode half (DatanodeDoor) checks
// that token and runs the data step as the token's user through the Go
// client library, so the core's Create, Append and read checks refuse a
// request before a byte is stored or sent.
//
// The op table (ops.go) is the single list of operations: each row names
// the handler of each half. The package also holds what both halves share:
// query parameter parsing, the JSON shapes of the API, and Hadoop's
// RemoteException error body with the HTTP status Hadoop gives each
// exception. It imports nothing from namenode/ or datanode/: each of them
// builds its door in one adapter file (webhdfs_door.go).
package webhdfs
