package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/blockfs/blockfs/client"
)

// procCluster is the cluster as a user deploys it: 3 namenode and 3
// datanode processes on loopback, each with its own Go runtime, as
// SeaweedFS's master and volume servers are processes of their own. The
// in-process cluster runs all six and the clients in one runtime, on
// GOMAXPROCS Ps between them.
type procCluster struct {
	procs []*exec.Cmd
	grpc  []string // each process's gRPC address
	addrs []string // namenode gRPC addresses
}

// freePorts returns n loopback ports free a moment ago (the kernel picks
// them; a port taken again meanwhile shows as a node that never listens).
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// startProcs starts the cluster from the namenode and datanode binaries in
// bin, its data and logs under dir, and waits until a file can be written.
func startProcs(ctx context.Context, bin, dir string) (_ *procCluster, err error) {
	ports, err := freePorts(9)
	if err != nil {
		return nil, err
	}
	addr := func(i int) string { return fmt.Sprintf("127.0.0.1:%d", ports[i]) }
	pc := &procCluster{}
	defer func() {
		if err != nil {
			pc.stop()
		}
	}()
	var peers []string
	for i := range 3 {
		peers = append(peers, fmt.Sprintf("nn%d=%s/%s", i+1, addr(3+i), addr(i)))
		pc.addrs = append(pc.addrs, addr(i))
	}
	for i := range 3 {
		name := fmt.Sprintf("nn%d", i+1)
		args := []string{"--id", name, "--data-dir", filepath.Join(dir, name), "--grpc-addr", addr(i), "--raft-addr", addr(3 + i),
			"--http-addr", "", "--bootstrap", "--peers", strings.Join(peers, ","), "--auth", "simple", "--superuser", "root",
			"--insecure-raft", "--safemode-extension", "0s", "--log-level", "warn"}
		if err := pc.add(bin, dir, name, "namenode", addr(i), args); err != nil {
			return nil, err
		}
	}
	for i := range 3 {
		name := fmt.Sprintf("dn%d", i+1)
		args := []string{"--id", name, "--data-dirs", filepath.Join(dir, name), "--grpc-addr", addr(6 + i), "--http-addr", "",
			"--namenodes", strings.Join(pc.addrs, ","), "--auth", "simple", "--log-level", "warn"}
		if err := pc.add(bin, dir, name, "datanode", addr(6+i), args); err != nil {
			return nil, err
		}
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, p := range pc.procs {
		if err := p.Start(); err != nil {
			return nil, err
		}
	}
	for i, p := range pc.procs {
		if err := waitListening(wctx, pc.grpc[i]); err != nil {
			return nil, fmt.Errorf("%s never listened (log: %s): %w", p.Path, p.Stdout.(*os.File).Name(), err)
		}
	}
	return pc, pc.waitWritable(wctx)
}

// add prepares one node: its data directory, its log file (stdout and
// stderr), killed if this process dies.
func (pc *procCluster) add(bin, dir, name, cmd, grpcAddr string, args []string) error {
	if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return err
	}
	c := exec.Command(filepath.Join(bin, cmd), args...)
	c.Stdout, c.Stderr = logf, logf
	c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	pc.procs, pc.grpc = append(pc.procs, c), append(pc.grpc, grpcAddr)
	return nil
}

// waitListening dials addr until it accepts.
func waitListening(ctx context.Context, addr string) error {
	var d net.Dialer
	for {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			return c.Close()
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitWritable writes a probe file with three replicas until all three
// take it: a leader elected and out of safe mode, three datanodes
// registered and holding its token key (a datanode that has not heard of
// the key yet refuses the write, and the file completes on the others).
func (pc *procCluster) waitWritable(ctx context.Context) error {
	cc := client.DefaultConfig(pc.addrs...)
	cc.User = "root"
	c, err := client.New(cc)
	if err != nil {
		return err
	}
	defer c.Close()
	for {
		err := c.WriteFile(ctx, "/smallfiles-probe", []byte("probe"), client.CreateOptions{Replication: 3, Overwrite: true})
		if err == nil {
			locs, lerr := c.GetBlockLocations(ctx, "/smallfiles-probe", 0, 0)
			if lerr == nil && len(locs.GetBlocks()) == 1 && len(locs.Blocks[0].GetLocations()) == 3 {
				return c.Delete(ctx, "/smallfiles-probe", false)
			}
			err = fmt.Errorf("probe stored on fewer than 3 datanodes (%v)", lerr)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("process cluster never took a write: %w", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// cpuTime is the CPU time (user + system) the cluster's processes have
// used, from /proc/<pid>/stat (utime and stime, in USER_HZ ticks of 10 ms;
// fields 14 and 15, counted past the command name's closing parenthesis,
// which may hold spaces). A process gone or unreadable counts 0.
func (pc *procCluster) cpuTime() time.Duration {
	const tick = 10 * time.Millisecond // USER_HZ is 100 on Linux
	var total time.Duration
	for _, p := range pc.procs {
		if p.Process == nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.Process.Pid))
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) < 13 {
			continue
		}
		for _, v := range f[11:13] { // utime, stime
			n, _ := strconv.ParseInt(v, 10, 64)
			total += time.Duration(n) * tick
		}
	}
	return total
}

// stop ends every node (SIGTERM, then SIGKILL after 5 s) and waits.
func (pc *procCluster) stop() {
	for _, p := range pc.procs {
		if p.Process == nil {
			continue
		}
		_ = p.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = p.Process.Kill()
			<-done
		}
		if f, ok := p.Stdout.(*os.File); ok {
			f.Close()
		}
	}
}
