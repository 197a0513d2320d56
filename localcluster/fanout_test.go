package localcluster_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/blockfs/blockfs/internal/testutil/promsum"

	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/localcluster"
)

// writeStreams sums blockfs_datanode_write_streams_total{how} over the
// cluster's live datanodes.
func writeStreams(t *testing.T, c *localcluster.Cluster, how string) float64 {
	t.Helper()
	var gs []prometheus.Gatherer
	for _, d := range c.Datanodes() {
		gs = append(gs, d.Registry())
	}
	return promsum.Sum(t, gs, "blockfs_datanode_write_streams_total", "how", func(v string) bool { return v == how })
}

// pipelineOf creates p for a small write and returns its Writer and the
// datanodes (cluster indexes) of its first block's pipeline.
func pipelineOf(t *testing.T, ctx context.Context, c *localcluster.Cluster, cl *client.Client, p string) (*client.Writer, []int) {
	t.Helper()
	w, err := cl.Create(ctx, p, client.CreateOptions{Replication: 3, BlockSize: blockSize, FirstBlock: true})
	if err != nil {
		t.Fatal(err)
	}
	locs, err := cl.GetBlockLocations(ctx, p, 0, 0)
	if err != nil || len(locs.Blocks) != 1 {
		t.Fatalf("locations of the file being written: %v, %v", describe(locs), err)
	}
	targets, _ := c.Namenodes()[c.Leader()].Blocks().Pipeline(locs.Blocks[0].Block.Id)
	var idx []int
	for _, d := range targets {
		for i := range c.Datanodes() {
			if c.DatanodeID(i) == d.ID {
				idx = append(idx, i)
			}
		}
	}
	if len(idx) != 3 {
		t.Fatalf("pipeline %v: want 3 datanodes", targets)
	}
	return w, idx
}

// TestFanOutWrite: a block whose bytes are all in hand when it is
// finished, no larger than client.Config.FanOutMax, goes to each replica
// directly rather than down a pipeline; a larger one, or one hflushed
// first, goes down the pipeline; a side-by-side write goes on without a
// replica that failed, and is placed anew when every one failed.
func TestFanOutWrite(t *testing.T) {
	c, cl := startCluster(t, false)
	ctx := ctxT(t)
	cfg, err := c.ClientConfig("root")
	if err != nil {
		t.Fatal(err)
	}
	cfg.FanOutMax = blockSize / 2
	narrow, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { narrow.Close() })

	cases := []struct {
		name              string
		cl                *client.Client
		size              int
		hflush            bool
		direct, pipelined float64 // WriteBlock calls added
	}{
		{"small file side by side", cl, 700, false, 3, 0},
		{"every block side by side", cl, 3*blockSize + 7, false, 12, 0},
		{"larger than FanOutMax", narrow, 700, false, 1, 2},
		{"hflush opens the pipeline", cl, 700, true, 1, 2},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := "/fanout/f" + string(rune('a'+i))
			d0, p0 := writeStreams(t, c, "direct"), writeStreams(t, c, "pipelined")
			data := randBytes(tc.size)
			w, err := tc.cl.Create(ctx, p, client.CreateOptions{Replication: 3, BlockSize: blockSize, FirstBlock: true})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write(data[:100]); err != nil {
				t.Fatal(err)
			}
			if tc.hflush {
				if err := w.Hflush(); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := w.Write(data[100:]); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			readBack(t, cl, p, data)
			waitReplicas(t, cl, p, 3)
			if d, p := writeStreams(t, c, "direct")-d0, writeStreams(t, c, "pipelined")-p0; d != tc.direct || p != tc.pipelined {
				t.Fatalf("WriteBlock calls: %v direct and %v pipelined, want %v and %v", d, p, tc.direct, tc.pipelined)
			}
		})
	}

	t.Run("a replica fails", func(t *testing.T) {
		data := randBytes(900)
		w, idx := pipelineOf(t, ctx, c, cl, "/fanout/one-gone")
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
		victim := c.DatanodeID(idx[1])
		if err := c.StopDatanode(idx[1]); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatalf("close with one replica's datanode gone: %v", err)
		}
		readBack(t, cl, "/fanout/one-gone", data)
		// The namenode restores the third replica elsewhere.
		waitReplicas(t, cl, "/fanout/one-gone", 3, victim)
		if err := c.RestartDatanode(ctx, idx[1]); err != nil {
			t.Fatal(err)
		}
		if err := c.WaitDatanodes(ctx); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("every replica fails", func(t *testing.T) {
		data := randBytes(900)
		w, idx := pipelineOf(t, ctx, c, cl, "/fanout/all-gone")
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
		var gone []string
		for _, i := range idx {
			gone = append(gone, c.DatanodeID(i))
			if err := c.StopDatanode(i); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatalf("close with every replica's datanode gone: %v", err)
		}
		readBack(t, cl, "/fanout/all-gone", data)
		locs := waitReplicas(t, cl, "/fanout/all-gone", 2, gone...)
		if len(locs.Blocks) != 1 {
			t.Fatalf("blocks %s: want one", describe(locs))
		}
	})
}
