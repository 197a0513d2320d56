package namenode_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/namenode"
)

// TestSafeModeAfterRestart (issue 22): a namenode restarted under a
// namespace of 100k blocks leads with an empty block map. It stays in safe
// mode, refusing writes with SafeModeException and ordering no replication,
// deletion or verify, while the datanodes' reports arrive one by one, and
// leaves once the threshold has held for the extension. No datanode gets a
// single command from the restart to the end: the map was complete by then.
// Without safe mode the first report alone (1 replica of 3 per block)
// starts a storm of work for 100k blocks.
func TestSafeModeAfterRestart(t *testing.T) {
	const files, dns = 100_000, 3
	x := startCluster(t, 1, func(i int, c *namenode.Config) {
		// Long enough for three 100k-block reports under the race
		// detector on a loaded machine: leaving before the last one is in
		// would (rightly) plan from a partial map.
		c.SafeMode.Extension = 10 * time.Second
		c.MaxRequestSize = 64 << 20
	})
	x.registerDatanodesOnly(dns)
	nn := x.c.Namenode(0)
	loaded, err := namenode.LoadFiles(nn, files, 1000, 1024)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.client(0).Mkdirs(x.root(), &api.MkdirsRequest{Path: "/before", Parents: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.NewAdminClient(x.conns[0]).Snapshot(x.root(), &api.SnapshotRequest{}); err != nil {
		t.Fatal(err)
	}
	report := make([]*api.ReportedBlock, len(loaded))
	for i, f := range loaded {
		report[i] = &api.ReportedBlock{Block: f.Block, InodeId: f.Inode}
	}
	if err := x.c.StopNamenode(0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := x.c.RestartNamenode(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := x.c.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	nn = x.c.Namenode(0)
	if st := nn.SafeMode(); !st.On {
		t.Fatalf("a restarted leader with an empty map is not in safe mode: %+v", st)
	}
	// The datanodes heartbeat throughout and count every command.
	var commands atomic.Int64
	x.registerDatanodesOnly(dns)
	dp := api.NewDatanodeProtocolClient(x.conns[0])
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			for d := range dns {
				id := fmt.Sprintf("dn%d", d)
				hctx, hcancel := context.WithTimeout(asDatanode(context.Background(), id), time.Second)
				r, err := dp.Heartbeat(hctx, &api.HeartbeatRequest{DatanodeId: id, Capacity: 1 << 40})
				hcancel()
				if err == nil {
					commands.Add(int64(len(r.Commands)))
				}
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	defer func() { close(stop); <-done }()

	for d := range dns {
		id := fmt.Sprintf("dn%d", d)
		if _, err := dp.BlockReport(asDatanode(ctx, id), &api.BlockReportRequest{DatanodeId: id, Blocks: report}); err != nil {
			t.Fatal(err)
		}
		if d == 0 {
			// One replica of three per block: past the threshold, so the
			// extension runs, but nothing may be planned from this map.
			time.Sleep(200 * time.Millisecond)
			if st := nn.SafeMode(); !st.On {
				t.Fatalf("left safe mode before the extension passed: %+v", st)
			}
			_, err := x.client(0).Mkdirs(x.root(), &api.MkdirsRequest{Path: "/during", Parents: true})
			if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "SafeModeException") {
				t.Fatalf("a write in safe mode: %v, want FailedPrecondition naming SafeModeException", err)
			}
		}
	}
	for nn.SafeMode().On {
		if ctx.Err() != nil {
			t.Fatalf("never left safe mode: %s", nn.SafeMode().Message)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := x.client(0).Mkdirs(x.root(), &api.MkdirsRequest{Path: "/after", Parents: true}); err != nil {
		t.Fatalf("a write after safe mode: %v", err)
	}
	time.Sleep(500 * time.Millisecond) // a few work intervals with the full map
	if n := commands.Load(); n != 0 {
		t.Fatalf("the datanodes got %d commands after the restart; want none", n)
	}
}
