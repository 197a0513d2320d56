package netfault

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/anishathalye/porcupine"
	"google.golang.org/grpc"

	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/internal/testutil/nodeproc"
	"github.com/blockfs/blockfs/tests/robustness"
)

// A nemesis fault: inject returns the heal, which leaves every node up
// and every link whole.
type nemesisKind struct {
	name   string
	inject func(ctx context.Context, c *Cluster, leader int, rng *rand.Rand) (heal func(context.Context) error, err error)
}

func healNet(c *Cluster) func(context.Context) error {
	return func(ctx context.Context) error { return c.Net.Heal(ctx) }
}

func restart(ctx context.Context, p *nodeproc.Proc) error {
	if err := p.Start(); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return p.WaitListening(wctx)
}

var nemesisKinds = []nemesisKind{
	{"partition-leader-from-peers", func(ctx context.Context, c *Cluster, l int, _ *rand.Rand) (func(context.Context) error, error) {
		return healNet(c), c.Net.Partition(ctx, []*Host{c.NNHosts[l]}, othersThan(c.NNHosts, l))
	}},
	{"isolate-leader", func(ctx context.Context, c *Cluster, l int, _ *rand.Rand) (func(context.Context) error, error) {
		rest := append(append(othersThan(c.NNHosts, l), c.DNHosts...), c.Client)
		return healNet(c), c.Net.Partition(ctx, []*Host{c.NNHosts[l]}, rest)
	}},
	{"one-way-into-leader", func(ctx context.Context, c *Cluster, l int, _ *rand.Rand) (func(context.Context) error, error) {
		for _, h := range othersThan(c.NNHosts, l) {
			if err := c.Net.Drop(ctx, h, c.NNHosts[l]); err != nil {
				return healNet(c), err
			}
		}
		return healNet(c), nil
	}},
	{"bridge", func(ctx context.Context, c *Cluster, l int, _ *rand.Rand) (func(context.Context) error, error) {
		return healNet(c), c.Net.Partition(ctx, []*Host{c.NNHosts[l]}, []*Host{c.NNHosts[(l+1)%3]})
	}},
	{"datanodes-cut-from-leader", func(ctx context.Context, c *Cluster, l int, rng *rand.Rand) (func(context.Context) error, error) {
		dns := slices.Clone(c.DNHosts)
		rng.Shuffle(len(dns), func(i, j int) { dns[i], dns[j] = dns[j], dns[i] })
		return healNet(c), c.Net.Partition(ctx, []*Host{c.NNHosts[l]}, dns[:1+rng.IntN(len(dns)-1)])
	}},
	{"pause-leader", func(ctx context.Context, c *Cluster, l int, _ *rand.Rand) (func(context.Context) error, error) {
		c.NNs[l].Pause()
		return func(context.Context) error { c.NNs[l].Resume(); return nil }, nil
	}},
	{"pause-datanode", func(ctx context.Context, c *Cluster, _ int, rng *rand.Rand) (func(context.Context) error, error) {
		p := c.DNs[rng.IntN(len(c.DNs))]
		p.Pause()
		return func(context.Context) error { p.Resume(); return nil }, nil
	}},
	{"kill-namenode", func(ctx context.Context, c *Cluster, _ int, rng *rand.Rand) (func(context.Context) error, error) {
		p := c.NNs[rng.IntN(len(c.NNs))] // one of three: a quorum stays
		p.Kill9()
		return func(ctx context.Context) error { return restart(ctx, p) }, nil
	}},
	{"kill-datanode", func(ctx context.Context, c *Cluster, _ int, rng *rand.Rand) (func(context.Context) error, error) {
		p := c.DNs[rng.IntN(len(c.DNs))] // one of five: three stay up
		p.Kill9()
		return func(ctx context.Context) error { return restart(ctx, p) }, nil
	}},
}

// envInt is the environment variable name as an int, or def.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// faultRecord is one injected fault and what the workloads got done
// while it lasted.
type faultRecord struct {
	Kind      string  `json:"kind"`
	Seconds   float64 `json:"seconds"`
	Acked     int64   `json:"acked_ops"`
	OpsPerSec float64 `json:"acked_ops_per_sec"`
	Avail     float64 `json:"availability"` // OpsPerSec over the no-fault baseline
}

