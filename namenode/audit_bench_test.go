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
// machine. The context is what the authorizer leaves for a handler (the
// caller's identity), as on a served call. It reports each side's ns/op
// and on/off, the figure to read.
func BenchmarkGetBlockLocationsAudit(b *testing.B) {
	for _, n := range []int{1, 1000} {
		b.Run(fmt.Sprintf("blocks=%d", n), func(b *testing.B) {
			_, _, off, reqOff := locationsCluster(b, "/f", n, 0)
			dir := b.TempDir()
			_, _, on, reqOn := locationsCluster(b, "/f", n, 0, func(c *namenode.Config) {
				c.Audit.Path = filepath.Join(dir, "audit.log")
			})
			ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs(namenode.UserKey, "root"))
			ctx = security.WithIdentity(ctx, security.Identity{Role: security.RoleUser, Name: "root"})
			sides := []struct {
				srv api.ClientServiceServer
				req *api.GetBlockLocationsRequest
				d   time.Duration
				n   int
			}{{srv: off, req: reqOff}, {srv: on, req: reqOn}}
			const turn = 500
			b.ResetTimer()
			for done, k := 0, 0; done < b.N; k++ {
				for _, i := range [][2]int{{0, 1}, {1, 0}}[k%2] {
					s := &sides[i]
					m := min(turn, b.N-done)
					start := time.Now()
					for range m {
						if _, err := s.srv.GetBlockLocations(ctx, s.req); err != nil {
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
