package localcluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"go.uber.org/goleak"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/blocks"
	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/localcluster"
	"github.com/blockfs/blockfs/namenode"
)

// holders counts each file's block replicas, by block.
func holders(ctx context.Context, t *testing.T, cl *client.Client, files []string) map[uint64][]string {
	t.Helper()
	out := map[uint64][]string{}
	for _, p := range files {
		locs, err := cl.GetBlockLocations(ctx, p, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range locs.Blocks {
			for _, d := range b.Locations {
				out[b.Block.Id] = append(out[b.Block.Id], d.Id)
			}
		}
	}
	return out
}

// TestMaintenanceSchedulesNoCopy (issue 22): a datanode in maintenance,
// alive and then dead, for many heartbeats, costs no copy of its blocks
// (each keeps two normal copies, above the default minimum of one); once
// it is recommissioned while dead, its blocks are re-replicated.
func TestMaintenanceSchedulesNoCopy(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Config{Namenodes: 1, Datanodes: 4, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var files []string
	for i := range 4 {
		p := fmt.Sprintf("/m%d", i)
		if err := cl.WriteFile(ctx, p, pattern(i, decomBlock), client.CreateOptions{BlockSize: decomBlock, Replication: 3}); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	x, xi := c.DatanodeID(0), 0
	for i := range c.Datanodes() {
		n := 0
		for _, hs := range holders(ctx, t, cl, files) {
			for _, h := range hs {
				if h == c.DatanodeID(i) {
					n++
				}
			}
		}
		if n > 0 {
			x, xi = c.DatanodeID(i), i
			break
		}
	}
	if _, err := cl.Maintenance(ctx, []string{x}, time.Now().Add(time.Hour), 1); err != nil {
		t.Fatal(err)
	}
	waitAdmin(ctx, t, cl, x, func(d *api.DatanodeInfo) bool { return d.AdminState == "IN_MAINTENANCE" })
	bm := c.Namenode(0).Blocks()
	noCopies := func(what string, want func(id uint64) int) {
		t.Helper()
		// Several heartbeats and monitor rounds (100 ms each).
		for range 10 {
			time.Sleep(localcluster.DatanodeHeartbeat)
			if st := bm.Stats(); st.PendingReplication != 0 {
				t.Fatalf("%s: %d replications scheduled", what, st.PendingReplication)
			}
			for id, hs := range holders(ctx, t, cl, files) {
				if len(hs) != want(id) {
					t.Fatalf("%s: block %d on %v, want %d replicas", what, id, hs, want(id))
				}
			}
		}
	}
	before := holders(ctx, t, cl, files)
	noCopies("in maintenance", func(uint64) int { return 3 })
	if err := c.StopDatanode(xi); err != nil {
		t.Fatal(err)
	}
	for d, _ := bm.Datanode(x); d.State != blocks.Dead; d, _ = bm.Datanode(x) {
		if ctx.Err() != nil {
			t.Fatal("never dead")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Its replicas are not served while it is dead, and not replaced.
	noCopies("dead in maintenance", func(id uint64) int {
		if slices.Contains(before[id], x) {
			return 2
		}
		return 3
	})
	if _, err := cl.Recommission(ctx, []string{x}); err != nil {
		t.Fatal(err)
	}
	for {
		short := ""
		for id, hs := range holders(ctx, t, cl, files) {
			if len(hs) != 3 {
				short = fmt.Sprintf("block %d on %v", id, hs)
			}
		}
		if short == "" {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("never re-replicated after maintenance: %s", short)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDecommissionRefusalsAndExcludeFile: decommissioning an unknown or
// dead datanode, or more than the cluster can lose, is refused with its
// gRPC code and the blocks named, nothing changed; the exclude file,
// reread as on SIGHUP, decommissions what it names, and a file that does
// not parse is refused with the old list kept.
func TestDecommissionRefusalsAndExcludeFile(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	exclude := filepath.Join(t.TempDir(), "exclude")
	if err := os.WriteFile(exclude, []byte("# nobody yet\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := localcluster.Start(ctx, localcluster.Config{Namenodes: 1, Datanodes: 4, Dir: t.TempDir(),
		Namenode: func(_ int, nc *namenode.Config) { nc.HostsExclude = exclude }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.WriteFile(ctx, "/f", pattern(1, 2*decomBlock), client.CreateOptions{BlockSize: decomBlock, Replication: 3}); err != nil {
		t.Fatal(err)
	}
	locs, err := cl.GetBlockLocations(ctx, "/f", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	first := fmt.Sprint(locs.Blocks[0].Block.Id)
	nn := c.Namenode(0)
	hash := nn.NamespaceHash()
	for _, tc := range []struct {
		name string
		dns  []string
		code codes.Code
		says []string
	}{
		{"unknown", []string{"dn-nope"}, codes.InvalidArgument, []string{"dn-nope"}},
		{"more than it can lose", []string{c.DatanodeID(0), c.DatanodeID(1)}, codes.FailedPrecondition, []string{"2 blocks", first, "2 normal live datanodes would remain"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cl.Decommission(ctx, tc.dns)
			if errs.Code(errs.KindOf(err)) != tc.code {
				t.Fatalf("got %v (%v), want %v", err, errs.Code(errs.KindOf(err)), tc.code)
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Fatalf("%q does not say %q", err, s)
				}
			}
			if nn.NamespaceHash() != hash {
				t.Fatal("a refusal changed the replicated state")
			}
		})
	}
	// A dead datanode.
	if err := c.StopDatanode(3); err != nil {
		t.Fatal(err)
	}
	dead := c.DatanodeID(3)
	for d, _ := nn.Blocks().Datanode(dead); d.State != blocks.Dead; d, _ = nn.Blocks().Datanode(dead) {
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := cl.Decommission(ctx, []string{dead}); errs.Code(errs.KindOf(err)) != codes.FailedPrecondition || !strings.Contains(err.Error(), "dead") {
		t.Fatalf("dead: %v", err)
	}
	if err := c.RestartDatanode(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitDatanodes(ctx); err != nil {
		t.Fatal(err)
	}
	if nn.NamespaceHash() != hash {
		t.Fatal("a refusal changed the replicated state")
	}
	// The exclude file names datanode 2 by address; SIGHUP's reload.
	addr := c.DatanodeAddrs()[2]
	if err := os.WriteFile(exclude, []byte(addr+" # retiring\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := nn.ReloadExclude(); err != nil {
		t.Fatal(err)
	}
	waitAdmin(ctx, t, cl, c.DatanodeID(2), func(d *api.DatanodeInfo) bool { return d.AdminState == "DECOMMISSIONED" })
	// A file that does not parse: refused, the old list stays.
	if err := os.WriteFile(exclude, []byte("dn1 dn2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := nn.ReloadExclude(); err == nil {
		t.Fatal("a bad exclude file loaded")
	}
	if _, err := cl.RefreshNodes(ctx); errs.Code(errs.KindOf(err)) != codes.InvalidArgument {
		t.Fatalf("refresh with a bad file: %v", err)
	}
	if d := adminOf(ctx, t, cl, c.DatanodeID(2)); d.AdminState != "DECOMMISSIONED" {
		t.Fatalf("after a bad file: %+v", d)
	}
	// Emptied: refreshNodes recommissions it.
	if err := os.WriteFile(exclude, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if r, err := cl.RefreshNodes(ctx); err != nil || len(r.Changed) != 1 {
		t.Fatalf("refresh: %v %v", r, err)
	}
	if d := adminOf(ctx, t, cl, c.DatanodeID(2)); d.AdminState != "NORMAL" {
		t.Fatalf("after the file emptied: %+v", d)
	}
}
