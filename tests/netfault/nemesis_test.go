package netfault

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"google.golang.org/grpc"

	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/tests/robustness"
)

// TestNemesis's knobs: go test ./tests/netfault -run TestNemesis -args
// -duration 30m -plot timeline.svg -summary nemesis.json.
var (
	flagFaults   = flag.Int("faults", 0, "faults TestNemesis injects (default 20, or $BLOCKFS_NETFAULT_FAULTS); ignored with -duration")
	flagDuration = flag.Duration("duration", 0, "inject faults for this long instead of a count (the long run: 30m before a release)")
	flagSeed     = flag.Uint64("seed", 0, "the nemesis schedule's seed (default $BLOCKFS_SEED, else random); a failure prints it")
	flagSummary  = flag.String("summary", "", "write the run's JSON summary here (default $BLOCKFS_NETFAULT_JSON)")
	flagPlot     = flag.String("plot", "", "draw the run's throughput timeline, faults marked, as an SVG here")
	flagKinds    = flag.String("kinds", "", "only these fault kinds (comma-separated names of kinds_test.go); default every kind")
)

// kinds is nemesisKinds, or those -kinds names.
func kinds(t *testing.T) []nemesisKind {
	if *flagKinds == "" {
		return nemesisKinds
	}
	var out []nemesisKind
	for _, name := range strings.Split(*flagKinds, ",") {
		i := slices.IndexFunc(nemesisKinds, func(k nemesisKind) bool { return k.name == name })
		if i < 0 {
			t.Fatalf("-kinds: no fault kind %q", name)
		}
		out = append(out, nemesisKinds[i])
	}
	return out
}

// faultRecord is one injected fault and what the workloads got done
// while it lasted.
type faultRecord struct {
	Kind      string  `json:"kind"`
	What      string  `json:"what,omitempty"`
	Start     float64 `json:"start_s"` // since the run began
	Seconds   float64 `json:"seconds"`
	Acked     int64   `json:"acked_ops"`
	OpsPerSec float64 `json:"acked_ops_per_sec"`
	Avail     float64 `json:"availability"` // OpsPerSec over the no-fault baseline
}

// TestNemesis runs four workloads while a seeded random schedule injects
// faults of every kind in nemesisKinds, one at a time, each held for one
// to four seconds and healed: the namespace workload (an epoch of its own
// per fault, checked for linearizability), an hflush writer with readers
// (the visible-length model), whole-file writers (every acknowledged
// byte read back), and a token checker (no token from a namenode cut off
// from its peers, no expired token accepted). After the last heal: the
// namenodes converge (one namespace hash at one applied index) and fsck
// finds every block at full replication. It prints, and with -summary
// writes as JSON, the faults by kind with the availability during each
// (acknowledged ops/s against the no-fault baseline of the same run), the
// operations attempted and acknowledged, the longest stall, and the time
// from heal to full replication; -plot draws the timeline.
func TestNemesis(t *testing.T) {
	run := nemesisRun{seed: *flagSeed, faults: *flagFaults, duration: *flagDuration, kinds: kinds(t), summary: *flagSummary, plot: *flagPlot}
	if run.seed == 0 {
		run.seed = uint64(envInt("BLOCKFS_SEED", int(time.Now().UnixNano()%1e9)))
	}
	if run.faults == 0 {
		run.faults = envInt("BLOCKFS_NETFAULT_FAULTS", 20)
	}
	if run.summary == "" {
		run.summary = os.Getenv("BLOCKFS_NETFAULT_JSON")
	}
	nemesis(t, run)
}

// TestNemesisRegressions replays, short, the schedules that found bugs:
// each seed with the fault kinds that showed it (docs/RELIABILITY.md).
func TestNemesisRegressions(t *testing.T) {
	for _, r := range []struct {
		name   string
		seed   uint64
		kinds  []string
		faults int
	}{
		// A full disk took a datanode's data dir out until restart, then
		// its containers stayed read-only: no full replication after.
		{"full-disk-comes-back", 998913214, []string{"full-disk", "kill-datanode"}, 6},
		// Forwarded writes around a leadership handover were "leader
		// unreachable"; a leader 40 s ahead recovered live writers' files.
		{"clock-jump-handover", 523245763, []string{"clock-jump"}, 2},
	} {
		t.Run(r.name, func(t *testing.T) {
			var ks []nemesisKind
			for _, name := range r.kinds {
				ks = append(ks, nemesisKinds[slices.IndexFunc(nemesisKinds, func(k nemesisKind) bool { return k.name == name })])
			}
			nemesis(t, nemesisRun{seed: r.seed, faults: r.faults, kinds: ks})
		})
	}
}

