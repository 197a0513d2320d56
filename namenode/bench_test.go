package namenode_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/namenode"
)

// BenchmarkCreateRaft creates files through a 3-node Raft cluster from 16
// concurrent gRPC clients and reports creates/s. Raft batches concurrent
// applies into one log write and one FSM lock acquisition.
func BenchmarkCreateRaft(b *testing.B) {
	x := startCluster(b, 3, func(i int, c *namenode.Config) {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	})
	l := x.leader()
	const clients = 16
	for w := range clients {
		x.mkdir(l, fmt.Sprintf("/bench/%d", w))
	}
	var next atomic.Int64
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for w := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := x.client(l)
			ctx := metadata.AppendToOutgoingContext(context.Background(), namenode.UserKey, "root")
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				if _, err := c.Create(ctx, &api.CreateRequest{Path: fmt.Sprintf("/bench/%d/f%d", w, i), Replication: 3, BlockSize: 1024}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "creates/s")
	b.ReportMetric(histMean(b, x.c.Namenode(l), "blockfs_namenode_proposal_batch_commands"), "commands/entry")
}

// histMean reads the mean of a histogram from a node's metrics.
func histMean(b *testing.B, n *namenode.Namenode, name string) float64 {
	mfs, err := n.Registry().Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			h := mf.GetMetric()[0].GetHistogram()
			if h.GetSampleCount() > 0 {
				return h.GetSampleSum() / float64(h.GetSampleCount())
			}
		}
	}
	return 0
}

// BenchmarkGetBlockLocationsScaling calls GetBlockLocations on a 10-block
// file in-process from 1 and 2 goroutines and reports calls/s. Reads take
// only the FSM's shared read lock and the block map's sharded locks, so two
// goroutines should do close to twice the work of one.
func BenchmarkGetBlockLocationsScaling(b *testing.B) {
	x := startCluster(b, 1, func(i int, c *namenode.Config) {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	})
	x.registerDatanodes(5)
	l := x.leader()
	c := x.client(l)
	cr, err := c.Create(x.root(), &api.CreateRequest{Path: "/f10", Replication: 3, BlockSize: 1024})
	if err != nil {
		b.Fatal(err)
	}
	var blocks []*api.Block
	var prev *api.Block
	for range 10 {
		r, err := c.AddBlock(x.root(), &api.AddBlockRequest{Path: "/f10", InodeId: cr.Status.InodeId, Previous: prev})
		if err != nil {
			b.Fatal(err)
		}
		prev = r.Block.Block
		prev.Length = 1024
		blocks = append(blocks, prev)
	}
	if _, err := c.Complete(x.root(), &api.CompleteRequest{Path: "/f10", InodeId: cr.Status.InodeId, Blocks: blocks}); err != nil {
		b.Fatal(err)
	}
	srv := x.c.Namenode(l).ClientServer()
	for _, g := range []int{1, 2} {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs(namenode.UserKey, "root"))
			req := &api.GetBlockLocationsRequest{Path: "/f10", Read: &api.ReadOptions{Consistency: api.ReadConsistency_READ_CONSISTENCY_STALE}}
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for range g {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for next.Add(1) <= int64(b.N) {
						r, err := srv.GetBlockLocations(ctx, req)
						if err != nil || len(r.BlockIds) != 10 {
							b.Errorf("get block locations: %v", err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
		})
	}
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// incomingAs is the server-side context of a call made as user.
func incomingAs(user string) context.Context {
	return metadata.NewIncomingContext(context.Background(), metadata.Pairs(namenode.UserKey, user))
}
