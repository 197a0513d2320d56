// Package errs holds blockfs's one error type. Every error that crosses a
// package or process boundary is an *Error with a stable Kind; the Kind, not
// the message, is what callers branch on, and it maps to exactly one gRPC
// status code through the table in grpc.go.
//
// # Op names
//
// An Error's Op names the operation the caller asked for, spelled one way:
//
//   - A server operation is its RPC method name, exactly: "AddBlock",
//     "GetBlockLocations", "CommitBlockSynchronization". Every error a
//     client receives for a call names that call's method, however deep it
//     was raised: the op is passed down (namespace.Tree.As takes it), not
//     named again by each layer. A replicated command that no RPC sends
//     is named by its command without the suffix ("SetMember").
//   - A library operation is the package-qualified exported Go name of
//     the entry point the caller called: "pkg.Func" for a function,
//     "pkg.Type.Method" for a method ("lbm.Open", "security.KeySet.Replace",
//     "blocks.Manager.ChooseTargets", "namespace.ParsePath"). An unexported
//     helper uses the name of the exported entry point it serves.
//   - A WebHDFS door's operation is the WebHDFS op it serves ("OPEN",
//     "CREATE"): the op is to HTTP what the method name is to gRPC.
//   - The HDFS data transfer door's operation is the Hadoop op it serves
//     ("READ_BLOCK", "WRITE_BLOCK", "BLOCK_CHECKSUM").
//
// A server that returns a library error for its own operation sets the
// op with WithOp.
package errs