// TestNemesis runs the namespace workload and whole-file writers while a
// seeded random schedule injects BLOCKFS_NETFAULT_FAULTS faults (20 by
// default) of every kind in nemesisKinds, one at a time, each held for a
// second or two and healed. At the end: the namespace history is
// linearizable, no acknowledged write is lost, every file whose close was
// acknowledged reads back byte-identical, the namenodes converge, and
// fsck finds every block back at full replication. It prints the faults
// by kind, the operations attempted and acknowledged, and availability
// during each fault against the no-fault baseline of the same run; with
// BLOCKFS_NETFAULT_JSON, a JSON summary to that file. BLOCKFS_SEED fixes
// the schedule.
func TestNemesis(t *testing.T) {
	c, nns, conns := start(t, 5)
	ctx := t.Context()
	seed := uint64(envInt("BLOCKFS_SEED", int(time.Now().UnixNano()%1e9)))
	nFaults := envInt("BLOCKFS_NETFAULT_FAULTS", 20)
	t.Logf("seed %d (BLOCKFS_SEED=%d reruns this schedule), %d faults", seed, seed, nFaults)
	rng := rand.New(rand.NewPCG(seed, 1))
	waitLeader(t, c, nns, -1)

	setup(t, nns, "/nemesis")
	cc := client.DefaultConfig(c.NNAddrs()...)
	cc.User = "root"
	cc.DialOptions = []grpc.DialOption{grpc.WithContextDialer(c.Client.DialContext)}
	fc, err := client.New(cc)
	if err != nil {
		t.Fatal(err)
	}
	defer fc.Close()
	setup(t, nns, "/files")

	var acked ackCounter // every acknowledged op of both workloads
	var files sync.Map   // path -> true: closes acknowledged
	var attempted, fileErrs atomic.Int64
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	// The namespace workload runs an epoch per fault, on a directory of
	// its own: each history is checked alone, short enough for porcupine.
	var epochs []*workload
	epoch := func(name string) (stop func()) {
		w := &workload{nns: nns, conns: conns, root: "/nemesis/" + name, hist: robustness.NewHistory()}
		setup(t, nns, w.root)
		epochs = append(epochs, w)
		ectx, cancel := context.WithCancel(wctx)
		var ewg sync.WaitGroup
		for id := range 4 {
			wrng := rand.New(rand.NewPCG(seed, uint64(100*len(epochs)+id)))
			ewg.Go(func() { w.worker(ectx, id, wrng, &acked, &attempted) })
		}
		return func() { cancel(); ewg.Wait() }
	}
	for id := range 2 {
		wg.Go(func() {
			for n := 0; wctx.Err() == nil; n++ {
				p := fmt.Sprintf("/files/w%d-%d", id, n)
				attempted.Add(1)
				octx, cancel := context.WithTimeout(wctx, 20*time.Second)
				err := fc.WriteFile(octx, p, content(p), client.CreateOptions{Perm: 0o644, Replication: 3, BlockSize: 64 << 10})
				cancel()
				if err == nil {
					files.Store(p, true)
					acked.Add(1)
				} else {
					fileErrs.Add(1)
				}
			}
		})
	}

	endEpoch := epoch("baseline")
	base0, t0 := acked.Load(), time.Now()
	time.Sleep(3 * time.Second)
	baseline := float64(acked.Load()-base0) / time.Since(t0).Seconds()
	endEpoch()
	var recs []faultRecord
	byKind := map[string]int{}
	for i := range nFaults {
		k := nemesisKinds[i%len(nemesisKinds)] // every kind, in a seeded order below
		if i >= len(nemesisKinds) {
			k = nemesisKinds[rng.IntN(len(nemesisKinds))]
		}
		leader := c.Leader(ctx, nns)
		if leader < 0 {
			leader = waitLeader(t, c, nns, -1)
		}
		endEpoch := epoch(fmt.Sprintf("%02d-%s", i, k.name))
		time.Sleep(300 * time.Millisecond)
		a0, f0 := acked.Load(), time.Now()
		heal, err := k.inject(ctx, c, leader, rng)
		if err != nil {
			t.Fatalf("fault %d (%s): %v", i, k.name, err)
		}
		time.Sleep(time.Duration(1000+rng.IntN(1500)) * time.Millisecond)
		if err := heal(ctx); err != nil {
			t.Fatalf("healing fault %d (%s): %v", i, k.name, err)
		}
		d := time.Since(f0).Seconds()
		r := faultRecord{Kind: k.name, Seconds: d, Acked: acked.Load() - a0}
		r.OpsPerSec = float64(r.Acked) / d
		if baseline > 0 {
			r.Avail = r.OpsPerSec / baseline
		}
		recs = append(recs, r)
		byKind[k.name]++
		time.Sleep(time.Duration(500+rng.IntN(1000)) * time.Millisecond) // settle
		endEpoch()
	}
	healed := time.Now()
	// Time from the last heal to every block at full replication, while
	// the file writers still run.
	toFull := make(chan time.Duration, 1)
	go func() {
		for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
			fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			rep, err := fc.Fsck(fctx, "/files")
			cancel()
			if err == nil && rep.Healthy() && rep.Under == 0 && !rep.SafeMode {
				toFull <- time.Since(healed)
				return
			}
		}
		toFull <- -1
	}()
	time.Sleep(2 * time.Second)
	stop()
	wg.Wait()

	converged(t, nns, "/nemesis")
	var all, writes, unknown int
	res := porcupine.Ok
	for _, w := range epochs {
		final := robustness.State{}
		for _, p := range robustness.OpPaths {
			if out := finalRead(t, w, robustness.Input{Kind: robustness.OpStat, Path: p}); out.Stat != "none" {
				final[p] = out.Stat
			}
		}
		ops := w.hist.Ops()
		a, wr, u := robustness.Stats(ops)
		all, writes, unknown = all+a, writes+wr, unknown+u
		r, _ := robustness.Check(ops, time.Minute)
		if r != porcupine.Ok {
			res = r
			t.Errorf("%s: namespace history (%d ops) is %s, not linearizable", w.root, a, r)
		}
		for _, l := range robustness.LostWrites(ops, final, robustness.OpPaths) {
			t.Errorf("%s: lost acknowledged write: %s", w.root, l)
		}
	}
	nFiles, lost := 0, 0
	files.Range(func(k, _ any) bool {
		nFiles++
		p := k.(string)
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		got, err := fc.ReadFile(rctx, p)
		cancel()
		if err != nil || !bytes.Equal(got, content(p)) {
			lost++
			t.Errorf("acknowledged file %s: read %d bytes, err %v", p, len(got), err)
		}
		return true
	})
	full := <-toFull
	if full < 0 {
		t.Error("fsck never found every block at full replication within 90 s of the last heal")
	}

	var tb bytes.Buffer
	tw := tabwriter.NewWriter(&tb, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "fault\tcount\tacked ops/s during (median)\tavailability (median)\n")
	kinds := make([]string, 0, len(byKind))
	for k := range byKind {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		var ops, av []float64
		for _, r := range recs {
			if r.Kind == k {
				ops, av = append(ops, r.OpsPerSec), append(av, r.Avail)
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.2f\n", k, byKind[k], median(ops), median(av))
	}
	fmt.Fprintf(tw, "baseline (no fault)\t-\t%.0f\t1.00\n", baseline)
	tw.Flush()
	t.Log("\n" + tb.String())
	t.Logf("%d faults; %d ops attempted, %d acknowledged, longest stall without an acknowledgment %v; namespace: %d ops (%d writes, %d indeterminate), %s; files: %d acknowledged, %d lost, %d writes failed; heal to full replication %v",
		len(recs), attempted.Load(), acked.Load(), acked.longestStall().Round(10*time.Millisecond), all, writes, unknown, res, nFiles, lost, fileErrs.Load(), full.Round(100*time.Millisecond))
	if out := os.Getenv("BLOCKFS_NETFAULT_JSON"); out != "" {
		b, _ := json.MarshalIndent(map[string]any{"seed": seed, "faults": recs, "by_kind": byKind, "baseline_ops_per_sec": baseline,
			"attempted": attempted.Load(), "acknowledged": acked.Load(), "longest_stall_s": acked.longestStall().Seconds(), "namespace_ops": all, "linearizable": res == porcupine.Ok,
			"files_acknowledged": nFiles, "files_lost": lost, "heal_to_full_replication_s": full.Seconds()}, "", "  ")
		if err := os.WriteFile(out, append(b, '\n'), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// ackCounter counts acknowledged operations and keeps the longest gap
// between two of them: the longest stall any client saw of the cluster.
type ackCounter struct {
	n       atomic.Int64
	last    atomic.Int64 // unix nanoseconds of the latest acknowledgment
	longest atomic.Int64 // nanoseconds
}

func (a *ackCounter) Add(d int64) {
	now := time.Now().UnixNano()
	if prev := a.last.Swap(now); prev != 0 {
		for gap := now - prev; ; {
			cur := a.longest.Load()
			if gap <= cur || a.longest.CompareAndSwap(cur, gap) {
				break
			}
		}
	}
	a.n.Add(d)
}

func (a *ackCounter) Load() int64 { return a.n.Load() }

func (a *ackCounter) longestStall() time.Duration { return time.Duration(a.longest.Load()) }

// content is a file's bytes, derived from its name (1 to 200 KiB).
func content(p string) []byte {
	r := rand.New(rand.NewPCG(uint64(len(p)), hash(p)))
	b := make([]byte, 1024+r.IntN(199*1024))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func hash(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := range len(s) {
		h = (h ^ uint64(s[i])) * 1099511628211
	}
	return h
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
