package localcluster_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/blocks"
	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/datanode"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/localcluster"
	"github.com/blockfs/blockfs/namenode"
)

const (
	balCapacity = 6 << 20
	balBlock    = 64 << 10
)

// startUnbalanced starts 3 namenodes and 5 datanodes in 2 racks, each of
// balCapacity bytes, with the fifth stopped while files fill the other
// four (replication 3), then started again empty: 1 empty + 4 full.
func startUnbalanced(t *testing.T, ctx context.Context) (*localcluster.Cluster, *client.Client, []uint64) {
	t.Helper()
	c, err := localcluster.Start(ctx, localcluster.Config{Datanodes: 5, Racks: 2, Dir: t.TempDir(),
		Namenode: func(_ int, nc *namenode.Config) { nc.Namespace.DefaultBlockSize = balBlock },
		Datanode: func(_ int, dc *datanode.Config) { dc.Store.Capacity = balCapacity }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.StopDatanode(4); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "dn5 dead", func() bool {
		i := c.Leader()
		if i < 0 {
			return false
		}
		d, _ := c.Namenode(i).Blocks().Datanode(c.DatanodeID(4))
		return d.State == blocks.Dead
	})
	cl, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	var ids []uint64
	for i := range 16 {
		p := fmt.Sprintf("/bal/f%d", i)
		if err := cl.WriteFile(ctx, p, bytes.Repeat([]byte{byte(i)}, 2*balBlock), client.CreateOptions{Replication: 3}); err != nil {
			t.Fatal(err)
		}
		locs, err := cl.GetBlockLocations(ctx, p, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range locs.Blocks {
			ids = append(ids, b.Block.Id)
		}
	}
	if err := c.RestartDatanode(ctx, 4); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitDatanodes(ctx); err != nil {
		t.Fatal(err)
	}
	return c, cl, ids
}

func waitFor(t *testing.T, ctx context.Context, what string, ok func() bool) {
	t.Helper()
	for !ok() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// watchReplication fails the test if, on the leader's block map, any of
// ids ever has fewer good replicas than its replication; stop ends it.
func watchReplication(t *testing.T, c *localcluster.Cluster, ids []uint64) (stop func(), checks *atomic.Int64) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	checks = new(atomic.Int64)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
			i := c.Leader()
			if i < 0 {
				continue
			}
			nn := c.Namenode(i)
			if nn == nil {
				continue // stopped since
			}
			bm := nn.Blocks()
			for _, id := range ids {
				if live, want := bm.NeededReplication(id); live < want {
					t.Errorf("block %d has %d good replicas of %d on %s", id, live, want, nn.ID())
				}
			}
			if st := bm.Stats(); st.UnderReplicated > 0 {
				t.Errorf("%d under-replicated blocks on %s", st.UnderReplicated, nn.ID())
			}
			checks.Add(1)
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done); wg.Wait() }) }, checks
}

// utilisations returns each live datanode's used/capacity in percent as
// the leader sees it, and their mean (used over capacity).
func utilisations(t *testing.T, ctx context.Context, c *localcluster.Cluster) (map[string]float64, float64) {
	t.Helper()
	i, err := c.WaitLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	var used, capacity uint64
	for _, d := range c.Namenode(i).Blocks().Datanodes() {
		if d.State == blocks.Live {
			out[d.ID] = float64(d.Used) * 100 / float64(d.Capacity)
			used += d.Used
			capacity += d.Capacity
		}
	}
	return out, float64(used) * 100 / float64(capacity)
}

