package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/datanode"
	"github.com/blockfs/blockfs/localcluster"
	"github.com/blockfs/blockfs/namenode"
)

// TestBalancerCommand: dfs balancer end to end on the test cluster (whose
// datanodes hold a few megabytes of 64 GiB each: balanced): it starts a
// run on the leader, polls it to the end and reports it, exit 0; bad
// thresholds are refused by the leader, bad flags are usage errors, and
// a non-superuser is refused.
func TestBalancerCommand(t *testing.T) {
	r := must(t, dfs(t, "", "balancer", "--threshold", "10", "--bandwidth", "10m", "--max-iterations", "3"))
	for _, want := range []string{"balanced: every datanode within 10% of the mean", "bytes moved: 0 in 0 iterations", "utilisation: min "} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("output lacks %q:\n%s", want, r.stdout)
		}
	}
	if r := must(t, dfs(t, "", "--json", "balancer")); !strings.Contains(r.stdout, `"state": "balanced"`) || !strings.Contains(r.stdout, `"mean_utilization"`) {
		t.Fatalf("json:\n%s", r.stdout)
	}
	for _, c := range []struct {
		name string
		user string
		args []string
		code int
		want string
	}{
		{"zero threshold", "root", []string{"balancer", "--threshold", "0"}, 1, "out of range"},
		{"threshold over 100", "root", []string{"balancer", "--threshold", "101"}, 1, "out of range"},
		{"negative threshold", "root", []string{"balancer", "--threshold", "-3"}, 1, "out of range"},
		{"bad bandwidth", "root", []string{"balancer", "--bandwidth", "fast"}, 2, "--bandwidth"},
		{"no iterations", "root", []string{"balancer", "--max-iterations", "0"}, 2, "--max-iterations"},
		{"arguments", "root", []string{"balancer", "now"}, 2, ""},
		{"not the superuser", "alice", []string{"balancer"}, 1, "permission denied"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := dfsAs(t, c.user, c.args...)
			if r.code != c.code || !strings.Contains(r.stderr, c.want) {
				t.Fatalf("exit %d (want %d), stderr lacks %q:\n%s", r.code, c.code, c.want, r.stderr)
			}
		})
	}
}

// unbalanced starts namenodes namenodes and two datanodes of 4 MiB, the
// second started empty after 1 MiB of single-replica files filled the
// first.
func unbalanced(t *testing.T, ctx context.Context, namenodes int) (*localcluster.Cluster, *client.Client) {
	t.Helper()
	lc, err := localcluster.Start(ctx, localcluster.Config{Namenodes: namenodes, Datanodes: 2, Dir: t.TempDir(),
		Namenode: func(_ int, c *namenode.Config) { c.Namespace.DefaultBlockSize = testBlock },
		Datanode: func(_ int, c *datanode.Config) { c.Store.Capacity = 4 << 20 }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lc.Close() })
	if err := lc.StopDatanode(1); err != nil {
		t.Fatal(err)
	}
	cl, err := lc.Client()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	for i := range 8 {
		// Writes wait out the stopped datanode's death (1 s), then go to dn1.
		for {
			err := cl.WriteFile(ctx, fmt.Sprintf("/f%d", i), bytes.Repeat([]byte{1}, 2*testBlock), client.CreateOptions{Replication: 1, Overwrite: true})
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if err := lc.RestartDatanode(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := lc.WaitDatanodes(ctx); err != nil {
		t.Fatal(err)
	}
	// The balancer reads usage from heartbeats: wait until every namenode
	// has had one from the full datanode since the writes (on a fast
	// machine the writes end before its next heartbeat).
	for _, nn := range lc.Namenodes() {
		for used := uint64(0); used < 1<<20; {
			used = 0
			for _, d := range nn.Blocks().Datanodes() {
				used = max(used, d.Used)
			}
			if ctx.Err() != nil {
				t.Fatalf("namenode %s never heard the full datanode's usage", nn.ID())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return lc, cl
}

// movedReport parses the bytes moved and iterations dfs balancer printed.
func movedReport(t *testing.T, out string) (moved, iters int) {
	t.Helper()
	i := strings.Index(out, "bytes moved:")
	if i < 0 {
		t.Fatalf("no report in %q", out)
	}
	if _, err := fmt.Sscanf(out[i:], "bytes moved: %d in %d iterations", &moved, &iters); err != nil {
		t.Fatalf("report %q: %v", out, err)
	}
	return moved, iters
}

// TestBalancerCommandMoves: on a cluster of one full and one empty
// datanode, dfs balancer moves replicas until both are within the
// threshold, and reports the bytes moved and the spread.
func TestBalancerCommandMoves(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lc, _ := unbalanced(t, ctx, 1)
	var out, errb bytes.Buffer
	code := run(ctx, []string{"--namenodes", strings.Join(lc.NamenodeAddrs(), ","), "--user", "root", "--timeout", "90s",
		"balancer", "--threshold", "5", "--bandwidth", "4m"}, strings.NewReader(""), &out, &errb)
	if code != 0 || !strings.Contains(out.String(), "balanced:") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out.String(), errb.String())
	}
	if moved, iters := movedReport(t, out.String()); moved == 0 || iters == 0 {
		t.Fatalf("nothing moved: %s", out.String())
	}
	var used [2]uint64
	for i, d := range lc.Namenode(0).Blocks().Datanodes() {
		used[i] = d.Used
	}
	if used[0] == 0 || used[1] == 0 {
		t.Fatalf("used after balancing: %v", used)
	}
}

// TestBalancerCommandResumes: the leader dies while dfs balancer runs;
// the command finds no run of its own on the new leader, starts one
// there, and ends balanced with the bytes of both legs.
func TestBalancerCommandResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lc, cl := unbalanced(t, ctx, 3)
	var out, errb bytes.Buffer
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, []string{"--namenodes", strings.Join(lc.NamenodeAddrs(), ","), "--user", "root", "--timeout", "90s",
			"balancer", "--threshold", "5", "--bandwidth", "256k"}, strings.NewReader(""), &out, &errb)
	}()
	for {
		p, err := cl.BalancerProgress(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if p.BytesMoved > 0 && p.State == api.BalancerState_BALANCER_RUNNING {
			break
		}
		if p.State > api.BalancerState_BALANCER_RUNNING {
			t.Fatalf("ended before the leader change: %v", p)
		}
		time.Sleep(20 * time.Millisecond)
	}
	leader, err := lc.WaitLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := lc.StopNamenode(leader); err != nil {
		t.Fatal(err)
	}
	if c := <-code; c != 0 || !strings.Contains(out.String(), "balanced:") || !strings.Contains(errb.String(), "resuming there") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", c, out.String(), errb.String())
	}
	if moved, _ := movedReport(t, out.String()); moved == 0 {
		t.Fatalf("nothing moved: %s", out.String())
	}
}
