// Package leaktest runs a package's tests under goleak with the ignores
// every blockfs server test needs: goroutines of hashicorp/raft's TCP
// transport and of gRPC's DNS resolver that their Close does not wait for.
package leaktest

import (
	"testing"

	"go.uber.org/goleak"
)

// VerifyTestMain runs m and fails if goroutines other than the ignored
// ones are still running afterwards. Call it from TestMain.
func VerifyTestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/hashicorp/raft.(*NetworkTransport).listen"),
		goleak.IgnoreAnyFunction("github.com/hashicorp/raft.(*NetworkTransport).handleConn"),
		goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/resolver/dns.(*dnsResolver).watcher"),
	)
}
