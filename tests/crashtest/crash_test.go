package crashtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blockfs/blockfs/internal/testutil/nodeproc"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/client"
)

const (
	numNamenodes = 3
	numDatanodes = 5
	minDatanodes = 3 // never fewer datanodes up than this
	hbInterval   = "200ms"
	deadAfter    = "5" // missed heartbeats: a datanode is dead after 1 s
)

// cluster is the set of child processes.
type cluster struct {
	t   *testing.T
	dir string
	nns []*nodeproc.Proc
	dns []*nodeproc.Proc
}

func (c *cluster) nnAddrs() []string {
	out := make([]string, len(c.nns))
	for i, p := range c.nns {
		out[i] = p.GRPC
	}
	return out
}

func (c *cluster) all() []*nodeproc.Proc { return append(slices.Clone(c.nns), c.dns...) }

// startCluster starts 3 namenodes (all --bootstrap with the same --peers)
// and 5 encrypted datanodes. A bind failure (a port taken between picking
// and binding) re-picks every port and starts over, up to 3 times.
func startCluster(t *testing.T, dir string) *cluster {
	var lastErr error
	for attempt := range 3 {
		c := &cluster{t: t, dir: filepath.Join(dir, fmt.Sprintf("try%d", attempt))}
		err := c.start()
		if err == nil {
			return c
		}
		for _, p := range c.all() {
			p.Stop()
		}
		lastErr = err
		if !errors.Is(err, nodeproc.ErrBind) {
			break
		}
		t.Logf("port taken, retrying: %v", err)
	}
	t.Fatalf("starting the cluster: %v", lastErr)
	return nil
}

