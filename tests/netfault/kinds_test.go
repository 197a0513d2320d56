package netfault

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/blockfs/blockfs/internal/testutil/nodeproc"
)

// injected is a fault in force: heal undoes it, leaving every node up and
// every link whole; cut lists the namenodes it leaves unable to hear any
// other namenode (they must issue no token for a linearizable read).
type injected struct {
	heal func(context.Context) error
	cut  []int
	what string // which nodes, for the log
}

// A nemesis fault kind, injected around the current leader.
type nemesisKind struct {
	name   string
	inject func(ctx context.Context, c *Cluster, leader int, rng *rand.Rand) (injected, error)
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

func pick[T any](rng *rand.Rand, xs []T, n int) []T {
	s := slices.Clone(xs)
	rng.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
	return s[:n]
}

func without(hs, drop []*Host) []*Host {
	var out []*Host
	for _, h := range hs {
		if !slices.Contains(drop, h) {
			out = append(out, h)
		}
	}
	return out
}

// clockJump is past the harness's lease hard limit (30 s).
const clockJump = 40 * time.Second

var nemesisKinds = []nemesisKind{
	// The deposed leader stays reachable by clients and datanodes.
	{"partition-leader-from-peers", func(ctx context.Context, c *Cluster, l int, _ *rand.Rand) (injected, error) {
		err := c.Net.Partition(ctx, []*Host{c.NNHosts[l]}, othersThan(c.NNHosts, l))
		return injected{heal: healNet(c), cut: []int{l}}, err
	}},
	{"isolate-leader", func(ctx context.Context, c *Cluster, l int, _ *rand.Rand) (injected, error) {
		rest := append(append(othersThan(c.NNHosts, l), c.DNHosts...), c.Client)
		return injected{heal: healNet(c), cut: []int{l}}, c.Net.Partition(ctx, []*Host{c.NNHosts[l]}, rest)
	}},
	// One namenode and two datanodes against the rest; the client on
	// either side. The one namenode is the leader half the time.
	{"majority-minority-split", func(ctx context.Context, c *Cluster, l int, rng *rand.Rand) (injected, error) {
		m := l
		if rng.IntN(2) == 0 {
			m = (l + 1 + rng.IntN(2)) % 3
		}
		minority := append([]*Host{c.NNHosts[m]}, pick(rng, c.DNHosts, 2)...)
		if rng.IntN(2) == 0 {
			minority = append(minority, c.Client)
		}
		all := append(append(slices.Clone(c.NNHosts), c.DNHosts...), c.Client)
		var names []string
		for _, h := range minority {
			names = append(names, h.Name)
		}
		return injected{heal: healNet(c), cut: []int{m}, what: fmt.Sprint(names)},
			c.Net.Partition(ctx, minority, without(all, minority))
	}},
	// One way: the leader's packets reach its peers, theirs never reach it.
	{"one-way-into-leader", func(ctx context.Context, c *Cluster, l int, _ *rand.Rand) (injected, error) {
		for _, h := range othersThan(c.NNHosts, l) {
			if err := c.Net.Drop(ctx, h, c.NNHosts[l]); err != nil {
				return injected{heal: healNet(c)}, err
			}
		}
		return injected{heal: healNet(c), cut: []int{l}}, nil
	}},
	// The leader and one follower cut apart; the third sees both.
	{"bridge", func(ctx context.Context, c *Cluster, l int, _ *rand.Rand) (injected, error) {
		return injected{heal: healNet(c)}, c.Net.Partition(ctx, []*Host{c.NNHosts[l]}, []*Host{c.NNHosts[(l+1)%3]})
	}},
	{"datanodes-cut-from-leader", func(ctx context.Context, c *Cluster, l int, rng *rand.Rand) (injected, error) {
		dns := pick(rng, c.DNHosts, 1+rng.IntN(len(c.DNHosts)-1))
		return injected{heal: healNet(c), what: fmt.Sprint(len(dns), " datanodes")}, c.Net.Partition(ctx, []*Host{c.NNHosts[l]}, dns)
	}},
	// SIGSTOP for longer than the election timeout (and, held long
	// enough, the lease soft limit), then SIGCONT.
	{"pause-leader", func(ctx context.Context, c *Cluster, l int, _ *rand.Rand) (injected, error) {
		c.NNs[l].Pause()
		return injected{heal: func(context.Context) error { c.NNs[l].Resume(); return nil }}, nil
	}},
	{"pause-datanode", func(ctx context.Context, c *Cluster, _ int, rng *rand.Rand) (injected, error) {
		p := c.DNs[rng.IntN(len(c.DNs))]
		p.Pause()
		return injected{heal: func(context.Context) error { p.Resume(); return nil }, what: p.Name}, nil
	}},
	{"kill-namenode", func(ctx context.Context, c *Cluster, _ int, rng *rand.Rand) (injected, error) {
		p := c.NNs[rng.IntN(len(c.NNs))] // one of three: a quorum stays
		p.Kill9()
		return injected{heal: func(ctx context.Context) error { return restart(ctx, p) }, what: p.Name}, nil
	}},
	{"kill-datanode", func(ctx context.Context, c *Cluster, _ int, rng *rand.Rand) (injected, error) {
		p := c.DNs[rng.IntN(len(c.DNs))] // one of five: three stay up
		p.Kill9()
		return injected{heal: func(ctx context.Context) error { return restart(ctx, p) }, what: p.Name}, nil
	}},
	// A datanode's disk fills: a file takes every free byte of its tmpfs,
	// mid-write; removing it heals.
	{"full-disk", func(ctx context.Context, c *Cluster, _ int, rng *rand.Rand) (injected, error) {
		i := rng.IntN(len(c.Disks))
		fill := filepath.Join(c.Disks[i], "fill")
		heal := func(context.Context) error { return os.Remove(fill) }
		var st unix.Statfs_t
		if err := unix.Statfs(c.Disks[i], &st); err != nil {
			return injected{heal: func(context.Context) error { return nil }}, err
		}
		f, err := os.Create(fill)
		if err != nil {
			return injected{heal: heal}, err
		}
		defer f.Close()
		// tmpfs allocates on fallocate; what is left after it (a racing
		// write may take a page) is not enough for a block.
		if err := unix.Fallocate(int(f.Fd()), 0, 0, int64(st.Bavail)*st.Bsize); err != nil && err != unix.ENOSPC {
			return injected{heal: heal}, err
		}
		return injected{heal: heal, what: c.DNs[i].Name}, nil
	}},
	// A namenode's clock jumps: it restarts with --test-clock-offset past
	// the lease hard limit (ahead or behind) and is handed the
	// leadership. Its tokens fall outside the datanodes' skew allowance
	// (refused: reads and writes through it fail), and by the lease
	// table's stamps every holder is past the hard limit; it must recover
	// no live writer's file. The heal restarts it on the true clock.
	{"clock-jump", func(ctx context.Context, c *Cluster, l int, rng *rand.Rand) (injected, error) {
		i := l
		if rng.IntN(3) == 0 {
			i = (l + 1 + rng.IntN(2)) % 3
		}
		p := c.NNs[i]
		off := clockJump
		if rng.IntN(3) == 0 {
			off = -off
		}
		heal := func(ctx context.Context) error {
			p.Kill9()
			c.ClockOffsets[i].Store(0)
			return restart(ctx, p)
		}
		p.Kill9()
		c.ClockOffsets[i].Store(int64(off))
		if err := restart(ctx, p); err != nil {
			return injected{heal: heal}, err
		}
		moved := c.transferLeadership(ctx, p.Name)
		return injected{heal: heal, what: fmt.Sprintf("%s %+v, leader: %v", p.Name, off, moved)}, nil
	}},
	// Slow links through the proxies: one datanode's links to every
	// namenode, or the client host's.
	{"slow-link", func(ctx context.Context, c *Cluster, _ int, rng *rand.Rand) (injected, error) {
		ps, who := c.ClientProxies, "client"
		if i := rng.IntN(len(c.DNs) + 1); i < len(c.DNs) {
			ps, who = c.DNProxies[i], c.DNs[i].Name
		}
		link := Link{Latency: time.Duration(50+rng.IntN(250)) * time.Millisecond, BytesPerSec: (64 + rng.IntN(448)) << 10}
		for _, p := range ps {
			p.SetLink(link)
		}
		return injected{heal: func(context.Context) error {
			for _, p := range ps {
				p.SetLink(Link{})
			}
			return nil
		}, what: fmt.Sprintf("%s to namenodes +%v, %d KiB/s", who, link.Latency, link.BytesPerSec>>10)}, nil
	}},
}