// nemesisRun is one schedule: its seed, how many faults (or for how
// long), of which kinds, and where its summary and timeline go ("": not
// written).
type nemesisRun struct {
	seed          uint64
	faults        int
	duration      time.Duration
	kinds         []nemesisKind
	summary, plot string
}

func nemesis(t *testing.T, run nemesisRun) {
	c, nns, conns := start(t, 5)
	ctx := t.Context()
	seed, nFaults := run.seed, run.faults
	t.Logf("seed %d (-seed %d reruns this schedule), %d faults or -duration %v", seed, seed, nFaults, run.duration)
	rng := rand.New(rand.NewPCG(seed, 1))
	waitLeader(t, c, nns, -1)

	for _, d := range []string{"/nemesis", "/files", "/vis", "/tokens"} {
		setup(t, nns, d)
	}
	newClient := func() *client.Client {
		cc := client.DefaultConfig(c.ClientNNAddrs()...)
		cc.User = "root"
		cc.DialOptions = []grpc.DialOption{grpc.WithContextDialer(c.Client.DialContext)}
		fc, err := client.New(cc)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fc.Close() })
		return fc
	}
	fc := newClient()
	for try := 0; ; try++ {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := fc.WriteFile(wctx, "/tokens/f", content("/tokens/f"), client.CreateOptions{Perm: 0o644, Replication: 3, Overwrite: true})
		cancel()
		if err == nil {
			break
		} else if try > 10 {
			t.Fatalf("writing the token checker's file: %v", err)
		}
	}

	var acked ackCounter // every acknowledged op of every workload
	var attempted atomic.Int64
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	fw := &fileWriters{fc: fc, dir: "/files", acked: &acked}
	lw := &lengthWorkload{writer: newClient(), readers: []*client.Client{newClient(), newClient()}, dir: "/vis", acked: &acked}
	tc := &tokenChecker{c: c, nns: nns, path: "/tokens/f"}
	defer tc.close()
	for id := range 2 {
		wg.Go(func() { fw.run(wctx, id) })
	}
	wg.Go(func() { lw.write(wctx, rand.New(rand.NewPCG(seed, 2))) })
	for id := 1; id <= 2; id++ {
		wg.Go(func() { lw.read(wctx, id) })
	}
	wg.Go(func() { tc.run(wctx) })
	tl := newTimeline(&acked)
	wg.Go(func() { tl.sample(wctx) })

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

	endEpoch := epoch("baseline")
	// The baseline is every stretch without a fault while a namespace
	// epoch runs (its workers are most of the load): this first one, and
	// in each fault's epoch the stretches before the injection and after
	// the heal (recovery included). Epoch changes, when the namespace
	// workers stop, count in neither.
	var calmOps int64
	var calmSecs float64
	calm0, calmT := acked.Load(), time.Now()
	calm := func() {
		calmOps += acked.Load() - calm0
		calmSecs += time.Since(calmT).Seconds()
	}
	time.Sleep(3 * time.Second)
	calm()
	endEpoch()
	var recs []faultRecord
	var cuts []cutWindow
	var order []nemesisKind
	all := run.kinds
	for i := 0; ; i++ {
		if run.duration > 0 && tl.elapsed() >= run.duration || run.duration == 0 && i >= nFaults {
			break
		}
		if i%len(all) == 0 { // every kind once per round, in a seeded order
			order = slices.Clone(all)
			rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
		}
		k := order[i%len(order)]
		leader := c.Leader(ctx, nns)
		if leader < 0 {
			leader = waitLeader(t, c, nns, -1)
		}
		endEpoch := epoch(fmt.Sprintf("%03d-%s", i, k.name))
		calm0, calmT = acked.Load(), time.Now()
		time.Sleep(300 * time.Millisecond)
		calm()
		a0, f0 := acked.Load(), time.Now()
		inj, err := k.inject(ctx, c, leader, rng)
		if err != nil {
			t.Fatalf("fault %d (%s): %v", i, k.name, err)
		}
		injectedAt := time.Now()
		time.Sleep(time.Duration(1000+rng.IntN(3000)) * time.Millisecond)
		healAt := time.Now()
		if err := inj.heal(ctx); err != nil {
			t.Fatalf("healing fault %d (%s): %v", i, k.name, err)
		}
		for _, nn := range inj.cut {
			cuts = append(cuts, cutWindow{nn: nn, from: injectedAt, to: healAt})
		}
		d := time.Since(f0).Seconds()
		r := faultRecord{Kind: k.name, What: inj.what, Start: f0.Sub(tl.start).Seconds(), Seconds: d, Acked: acked.Load() - a0}
		r.OpsPerSec = float64(r.Acked) / d
		recs = append(recs, r)
		calm0, calmT = acked.Load(), time.Now()
		time.Sleep(time.Duration(500+rng.IntN(1000)) * time.Millisecond) // settle
		calm()
		endEpoch()
	}
	baseline := float64(calmOps) / max(calmSecs, 1e-9)
	for i := range recs {
		recs[i].Avail = recs[i].OpsPerSec / baseline
	}
	healed := time.Now()
	// Time from the last heal to every block at full replication, while
	// the writers still run.
	toFull := make(chan time.Duration, 1)
	var lastFsck string // the last report that was not yet full, for the failure
	go func() {
		for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
			fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			rep, err := fc.Fsck(fctx, "/files")
			cancel()
			if err == nil && rep.Healthy() && rep.Under == 0 && !rep.SafeMode {
				toFull <- time.Since(healed)
				return
			}
			if err != nil {
				lastFsck = err.Error()
			} else {
				lastFsck = fmt.Sprintf("%d blocks: %d missing, %d corrupt, %d under-replicated, safe mode %v; first problems %+v",
					rep.Blocks, rep.Missing, rep.Corrupt, rep.Under, rep.SafeMode, rep.Problems[:min(3, len(rep.Problems))])
			}
		}
		toFull <- -1
	}()
	time.Sleep(2 * time.Second)
	stop()
	wg.Wait()

	sum := summary{Seed: seed, Faults: recs, Baseline: baseline, Attempted: attempted.Load() + fw.attempted.Load(),
		Acknowledged: acked.Load(), LongestStall: acked.longestStall().Seconds(), Linearizable: true}
	sum.NamespaceIndex = converged(t, conns)
	for _, w := range epochs {
		final := robustness.State{}
		for _, p := range robustness.OpPaths {
			if out := finalRead(t, w, robustness.Input{Kind: robustness.OpStat, Path: p}); out.Stat != "none" {
				final[p] = out.Stat
			}
		}
		ops := w.hist.Ops()
		a, _, u := robustness.Stats(ops)
		sum.NamespaceOps += a
		switch r, _ := robustness.Check(ops, time.Minute); r {
		case porcupine.Illegal:
			sum.Linearizable = false
			sum.Anomalies = append(sum.Anomalies, fmt.Sprintf("%s: namespace history (%d ops) is NOT linearizable", w.root, a))
		case porcupine.Unknown:
			sum.Unchecked++
			sum.Anomalies = append(sum.Anomalies, fmt.Sprintf("%s: namespace history (%d ops, %d indeterminate) not checked: porcupine ran out of time; indeterminate because: %s", w.root, a, u, whyUnknown(ops)))
		}
		for _, l := range robustness.LostWrites(ops, final, robustness.OpPaths) {
			sum.Anomalies = append(sum.Anomalies, fmt.Sprintf("%s: lost acknowledged write: %s", w.root, l))
		}
	}
	var lostFiles []string
	sum.Files, lostFiles = fw.finish(ctx)
	sum.FilesLost = len(lostFiles)
	sum.Anomalies = append(sum.Anomalies, lostFiles...)
	var lengthBad []string
	sum.LengthFiles, sum.LengthFlushes, lengthBad = lw.check(time.Minute)
	sum.Anomalies = append(sum.Anomalies, lengthBad...)
	sum.LengthAbandoned, lengthBad = lw.recoveredUnderWriter(ctx)
	sum.Anomalies = append(sum.Anomalies, lengthBad...)
	sum.Tokens = tc.verdict(cuts)
	sum.Anomalies = append(sum.Anomalies, sum.Tokens.Anomalies...)
	full := <-toFull
	sum.HealToFull = full.Seconds()
	if full < 0 {
		sum.Anomalies = append(sum.Anomalies, "fsck never found every block at full replication within 90 s of the last heal; last: "+lastFsck)
	}
	t.Log("\n" + sum.table())
	t.Log(sum.line())
	if sum.Tokens.ExpiredReplayed == 0 || sum.Tokens.Issued == 0 || sum.LengthFlushes == 0 {
		t.Errorf("a checker checked nothing: %d tokens issued, %d expired tokens replayed, %d flushes", sum.Tokens.Issued, sum.Tokens.ExpiredReplayed, sum.LengthFlushes)
	}
	for _, a := range sum.Anomalies {
		t.Error(a)
	}
	if out := run.summary; out != "" {
		b, _ := json.MarshalIndent(sum, "", "  ")
		if err := os.WriteFile(out, append(b, '\n'), 0o644); err != nil {
			t.Error(err)
		}
	}
	if run.plot != "" {
		if err := tl.plot(run.plot, recs, baseline); err != nil {
			t.Error(err)
		}
	}
}