func (c *cluster) start() error {
	t := c.t
	nnBin, dnBin := filepath.Join(binDir, "namenode"), filepath.Join(binDir, "datanode")
	var peers []string
	type nnPorts struct{ grpc, raft int }
	ports := make([]nnPorts, numNamenodes)
	for i := range ports {
		ports[i] = nnPorts{freePort(t), freePort(t)}
		peers = append(peers, fmt.Sprintf("nn%d=127.0.0.1:%d/127.0.0.1:%d", i+1, ports[i].raft, ports[i].grpc))
	}
	peerList := strings.Join(peers, ",")
	for i := range numNamenodes {
		name := fmt.Sprintf("nn%d", i+1)
		p := &nodeproc.Proc{Name: name, Bin: nnBin, DataDir: filepath.Join(c.dir, name),
			GRPC: fmt.Sprintf("127.0.0.1:%d", ports[i].grpc), LogPath: filepath.Join(c.dir, name+".log")}
		raftAddr := fmt.Sprintf("127.0.0.1:%d", ports[i].raft)
		p.Args = func() []string {
			return []string{"--id", name, "--data-dir", p.DataDir, "--grpc-addr", p.GRPC, "--raft-addr", raftAddr,
				"--http-addr", "", "--bootstrap", "--peers", peerList, "--auth", "simple",
				"--heartbeat-interval", hbInterval, "--dead-after-missed", deadAfter, "--log-level", "warn",
				"--lease-check-interval", "200ms", "--recovery-timeout", "3s"}
		}
		c.nns = append(c.nns, p)
	}
	nnList := strings.Join(c.nnAddrs(), ",")
	for i := range numDatanodes {
		name := fmt.Sprintf("dn%d", i+1)
		p := &nodeproc.Proc{Name: name, Bin: dnBin, DataDir: filepath.Join(c.dir, name),
			GRPC: fmt.Sprintf("127.0.0.1:%d", freePort(t)), LogPath: filepath.Join(c.dir, name+".log")}
		p.Args = func() []string {
			return []string{"--id", name, "--data-dirs", p.DataDir, "--grpc-addr", p.GRPC, "--http-addr", "",
				"--namenodes", nnList, "--heartbeat-interval", hbInterval, "--encrypt",
				"--container-max-blocks", "16", "--log-level", "warn", "--auth", "simple"}
		}
		c.dns = append(c.dns, p)
	}
	for _, p := range c.all() {
		if err := os.MkdirAll(p.DataDir, 0o755); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, p := range c.nns {
		if err := p.Start(); err != nil {
			return err
		}
	}
	for _, p := range c.nns {
		if err := p.WaitListening(ctx); err != nil {
			return err
		}
	}
	for _, p := range c.dns {
		if err := p.Start(); err != nil {
			return err
		}
	}
	for _, p := range c.dns {
		if err := p.WaitListening(ctx); err != nil {
			return err
		}
	}
	return nil
}

// restart starts a killed node again with the same flags and data dir and
// waits until it listens.
func (c *cluster) restart(ctx context.Context, p *nodeproc.Proc) error {
	if err := p.Start(); err != nil {
		return err
	}
	return p.WaitListening(ctx)
}

// newClient returns a client of the given namenodes (all by default).
func newClient(t testing.TB, cons api.ReadConsistency, nns ...string) *client.Client {
	cfg := client.DefaultConfig(nns...)
	cfg.Consistency = cons
	cfg.MaxBackoff = 300 * time.Millisecond
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// waitNamenodes waits until every namenode answers ClusterStatus with a
// leader and knows at least minDatanodes live datanodes.
func (c *cluster) waitNamenodes(ctx context.Context, wantDNs int) error {
	for _, p := range c.nns {
		cl := newClient(c.t, api.ReadConsistency_READ_CONSISTENCY_STALE, p.GRPC)
		for {
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			st, err := cl.ClusterStatus(cctx)
			cancel()
			if err == nil && st.LeaderId != "" && liveDNs(st) >= wantDNs {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("%s not ready (status %v, err %v): %w", p.Name, st, err, ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

func liveDNs(st *api.ClusterStatusResponse) int {
	n := 0
	for _, d := range st.Datanodes {
		if d.State == "" || d.State == "live" {
			n++
		}
	}
	return n
}

// ledger is what the writers saw.
type ledger struct {
	mu        sync.Mutex
	completed []string // WriteFile returned nil
	failed    []string // WriteFile failed: the file may be anywhere
	errs      map[string]int
}

func (l *ledger) add(name string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil {
		l.completed = append(l.completed, name)
		return
	}
	l.failed = append(l.failed, name)
	if l.errs == nil {
		l.errs = map[string]int{}
	}
	msg := err.Error()
	if len(msg) > 80 {
		msg = msg[:80]
	}
	l.errs[msg]++
}

func crashDuration(t *testing.T) time.Duration {
	if v := os.Getenv("BLOCKFS_CRASH_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("BLOCKFS_CRASH_DURATION: %v", err)
		}
		return d
	}
	if testing.Short() {
		return 8 * time.Second
	}
	return 30 * time.Second
}

// TestProcessCrash is the process-level crash suite: writers against a
// real 3+5 cluster while a chaos loop SIGKILLs and restarts nodes.
func TestProcessCrash(t *testing.T) {
	if buildErr != nil {
		t.Skipf("cannot build the namenode and datanode binaries, skipping the process crash suite: %v", buildErr)
	}
	dur := crashDuration(t)
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("BLOCKFS_CRASH_SEED"); v != "" {
		fmt.Sscan(v, &seed)
	}
	t.Logf("chaos for %v, seed %d (BLOCKFS_CRASH_SEED=%d reproduces the schedule)", dur, seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))

	dir, err := os.MkdirTemp("", "blockfs-crashtest-")
	if err != nil {
		t.Fatal(err)
	}
	c := startCluster(t, dir)
	t.Cleanup(func() {
		for _, p := range c.all() {
			p.Stop()
		}
		if t.Failed() {
			for _, p := range c.all() {
				t.Logf("--- %s log tail (%s):\n%s", p.Name, p.LogPath, p.LogTail(3000))
			}
			t.Logf("data dirs and logs kept in %s", dir)
			return
		}
		os.RemoveAll(dir)
	})
	ctx := context.Background()
	{
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := c.waitNamenodes(wctx, numDatanodes)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	cl := newClient(t, api.ReadConsistency_READ_CONSISTENCY_LINEARIZABLE, c.nnAddrs()...)

	// Writers: each creates files one after another until the chaos ends.
	var led ledger
	chaosCtx, stopChaos := context.WithTimeout(ctx, dur)
	defer stopChaos()
	var wg sync.WaitGroup
	var hled hflushLedger
	hrng := rand.New(rand.NewPCG(seed, 1))
	wg.Go(func() { hflushWriters(chaosCtx, t, c, cl, hrng, &hled) })
	const writers = 2
	for w := range writers {
		wg.Go(func() {
			for i := 0; chaosCtx.Err() == nil; i++ {
				name := fmt.Sprintf("/crash/w%d/f%05d", w, i)
				data := Content(name, Size(name))
				fctx, cancel := context.WithTimeout(ctx, 20*time.Second) // the last write may finish after the chaos
				err := cl.WriteFile(fctx, name, data, client.CreateOptions{BlockSize: BlockSize, Replication: 3})
				cancel()
				led.add(name, err)
			}
		})
	}

	// Chaos: kill -9 one node, keep it down a moment, restart it. At most
	// one namenode is ever down (a quorum stays), and at least
	// minDatanodes datanodes stay up (sometimes two are down together).
	faults := map[string]int{}
	for chaosCtx.Err() == nil {
		sleepCtx(chaosCtx, time.Duration(1000+rng.IntN(1500))*time.Millisecond)
		if chaosCtx.Err() != nil {
			break
		}
		var victims []*nodeproc.Proc
		if rng.IntN(3) == 0 {
			victims = []*nodeproc.Proc{c.nns[rng.IntN(len(c.nns))]}
		} else {
			k := 1
			if rng.IntN(4) == 0 {
				k = numDatanodes - minDatanodes
			}
			for _, i := range rng.Perm(len(c.dns))[:k] {
				victims = append(victims, c.dns[i])
			}
		}
		for _, v := range victims {
			v.Kill9()
			faults[v.Name]++
		}
		sleepCtx(chaosCtx, time.Duration(200+rng.IntN(1300))*time.Millisecond)
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		for _, v := range victims {
			if err := c.restart(rctx, v); err != nil {
				cancel()
				t.Fatalf("restart: %v", err)
			}
		}
		if victims[0] == c.nns[0] || victims[0] == c.nns[1] || victims[0] == c.nns[2] {
			// Wait for it to rejoin before the next namenode may go.
			if err := c.waitNamenodes(rctx, 0); err != nil {
				cancel()
				t.Fatal(err)
			}
		}
		cancel()
	}
	wg.Wait()
	total := 0
	for _, n := range faults {
		total += n
	}
	t.Logf("faults injected: %d (%v); files completed: %d, failed: %d", total, faults, len(led.completed), len(led.failed))
	for msg, n := range led.errs {
		t.Logf("  write error x%d: %s", n, msg)
	}
	if len(led.completed) == 0 {
		t.Fatal("no file completed: the run checked nothing")
	}

	vctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if err := c.waitNamenodes(vctx, numDatanodes); err != nil {
		t.Fatal(err)
	}

	// 1. Every completed file reads back byte-identical; a failed write
	// that nevertheless completed must be intact too.
	for _, name := range led.completed {
		checkFile(vctx, t, cl, name, true)
	}
	for _, name := range led.failed {
		checkFile(vctx, t, cl, name, false)
	}
	// 1b. Every byte a killed writer hflushed is in its recovered file.
	checkHflushed(vctx, t, cl, &hled)

	// 2. The namenodes agree: applied indexes converge, and a stale walk
	// of the namespace on each namenode gives the same listing.
	checkAgreement(vctx, t, c)

	// 3. fsck: no missing or corrupt block once re-replication settles.
	// Polling stops 10 s before the verification's deadline, so that the
	// last fsck is a full answer rather than a call the deadline cut.
	dl, _ := vctx.Deadline()
	poll, cancelPoll := context.WithDeadline(vctx, dl.Add(-10*time.Second))
	defer cancelPoll()
	var rep, last *client.FsckReport
	for {
		rep, err = cl.Fsck(vctx, "/")
		if err == nil && rep.Healthy() && rep.Under == 0 {
			break
		}
		if err == nil {
			last = rep
		}
		if poll.Err() != nil {
			if err != nil {
				if last != nil {
					t.Logf("last fsck report: %d missing, %d corrupt, %d under-replicated of %d blocks, %d under construction; problems: %+v",
						last.Missing, last.Corrupt, last.Under, last.Blocks, last.UnderConstruction, last.Problems)
				}
				t.Fatalf("fsck: %v", err)
			}
			if !rep.Healthy() {
				t.Fatalf("fsck after re-replication: %d missing, %d corrupt, %d under-replicated of %d blocks; problems: %+v",
					rep.Missing, rep.Corrupt, rep.Under, rep.Blocks, rep.Problems)
			}
			t.Logf("fsck: still %d under-replicated blocks (not missing) at the deadline", rep.Under)
			break
		}
		sleepCtx(poll, 500*time.Millisecond)
	}
	t.Logf("fsck: %d files, %d blocks, %d under construction, healthy", rep.Files, rep.Blocks, rep.UnderConstruction)
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// checkFile reads name back, retrying transient errors until ctx ends.
// mustExist: the client saw the write complete.
func checkFile(ctx context.Context, t *testing.T, cl *client.Client, name string, mustExist bool) {
	t.Helper()
	want := Content(name, Size(name))
	var lastErr error
	for attempt := 0; ; attempt++ {
		if !mustExist {
			st, err := cl.Stat(ctx, name)
			if client.Code(err).String() == "NotFound" {
				return
			}
			if err == nil && st.UnderConstruction {
				return // never completed: nothing was promised
			}
			if err != nil {
				lastErr = err
				goto retry
			}
		}
		{
			got, err := cl.ReadFile(ctx, name)
			if err == nil {
				if !bytes.Equal(got, want) {
					t.Errorf("%s: read %d bytes, want %d; content differs (completed=%v)", name, len(got), len(want), mustExist)
				}
				return
			}
			lastErr = err
		}
	retry:
		if ctx.Err() != nil || attempt > 50 {
			t.Errorf("%s (completed=%v): cannot read back: %v", name, mustExist, lastErr)
			return
		}
		sleepCtx(ctx, 200*time.Millisecond)
	}
}

// checkAgreement waits until the namenodes' applied indexes are equal and
// their stale namespace walks give the same listing.
func checkAgreement(ctx context.Context, t *testing.T, c *cluster) {
	t.Helper()
	cls := make([]*client.Client, len(c.nns))
	for i, p := range c.nns {
		cls[i] = newClient(t, api.ReadConsistency_READ_CONSISTENCY_STALE, p.GRPC)
	}
	var why string
	for {
		why = ""
		idx := make([]uint64, len(cls))
		for i, cl := range cls {
			st, err := cl.ClusterStatus(ctx)
			if err != nil {
				why = fmt.Sprintf("%s: %v", c.nns[i].Name, err)
				break
			}
			idx[i] = st.AppliedIndex
		}
		if why == "" && (idx[0] != idx[1] || idx[1] != idx[2]) {
			why = fmt.Sprintf("applied indexes differ: %v", idx)
		}
		if why == "" {
			var first []string
			for i, cl := range cls {
				l, err := walk(ctx, cl, "/")
				if err != nil {
					why = fmt.Sprintf("%s: walk: %v", c.nns[i].Name, err)
					break
				}
				if i == 0 {
					first = l
				} else if !slices.Equal(first, l) {
					why = fmt.Sprintf("%s and %s list different namespaces:\n%s", c.nns[0].Name, c.nns[i].Name, diff(first, l))
					break
				}
			}
			if why == "" {
				t.Logf("namenodes agree at applied index %d on %d paths", idx[0], len(first))
				return
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("namenodes never agreed: %s", why)
		}
		sleepCtx(ctx, 300*time.Millisecond)
	}
}

// walk lists the namespace under root through one namenode's stale reads.
func walk(ctx context.Context, cl *client.Client, root string) ([]string, error) {
	var out []string
	var rec func(p string) error
	rec = func(p string) error {
		for e, err := range cl.List(ctx, p) {
			if err != nil {
				return err
			}
			out = append(out, fmt.Sprintf("%s dir=%v len=%d blocks=%d uc=%v repl=%d inode=%d mode=%o owner=%s:%s mtime=%d",
				e.Path, e.IsDir, e.Length, e.Blocks, e.UnderConstruction, e.Replication, e.InodeId, e.Mode, e.Owner, e.Group, e.MtimeUnixMs))
			if e.IsDir {
				if err := rec(e.Path); err != nil {
					return err
				}
			}
		}
		return nil
	}
	st, err := cl.Stat(ctx, root)
	if err != nil {
		return nil, err
	}
	out = append(out, fmt.Sprintf("%s dir=%v inode=%d", st.Path, st.IsDir, st.InodeId))
	return out, rec(root)
}

func diff(a, b []string) string {
	var sb strings.Builder
	n := 0
	for _, x := range a {
		if !slices.Contains(b, x) && n < 10 {
			fmt.Fprintf(&sb, "  - %s\n", x)
			n++
		}
	}
	for _, x := range b {
		if !slices.Contains(a, x) && n < 20 {
			fmt.Fprintf(&sb, "  + %s\n", x)
			n++
		}
	}
	return sb.String()
}