func waitRun(t *testing.T, ctx context.Context, cl *client.Client, run string) *api.BalancerStatus {
	t.Helper()
	for {
		p, err := cl.BalancerProgress(ctx)
		if err == nil && p.RunId == run && p.State != api.BalancerState_BALANCER_RUNNING {
			return p
		}
		select {
		case <-ctx.Done():
			t.Fatalf("balancer run %s: %v (last %v, %v)", run, ctx.Err(), p, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestBalancerEmptyPlusFull (issue 22): a balancer run over 1 empty + 4
// full datanodes in 2 racks ends with every datanode within the
// threshold, moved bytes onto the empty one, never had a block below its
// replication (a watcher checks the leader's block map throughout), keeps
// every block in 2 racks, and fsck is healthy. A second run while it runs
// is refused naming who started the first; bad thresholds are refused;
// the leader's death mid-run leaves no run on the new leader, where a new
// one carries on from the block map to balance.
func TestBalancerEmptyPlusFull(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, cl, ids := startUnbalanced(t, ctx)
	const threshold = 5
	util, mean := utilisations(t, ctx, c)
	if u := util[c.DatanodeID(4)]; u != 0 || mean-u <= threshold {
		t.Fatalf("not unbalanced to start with: %v (mean %.1f)", util, mean)
	}
	stop, checks := watchReplication(t, c, ids)
	defer stop()

	for _, th := range []float64{0, -1, 100.5} {
		_, err := cl.StartBalancer(ctx, &api.StartBalancerRequest{Threshold: th})
		if !errs.Is(err, errs.Invalid) || !strings.Contains(err.Error(), "out of range") {
			t.Fatalf("threshold %v: %v, want invalid argument", th, err)
		}
	}
	// Slow enough that the run is still going when the second one comes.
	st, err := cl.StartBalancer(ctx, &api.StartBalancerRequest{Threshold: threshold, Bandwidth: 256 << 10})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cl.StartBalancer(ctx, &api.StartBalancerRequest{Threshold: threshold})
	if !errs.Is(err, errs.Precondition) || !strings.Contains(err.Error(), "two balancers at once") || !strings.Contains(err.Error(), "user/root") {
		t.Fatalf("second balancer: %v", err)
	}
	// Kill the leader once some bytes moved.
	for {
		p, err := cl.BalancerProgress(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if p.State != api.BalancerState_BALANCER_RUNNING {
			t.Fatalf("the run ended before the leader change: %v", p)
		}
		if p.BytesMoved > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	old := c.Leader()
	if err := c.StopNamenode(old); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	p, err := cl.BalancerProgress(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p.State != api.BalancerState_BALANCER_NONE || p.RunId == st.RunId {
		t.Fatalf("the new leader has a run: %v", p)
	}
	// Resume on the new leader, as dfs balancer does; again if leadership
	// moves once more (two namenodes left on a loaded machine).
	for try := 0; ; try++ {
		st, err = cl.StartBalancer(ctx, &api.StartBalancerRequest{Threshold: threshold, Bandwidth: 4 << 20})
		if err != nil {
			t.Fatal(err)
		}
		p = waitRun(t, ctx, cl, st.RunId)
		if try == 3 || !strings.Contains(p.Reason, "stopped leading") {
			break
		}
	}
	if p.State != api.BalancerState_BALANCER_BALANCED || p.BytesMoved == 0 || p.Iterations == 0 {
		t.Fatalf("run ended %v", p)
	}
	if p.MaxUtilization-p.MeanUtilization > threshold || p.MeanUtilization-p.MinUtilization > threshold {
		t.Fatalf("reported spread %v..%v around %v", p.MinUtilization, p.MaxUtilization, p.MeanUtilization)
	}
	util, mean = utilisations(t, ctx, c)
	for id, u := range util {
		if u > mean+threshold || u < mean-threshold {
			t.Errorf("%s at %.2f%%, mean %.2f%%: outside the threshold", id, u, mean)
		}
	}
	// Every block still spans both racks, and fsck is healthy.
	for i := range 16 {
		locs, err := cl.GetBlockLocations(ctx, fmt.Sprintf("/bal/f%d", i), 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range locs.Blocks {
			racks := map[string]bool{}
			for _, d := range b.Locations {
				racks[d.Rack] = true
			}
			if len(racks) < 2 {
				t.Errorf("block %d in racks %v", b.Block.Id, racks)
			}
		}
	}
	fsck, err := cl.Fsck(ctx, "/")
	if err != nil {
		t.Fatal(err)
	}
	if !fsck.Healthy() || fsck.Under != 0 || fsck.MisReplicated != 0 {
		t.Fatalf("fsck: %+v", fsck)
	}
	stop()
	if checks.Load() == 0 {
		t.Fatal("the watcher never checked")
	}
	for i := range 16 {
		data, err := cl.ReadFile(ctx, fmt.Sprintf("/bal/f%d", i))
		if err != nil || !bytes.Equal(data, bytes.Repeat([]byte{byte(i)}, 2*balBlock)) {
			t.Fatalf("f%d reads back wrong: %v", i, err)
		}
	}
}

// TestBalancerRefusedInSafeMode: a leader in safe mode refuses a run, and
// once out of it, a balanced cluster's run ends at once with nothing
// moved; a stop with no run is refused.
func TestBalancerRefusedInSafeMode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Config{Namenodes: 1, Datanodes: 3, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := cl.SafeMode(ctx, api.SafeModeAction_SAFE_MODE_ENTER); err != nil {
		t.Fatal(err)
	}
	_, err = cl.StartBalancer(ctx, &api.StartBalancerRequest{Threshold: 10})
	if !errs.Is(err, errs.Precondition) || !strings.Contains(err.Error(), "safe mode") {
		t.Fatalf("in safe mode: %v", err)
	}
	if _, err := cl.SafeMode(ctx, api.SafeModeAction_SAFE_MODE_LEAVE); err != nil {
		t.Fatal(err)
	}
	st, err := cl.StartBalancer(ctx, &api.StartBalancerRequest{Threshold: 10})
	if err != nil {
		t.Fatal(err)
	}
	p := waitRun(t, ctx, cl, st.RunId)
	if p.State != api.BalancerState_BALANCER_BALANCED || p.BytesMoved != 0 || p.Iterations != 0 {
		t.Fatalf("balanced cluster: %v", p)
	}
	if _, err := cl.StopBalancer(ctx); !errs.Is(err, errs.Precondition) {
		t.Fatalf("stop without a run: %v", err)
	}
}
