package crashtest

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
	"testing"
	"time"
)

// binaries are built once per test run by TestMain.
var (
	binDir   string
	buildErr error
)

func TestMain(m *testing.M) {
	if os.Getenv(hflushEnv) != "" {
		os.Exit(m.Run()) // the hflush writer child: no binaries needed
	}
	dir, err := os.MkdirTemp("", "blockfs-crashtest-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	buildErr = buildBinaries(dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// moduleRoot walks up from the working directory to the go.mod.
func moduleRoot() (string, error) {
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

func buildBinaries(out string) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("no go tool in PATH: %w", err)
	}
	cmd := exec.Command(gobin, "build", "-o", out+string(filepath.Separator), "./cmd/namenode", "./cmd/datanode")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, b)
	}
	return nil
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// childEnv is the environment of the children: ours without BLOCKFS_*
// variables, which would silently change their flags.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "BLOCKFS_") {
			env = append(env, kv)
		}
	}
	return env
}

// proc is one node process: its flags and data dir stay the same across
// restarts.
type proc struct {
	name    string
	bin     string
	args    func() []string // computed at start (ports may be re-picked)
	grpc    string          // gRPC address, "127.0.0.1:port"
	dataDir string
	logPath string

	mu    sync.Mutex
	cmd   *exec.Cmd
	done  chan struct{} // closed when cmd exits
	exit  error
	kills int
	logs  *os.File
}

func (p *proc) running() bool {
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

// start launches the process; it does not wait for it to listen.
func (p *proc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.logs == nil {
		f, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		p.logs = f
	}
	fmt.Fprintf(p.logs, "=== crashtest: start %s at %s\n", p.name, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(p.bin, p.args()...)
	cmd.Env = childEnv()
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

// kill9 SIGKILLs the process and waits for it to be reaped.
func (p *proc) kill9() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
	p.mu.Lock()
	p.kills++
	if p.logs != nil {
		fmt.Fprintf(p.logs, "=== crashtest: SIGKILL %s at %s\n", p.name, time.Now().Format(time.RFC3339Nano))
	}
	p.mu.Unlock()
}

// stop kills the process for good and closes its log.
func (p *proc) stop() {
	p.kill9()
	p.mu.Lock()
	if p.logs != nil {
		p.logs.Close()
		p.logs = nil
	}
	p.mu.Unlock()
}

// waitListening waits until the gRPC port accepts connections. It fails
// early, with errBind when the log says the port was taken, if the process
// exits.
func (p *proc) waitListening(ctx context.Context) error {
	for {
		p.mu.Lock()
		done := p.done
		p.mu.Unlock()
		select {
		case <-done:
			if bytes.Contains(p.logTail(4096), []byte("address already in use")) {
				return fmt.Errorf("%s: %w", p.name, errBind)
			}
			return fmt.Errorf("%s exited at start: %v\n%s", p.name, p.exitErr(), p.logTail(2048))
		default:
		}
		c, err := net.DialTimeout("tcp", p.grpc, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not listening on %s: %w", p.name, p.grpc, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

var errBind = errors.New("address already in use")

func (p *proc) exitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exit
}

func (p *proc) logTail(n int) []byte {
	b, _ := os.ReadFile(p.logPath)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return b
}
