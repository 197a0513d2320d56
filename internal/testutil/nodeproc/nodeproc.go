// Package nodeproc runs blockfs node binaries (namenode, datanode) as
// child processes for the suites that test real processes
// (tests/crashtest, tests/netfault): building the binaries once, starting
// a node with its flags (optionally inside a network namespace, through
// `ip netns exec`), waiting for it to listen, and the faults a process
// takes: SIGKILL, SIGSTOP and SIGCONT. A node keeps its flags, data
// directory and log across restarts; the log file collects every run's
// output with a line marking each start and fault.
package nodeproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ModuleRoot walks up from the working directory to the go.mod.
func ModuleRoot() (string, error) {
	d, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		p := filepath.Dir(d)
		if p == d {
			return "", errors.New("no go.mod above the working directory")
		}
		d = p
	}
}

// Build builds the namenode and datanode commands into dir.
func Build(dir string) error {
	root, err := ModuleRoot()
	if err != nil {
		return err
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("no go tool in PATH: %w", err)
	}
	cmd := exec.Command(gobin, "build", "-o", dir+string(filepath.Separator), "./cmd/namenode", "./cmd/datanode")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, b)
	}
	return nil
}

// ChildEnv is the environment of the children: ours without BLOCKFS_*
// variables, which would silently change their flags.
func ChildEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "BLOCKFS_") {
			env = append(env, kv)
		}
	}
	return env
}

// ErrBind is what WaitListening wraps when the node's log says its port
// was taken.
var ErrBind = errors.New("address already in use")

// Proc is one node process. Set the exported fields before the first
// Start; they stay the same across restarts.
type Proc struct {
	Name    string
	Bin     string
	Args    func() []string // computed at each start (ports may be re-picked)
	GRPC    string          // gRPC address, host:port
	DataDir string
	LogPath string
	// Netns, if set, is the network namespace the process runs in.
	Netns string
	// Dial, if set, is how WaitListening reaches GRPC (from inside the
	// namespace); nil dials from the caller's.
	Dial func(ctx context.Context, addr string) (net.Conn, error)

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{} // closed when cmd exits
	exit   error
	kills  int
	pauses int
	logs   *os.File
}

// Running reports whether the process is started and has not exited.
func (p *Proc) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Kills is how many times Kill9 killed the process.
func (p *Proc) Kills() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.kills
}

// Pauses is how many times Pause stopped the process.
func (p *Proc) Pauses() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pauses
}

// Start launches the process; it does not wait for it to listen.
func (p *Proc) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.logs == nil {
		f, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		p.logs = f
	}
	p.markLocked("start")
	name, args := p.Bin, p.Args()
	if p.Netns != "" {
		// ip netns exec execs the binary, so the child is the node itself
		// (signals reach it, not a wrapper).
		name, args = "ip", append([]string{"netns", "exec", p.Netns, p.Bin}, args...)
	}
	cmd := exec.Command(name, args...)
	cmd.Env = ChildEnv()
	cmd.Stdout, cmd.Stderr = p.logs, p.logs
	// The kernel kills the child if the test process dies first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	p.cmd, p.done = cmd, done
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.exit = err
		p.mu.Unlock()
		close(done)
	}()
	return nil
}

// markLocked writes a line marking event in the log (p.mu held).
func (p *Proc) markLocked(event string) {
	if p.logs != nil {
		fmt.Fprintf(p.logs, "=== nodeproc: %s %s at %s\n", event, p.Name, time.Now().Format(time.RFC3339Nano))
	}
}

// signal sends sig to a running process; false if it is not running.
func (p *Proc) signal(sig syscall.Signal, event string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
	}
	_ = p.cmd.Process.Signal(sig)
	p.markLocked(event)
	return true
}

// Kill9 SIGKILLs the process and waits for it to be reaped. A paused
// process dies as well.
func (p *Proc) Kill9() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	if p.signal(syscall.SIGKILL, "SIGKILL") {
		p.mu.Lock()
		p.kills++
		p.mu.Unlock()
	}
	<-done
}

// Pause SIGSTOPs the process (a GC pause, a frozen VM): it keeps its
// sockets and state and runs nothing until Resume.
func (p *Proc) Pause() {
	if p.signal(syscall.SIGSTOP, "SIGSTOP") {
		p.mu.Lock()
		p.pauses++
		p.mu.Unlock()
	}
}

// Resume SIGCONTs a paused process.
func (p *Proc) Resume() { p.signal(syscall.SIGCONT, "SIGCONT") }

// Stop kills the process for good and closes its log.
func (p *Proc) Stop() {
	p.Resume() // a stopped process takes SIGKILL too, but be plain about it
	p.Kill9()
	p.mu.Lock()
	if p.logs != nil {
		p.logs.Close()
		p.logs = nil
	}
	p.mu.Unlock()
}

// WaitListening waits until the gRPC port accepts connections. It fails
// early, wrapping ErrBind when the log says the port was taken, if the
// process exits.
func (p *Proc) WaitListening(ctx context.Context) error {
	dial := p.Dial
	if dial == nil {
		d := net.Dialer{Timeout: 200 * time.Millisecond}
		dial = func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }
	}
	for {
		p.mu.Lock()
		done := p.done
		p.mu.Unlock()
		select {
		case <-done:
			if bytes.Contains(p.LogTail(4096), []byte("address already in use")) {
				return fmt.Errorf("%s: %w", p.Name, ErrBind)
			}
			return fmt.Errorf("%s exited at start: %v\n%s", p.Name, p.ExitErr(), p.LogTail(2048))
		default:
		}
		dctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		c, err := dial(dctx, p.GRPC)
		cancel()
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not listening on %s: %w", p.Name, p.GRPC, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// ExitErr is how the last run ended (nil while running).
func (p *Proc) ExitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exit
}

// LogTail returns the last n bytes of the log.
func (p *Proc) LogTail(n int) []byte {
	b, _ := os.ReadFile(p.LogPath)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return b
}
