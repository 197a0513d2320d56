package namenode_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/namenode"
	"github.com/blockfs/blockfs/security"
)

// BenchmarkGetBlockLocationsAudit measures what the audit log adds to
// GetBlockLocations (an "open" line a call): two namenodes of the same
// shape in one process, one with the audit log off and one writing it to a
// rotating file, called in turns of 500 in ABBA order so both see the same
// machine. via=grpc calls each through its gRPC port on loopback, as a
// client of the in-process cluster does (the authorizer, the interceptors
// and the wire included); via=handler calls the service's handler
// directly with the context the authorizer leaves (the caller's identity),
// the smallest call there is and so the largest share for the line. It
// reports each side's ns/op and on/off, the figure to read.
func BenchmarkGetBlockLocationsAudit(b *testing.B) {
	for _, via := range []string{"grpc", "handler"} {
		for _, n := range []int{1, 1000} {
			b.Run(fmt.Sprintf("via=%s/blocks=%d", via, n), func(b *testing.B) {
				xOff, lOff, off, reqOff := locationsCluster(b, "/f", n, 0)
				dir := b.TempDir()
				xOn, lOn, on, reqOn := locationsCluster(b, "/f", n, 0, func(c *namenode.Config) {
					c.Audit.Path = filepath.Join(dir, "audit.log")
				})
				ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs(namenode.UserKey, "root"))
				ctx = security.WithIdentity(ctx, security.Identity{Role: security.RoleUser, Name: "root"})
				call := func(srv api.ClientServiceServer, req *api.GetBlockLocationsRequest) func() error {
					return func() error { _, err := srv.GetBlockLocations(ctx, req); return err }
				}
				sides := []struct {
					call func() error
					d    time.Duration
					n    int
				}{{call: call(off, reqOff)}, {call: call(on, reqOn)}}
				if via == "grpc" {
					for i, x := range []struct {
						c   *tc
						l   int
						req *api.GetBlockLocationsRequest
					}{{xOff, lOff, reqOff}, {xOn, lOn, reqOn}} {
						cl, rctx, req := x.c.client(x.l), x.c.root(), x.req
						sides[i].call = func() error { _, err := cl.GetBlockLocations(rctx, req); return err }
					}
				}
				const turn = 500
				b.ResetTimer()
				for done, k := 0, 0; done < b.N; k++ {
					for _, i := range [][2]int{{0, 1}, {1, 0}}[k%2] {
						s := &sides[i]
						m := min(turn, b.N-done)
						start := time.Now()
						for range m {
							if err := s.call(); err != nil {
								b.Fatal(err)
							}
						}
						s.d += time.Since(start)
						s.n += m
					}
					done += min(turn, b.N-done)
				}
				b.StopTimer()
				offNs := float64(sides[0].d.Nanoseconds()) / float64(sides[0].n)
				onNs := float64(sides[1].d.Nanoseconds()) / float64(sides[1].n)
				b.ReportMetric(offNs, "off-ns/op")
				b.ReportMetric(onNs, "on-ns/op")
				b.ReportMetric(onNs/offNs, "on/off")
			})
		}
	}
}
