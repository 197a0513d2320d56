package netfault

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Net is a network of its own: one namespace holding a bridge (the
// switch), and a namespace per host joined to it by a veth pair whose ends
// are created directly inside the two namespaces, so that nothing is ever
// added to, or addressed in, the namespace the test runs in. Hosts get
// addresses of one /24 drawn at random from 10.0.0.0/8 (inside the
// namespaces only), so two runs at once do not meet.
type Net struct {
	prefix string // of every namespace name: "bf<pid>"
	subnet string // "10.a.b"
	sw     string // the switch's namespace

	mu    sync.Mutex
	hosts []*Host
}

// Host is one namespace on the Net.
type Host struct {
	Name string // short: "nn1", "dn3", "cl1"
	NS   string // the namespace
	IP   string // its address on the Net
	net  *Net
}

// Supported reports why network namespaces cannot be made here, or nil:
// it needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN), ip and nft.
func Supported() error {
	if os.Geteuid() != 0 {
		return errors.New("not root: network namespaces and nftables need CAP_SYS_ADMIN and CAP_NET_ADMIN")
	}
	for _, tool := range []string{"ip", "nft"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("no %s in PATH: %w", tool, err)
		}
	}
	probe := fmt.Sprintf("bfprobe%d", os.Getpid())
	if err := run(context.Background(), "ip", "netns", "add", probe); err != nil {
		return err
	}
	return run(context.Background(), "ip", "netns", "del", probe)
}

// NewNet makes the switch. Close removes every namespace it made.
func NewNet(ctx context.Context) (*Net, error) {
	n := &Net{prefix: fmt.Sprintf("bf%d", os.Getpid()),
		subnet: fmt.Sprintf("10.%d.%d", 1+rand.IntN(250), 1+rand.IntN(250))}
	n.sw = n.prefix + "-sw"
	if err := n.cmds(ctx, [][]string{
		{"ip", "netns", "add", n.sw},
		{"ip", "-n", n.sw, "link", "add", "br0", "type", "bridge"},
		{"ip", "-n", n.sw, "link", "set", "br0", "up"},
	}); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

// AddHost makes host name's namespace, cabled to the switch, with the
// next address.
func (n *Net) AddHost(ctx context.Context, name string) (*Host, error) {
	n.mu.Lock()
	i := len(n.hosts) + 1
	h := &Host{Name: name, NS: n.prefix + "-" + name, IP: fmt.Sprintf("%s.%d", n.subnet, 10+i), net: n}
	n.hosts = append(n.hosts, h)
	n.mu.Unlock()
	port := fmt.Sprintf("p%d", i) // the switch's end
	err := n.cmds(ctx, [][]string{
		{"ip", "netns", "add", h.NS},
		{"ip", "-n", h.NS, "link", "set", "lo", "up"},
		{"ip", "link", "add", port, "netns", n.sw, "type", "veth", "peer", "name", "eth0", "netns", h.NS},
		{"ip", "-n", n.sw, "link", "set", port, "master", "br0", "up"},
		{"ip", "-n", h.NS, "addr", "add", h.IP + "/24", "dev", "eth0"},
		{"ip", "-n", h.NS, "link", "set", "eth0", "up"},
		// The rules Drop and Heal change: one table with an input chain
		// that accepts all until told otherwise.
		{"ip", "netns", "exec", h.NS, "nft", "add table inet fault"},
		{"ip", "netns", "exec", h.NS, "nft", "add chain inet fault in { type filter hook input priority 0 ; policy accept ; }"},
	})
	return h, err
}

// Hosts returns the hosts in the order they were added.
func (n *Net) Hosts() []*Host {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]*Host(nil), n.hosts...)
}

// Addr is h's address with port.
func (h *Host) Addr(port int) string { return fmt.Sprintf("%s:%d", h.IP, port) }

// Drop makes to drop every packet from from (one way: to still sends to
// from, but from's answers never arrive). Dropping both ways is a partition of
// the pair.
func (n *Net) Drop(ctx context.Context, from, to *Host) error {
	return run(ctx, "ip", "netns", "exec", to.NS, "nft", fmt.Sprintf("add rule inet fault in ip saddr %s drop", from.IP))
}

// Partition cuts every host of a from every host of b, both ways.
func (n *Net) Partition(ctx context.Context, a, b []*Host) error {
	for _, x := range a {
		for _, y := range b {
			if err := n.Drop(ctx, x, y); err != nil {
				return err
			}
			if err := n.Drop(ctx, y, x); err != nil {
				return err
			}
		}
	}
	return nil
}

// Heal removes every drop rule.
func (n *Net) Heal(ctx context.Context) error {
	var firstErr error
	for _, h := range n.Hosts() {
		if err := run(ctx, "ip", "netns", "exec", h.NS, "nft", "flush chain inet fault in"); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return firstErr
}

// Close removes every namespace (and with them their veths and rules).
func (n *Net) Close() error {
	var firstErr error
	for _, h := range n.Hosts() {
		if err := run(context.Background(), "ip", "netns", "del", h.NS); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	if err := run(context.Background(), "ip", "netns", "del", n.sw); err != nil && firstErr == nil {
		firstErr = err
	}
	return firstErr
}

// DialContext dials addr from inside h's namespace, for a client that runs
// in the test process.
func (h *Host) DialContext(ctx context.Context, addr string) (c net.Conn, err error) {
	err = h.inNS(func() error {
		var d net.Dialer
		c, err = d.DialContext(ctx, "tcp", addr)
		return err
	})
	if err != nil && c != nil {
		c.Close()
		c = nil
	}
	return c, err
}

// Listen listens on addr inside h's namespace (the slow-link proxies).
func (h *Host) Listen(addr string) (l net.Listener, err error) {
	err = h.inNS(func() error {
		l, err = net.Listen("tcp", addr)
		return err
	})
	if err != nil && l != nil {
		l.Close()
		l = nil
	}
	return l, err
}

// inNS runs fn on a thread moved into h's namespace (and moved back before
// the thread is released): a socket keeps the namespace it was made in.
func (h *Host) inNS(fn func() error) error {
	ch := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// The thread is not unlocked if moving back fails: the runtime
		// then ends it rather than reuse it in the wrong namespace.
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			ch <- err
			return
		}
		defer orig.Close()
		target, err := os.Open("/run/netns/" + h.NS)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- err
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- fmt.Errorf("setns %s: %w", h.NS, err)
			return
		}
		fnErr := fn()
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- errors.Join(fnErr, fmt.Errorf("setns back: %w", err))
			return // the thread stays locked and dies with the goroutine
		}
		runtime.UnlockOSThread()
		ch <- fnErr
	}()
	return <-ch
}

func (n *Net) cmds(ctx context.Context, cs [][]string) error {
	for _, c := range cs {
		if err := run(ctx, c[0], c[1:]...); err != nil {
			return err
		}
	}
	return nil
}

func run(ctx context.Context, name string, args ...string) error {
	b, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(b)))
	}
	return nil
}
