package crashtest

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/blockfs/blockfs/internal/testutil/nodeproc"

	"github.com/blockfs/blockfs/client"
)

// The hflush writer: a child process (this test binary, re-run in writer
// mode) writes a file in pieces, hflushing after each and printing the
// length every datanode acknowledged. The parent kills it with SIGKILL
// at a random moment, recovers the file's lease, and at the end checks
// that every hflushed byte is in the closed file, byte-identical.

const hflushEnv = "BLOCKFS_HFLUSH_WRITER" // "nn1,nn2,nn3|/path"

// hflushFileSize bounds what one writer writes before it waits to die.
const hflushFileSize = 64 * BlockSize

// TestHflushWriterChild is the child's body; it does nothing in a normal
// test run.
func TestHflushWriterChild(t *testing.T) {
	spec := os.Getenv(hflushEnv)
	if spec == "" {
		t.Skip("only run as the crash suite's hflush writer")
	}
	nns, path, _ := strings.Cut(spec, "|")
	cfg := client.DefaultConfig(strings.Split(nns, ",")...)
	cfg.User, cfg.MaxBackoff = "root", 300*time.Millisecond
	cl, err := client.New(cfg)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	ctx := context.Background()
	w, err := cl.Create(ctx, path, client.CreateOptions{BlockSize: BlockSize, Replication: 3})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	data := Content(path, hflushFileSize)
	rng := rand.New(rand.NewPCG(uint64(len(path)), uint64(time.Now().UnixNano())))
	for off := 0; off < len(data); {
		n := min(len(data)-off, 100+rng.IntN(3000))
		if _, err := w.Write(data[off : off+n]); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		if err := w.Hflush(); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		off += n
		fmt.Println("flushed", off)
		time.Sleep(time.Duration(10+rng.IntN(40)) * time.Millisecond)
	}
	select {} // wait for the SIGKILL: the file is never closed
}

// hflushRun is one killed writer: its file and the length it saw
// hflushed last.
type hflushRun struct {
	path    string
	flushed int
	err     string // the child's own error line, if it printed one
}

type hflushLedger struct {
	mu   sync.Mutex
	runs []hflushRun
}

// hflushWriters starts writers one after another until ctx ends, killing
// each after a random while and recovering its file's lease at once.
func hflushWriters(ctx context.Context, t *testing.T, c *cluster, cl *client.Client, rng *rand.Rand, led *hflushLedger) {
	for i := 0; ctx.Err() == nil; i++ {
		path := fmt.Sprintf("/crash/hflush/f%04d", i)
		cmd := exec.Command(os.Args[0], "-test.run=^TestHflushWriterChild$")
		cmd.Env = append(nodeproc.ChildEnv(), hflushEnv+"="+strings.Join(c.nnAddrs(), ",")+"|"+path)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Error(err)
			return
		}
		if err := cmd.Start(); err != nil {
			t.Error(err)
			return
		}
		var flushed atomic.Int64
		var childErr atomic.Value
		lines := make(chan struct{})
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				f := strings.Fields(sc.Text())
				switch {
				case len(f) == 2 && f[0] == "flushed":
					if n, err := strconv.Atoi(f[1]); err == nil {
						flushed.Store(int64(n))
					}
				case len(f) > 0 && f[0] == "error":
					childErr.Store(sc.Text())
				}
			}
		}()
		sleepCtx(ctx, time.Duration(400+rng.IntN(2000))*time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-lines
		_ = cmd.Wait()
		run := hflushRun{path: path, flushed: int(flushed.Load())}
		if e, ok := childErr.Load().(string); ok {
			run.err = e
		}
		recoverNow(t, cl, path)
		led.mu.Lock()
		led.runs = append(led.runs, run)
		led.mu.Unlock()
	}
}

// recoverNow asks for the lease recovery of path until the namenode
// takes it (the root client need not wait for the soft limit).
func recoverNow(t *testing.T, cl *client.Client, path string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		_, err := cl.RecoverLease(ctx, path)
		if err == nil || strings.Contains(err.Error(), "not under construction") || client.Code(err).String() == "NotFound" {
			return
		}
		sleepCtx(ctx, 200*time.Millisecond)
	}
}

// checkHflushed waits for every killed writer's file to be closed and
// checks that it holds every byte the writer saw hflushed.
func checkHflushed(ctx context.Context, t *testing.T, cl *client.Client, led *hflushLedger) {
	t.Helper()
	led.mu.Lock()
	runs := append([]hflushRun(nil), led.runs...)
	led.mu.Unlock()
	total, files := 0, 0
	for _, r := range runs {
		st, err := cl.Stat(ctx, r.path)
		if client.Code(err).String() == "NotFound" && r.flushed == 0 {
			if r.err != "" {
				t.Logf("%s: the writer failed before writing: %s", r.path, r.err)
			}
			continue // killed before its create took
		}
		if err != nil {
			t.Errorf("%s: %v", r.path, err)
			continue
		}
		if st.UnderConstruction {
			recoverNow(t, cl, r.path)
			wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			err := cl.WaitClosed(wctx, r.path)
			cancel()
			if err != nil {
				t.Errorf("%s: never closed after lease recovery: %v", r.path, err)
				continue
			}
		}
		got, err := readRetry(ctx, cl, r.path)
		if err != nil {
			t.Errorf("%s: %v", r.path, err)
			continue
		}
		if len(got) < r.flushed {
			t.Errorf("%s: %d bytes after recovery, but %d were hflushed (child: %s)", r.path, len(got), r.flushed, r.err)
			continue
		}
		if want := Content(r.path, len(got)); string(got) != string(want) {
			t.Errorf("%s: the recovered %d bytes differ from what was written", r.path, len(got))
			continue
		}
		total += r.flushed
		files++
	}
	t.Logf("hflush writers: %d killed, %d files recovered holding all %d hflushed bytes", len(runs), files, total)
	if len(runs) > 0 && files == 0 {
		t.Error("no killed writer's file could be checked")
	}
}

func readRetry(ctx context.Context, cl *client.Client, p string) ([]byte, error) {
	var last error
	for range 50 {
		got, err := cl.ReadFile(ctx, p)
		if err == nil {
			return got, nil
		}
		last = err
		sleepCtx(ctx, 200*time.Millisecond)
	}
	return nil, last
}
