// Package errs holds blockfs's one error type. Every error that crosses a
// package or process boundary is an *Error with a stable Kind; the Kind, not
// the message, is what callers branch on, and it maps to exactly one gRPC
// status code through the table in grpc.go.
package errs
