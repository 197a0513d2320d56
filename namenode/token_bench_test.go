package namenode_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/namenode"
	"github.com/blockfs/blockfs/security"
)

// BenchmarkGetBlockLocationsTokenCache runs GetBlockLocations in-process on
// 1-block files from 1 and 2 goroutines with the issuer's cache in three
// states, and reports calls/s and the cache hit ratio it got:
//
//   - none: per-request mode, a signature per call
//   - hit: cached mode, 4 files x 16 users, all of which fit in the cache
//   - miss: cached mode, 32 files x 512 users (16384 pairs, 4x the cache),
//     cycled so that nearly every call misses a full cache and evicts
//
// A miss should cost about what a call without a cache costs: eviction is
// O(1), not a scan of the shard.
func BenchmarkGetBlockLocationsTokenCache(b *testing.B) {
	const cacheSize = 4096
	type workload struct {
		name         string
		mode         security.Mode
		files, users int
	}
	for _, w := range []workload{
		{"none", security.PerRequest, 32, 512},
		{"hit", security.Cached, 4, 16},
		{"miss", security.Cached, 32, 512},
	} {
		b.Run("workload="+w.name, func(b *testing.B) {
			x := startCluster(b, 1, func(i int, c *namenode.Config) {
				c.Tokens.Mode = w.mode
				c.Tokens.CacheSize = cacheSize
				c.Logger = quietLogger()
			})
			x.registerDatanodes(3)
			var reqs []*api.GetBlockLocationsRequest
			var ctxs []context.Context
			if _, err := x.client(0).Mkdirs(x.root(), &api.MkdirsRequest{Path: "/tc", Parents: true, Mode: 0o755}); err != nil {
				b.Fatal(err) // every user may look inside
			}
			for f := range w.files {
				x.makeFile(0, fmt.Sprintf("/tc/%d", f), 1)
			}
			// Pairs ordered user-major, so consecutive calls differ in both
			// user and file.
			for u := range w.users {
				for f := range w.files {
					reqs = append(reqs, &api.GetBlockLocationsRequest{Path: fmt.Sprintf("/tc/%d", (f+u)%w.files)})
					ctxs = append(ctxs, incomingAs(fmt.Sprintf("u%d", u)))
				}
			}
			n := x.c.Namenode(0)
			srv := n.ClientServer()
			call := func(i int) {
				if _, err := srv.GetBlockLocations(ctxs[i], reqs[i]); err != nil {
					b.Fatalf("get block locations as pair %d: %v", i, err)
				}
			}
			for i := range reqs { // fill the cache, as a running namenode's would be
				call(i)
			}
			// All goroutines draw pairs from one cursor kept across the
			// sub-benchmarks, so a pair comes round again only after every
			// other one: no goroutine trails another into hits, and no run
			// starts on pairs the last one left cached.
			var cursor atomic.Int64
			for _, g := range []int{1, 2} {
				b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
					h0, m0 := tokenCacheCounts(b, n)
					callsPerSec(b, g, func() error {
						i := int(cursor.Add(1) % int64(len(reqs)))
						_, err := srv.GetBlockLocations(ctxs[i], reqs[i])
						return err
					})
					if h1, m1 := tokenCacheCounts(b, n); h1+m1 > h0+m0 {
						b.ReportMetric((h1-h0)/(h1-h0+m1-m0), "hit-ratio")
					}
				})
			}
		})
	}
}

// tokenCacheCounts reads the issuer cache's hit and miss counters.
func tokenCacheCounts(b *testing.B, n *namenode.Namenode) (hits, misses float64) {
	mfs, err := n.Registry().Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, mf := range mfs {
		switch mf.GetName() {
		case "blockfs_security_token_cache_hits_total":
			hits = mf.GetMetric()[0].GetCounter().GetValue()
		case "blockfs_security_token_cache_misses_total":
			misses = mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return hits, misses
}
