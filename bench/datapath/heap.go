package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/security"
)

// childEnv, when set, makes this program the concurrent-writes writer
// process instead of the benchmark (see childMain).
const childEnv = "BLOCKFS_DATAPATH_WRITER"

// heapMetric is the heap the Go runtime has allocated to objects, live or
// not yet swept: ReadMemStats' HeapAlloc, without stopping the world.
const heapMetric = "/memory/classes/heap/objects:bytes"

// liveMetric is the heap that the last GC found reachable: sampled with
// heapMetric, its peak leaves out the garbage GOGC lets pile up between
// collections.
const liveMetric = "/gc/heap/live:bytes"

// writerSpec is what the parent tells the writer process.
type writerSpec struct {
	Namenodes []string `json:"namenodes"`
	User      string   `json:"user"`
	CAPEM     []byte   `json:"ca_pem,omitempty"` // mTLS only, with CertPEM and KeyPEM
	CertPEM   []byte   `json:"cert_pem,omitempty"`
	KeyPEM    []byte   `json:"key_pem,omitempty"`
	Writers   int      `json:"writers"`
	Block     int64    `json:"block"`
	IOSize    int      `json:"io_size"`
	Dir       string   `json:"dir"`
}

type writerResult struct {
	Seconds float64 `json:"seconds"`
	Err     string  `json:"err,omitempty"`
}

// concurrentWrites has a writer process write r.cfg.Writers one-block
// files at once while this process samples its own heap every 2 ms. This
// process holds the three namenodes and three datanodes of every cluster
// (and idle clients); the writers and their block buffers are in the
// child. The peak is reported above a baseline taken after a forced GC
// right before the writes, so it is the datanodes' (and namenodes') extra
// heap, garbage not yet collected included.
func (r *rig) concurrentWrites(ctx context.Context, dir string) (mbPerS float64, h heapFigures, err error) {
	spec := writerSpec{Namenodes: r.c.NamenodeAddrs(), User: "root", Writers: r.cfg.Writers, Block: r.cfg.WriteBlock, IOSize: r.cfg.IOSize, Dir: dir}
	if r.cfg.MTLS {
		ca := r.c.CA()
		spec.CAPEM = ca.CertPEM
		if spec.CertPEM, spec.KeyPEM, err = security.IssueCert(ca, security.DefaultTrustDomain, security.Identity{Role: security.RoleUser, Name: "root"}, []string{"127.0.0.1"}); err != nil {
			return 0, h, err
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return 0, h, err
	}
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return 0, h, err
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		return 0, h, err
	}
	if err := cmd.Start(); err != nil {
		return 0, h, err
	}
	defer cmd.Wait()
	defer in.Close()
	out := bufio.NewReader(outPipe)
	b, _ := json.Marshal(spec)
	if _, err := in.Write(append(b, '\n')); err != nil {
		return 0, h, err
	}
	if line, err := out.ReadString('\n'); err != nil || line != "ready\n" {
		return 0, h, fmt.Errorf("writer process: %q, %v", line, err)
	}

	runtime.GC()
	base, baseLive := heapBytes()
	var peak, peakLive atomic.Uint64
	peak.Store(base)
	peakLive.Store(baseLive)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			h, live := heapBytes()
			if h > peak.Load() {
				peak.Store(h)
			}
			if live > peakLive.Load() {
				peakLive.Store(live)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	if _, err := in.Write([]byte("go\n")); err != nil {
		close(stop)
		return 0, h, err
	}
	line, rerr := out.ReadString('\n')
	close(stop)
	<-done
	var res writerResult
	if rerr != nil {
		return 0, h, fmt.Errorf("writer process: %w", rerr)
	}
	if err := json.Unmarshal([]byte(line), &res); err != nil {
		return 0, h, fmt.Errorf("writer process said %q", line)
	}
	if res.Err != "" {
		return 0, h, errors.New(res.Err)
	}
	total := int64(r.cfg.Writers) * r.cfg.WriteBlock
	const mib = 1 << 20
	h = heapFigures{peak: float64(peak.Load()-base) / mib, peakLive: float64(peakLive.Load()-baseLive) / mib, base: float64(base) / mib}
	return float64(total) / 1e6 / res.Seconds, h, nil
}

// heapFigures are one concurrent-writes run's heap figures, MiB.
type heapFigures struct {
	peak     float64 // peak heapMetric above base
	peakLive float64 // peak liveMetric above the live heap at base
	base     float64 // heapMetric after the GC before the writes
}

// heapBytes reads heapMetric and liveMetric.
func heapBytes() (heap, live uint64) {
	s := []metrics.Sample{{Name: heapMetric}, {Name: liveMetric}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}

// childMain is the writer process: it reads a writerSpec line, connects
// and prepares its data, says "ready", waits for "go", writes every file
// at once (one client each) and prints a writerResult line.
func childMain(stdin io.Reader, stdout io.Writer) int {
	in := bufio.NewReader(stdin)
	reply := func(res writerResult) int {
		b, _ := json.Marshal(res)
		fmt.Fprintf(stdout, "%s\n", b)
		if res.Err != "" {
			return 1
		}
		return 0
	}
	line, err := in.ReadBytes('\n')
	if err != nil {
		return reply(writerResult{Err: "reading the spec: " + err.Error()})
	}
	var spec writerSpec
	if err := json.Unmarshal(line, &spec); err != nil {
		return reply(writerResult{Err: "bad spec: " + err.Error()})
	}
	cc := client.DefaultConfig(spec.Namenodes...)
	cc.User = spec.User
	if spec.CertPEM != nil {
		tc, err := security.ClientTLSConfig(spec.CAPEM, spec.CertPEM, spec.KeyPEM, "")
		if err != nil {
			return reply(writerResult{Err: err.Error()})
		}
		cc.DialOptions = append(cc.DialOptions, grpc.WithTransportCredentials(credentials.NewTLS(tc)))
	}
	clients := make([]*client.Client, spec.Writers)
	for i := range clients {
		if clients[i], err = client.New(cc); err != nil {
			return reply(writerResult{Err: err.Error()})
		}
		defer clients[i].Close()
	}
	pat := newPattern(min(spec.Block, 64<<20), 2)
	fmt.Fprintln(stdout, "ready")
	if _, err := in.ReadString('\n'); err != nil {
		return reply(writerResult{Err: "waiting for go: " + err.Error()})
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	start := time.Now()
	err = parallel(spec.Writers, func(i int) error {
		return writeFile(ctx, clients[i], fmt.Sprintf("%s/w%d", spec.Dir, i), spec.Block, spec.Block, spec.IOSize, pat)
	})
	res := writerResult{Seconds: time.Since(start).Seconds()}
	if err != nil {
		res.Err = err.Error()
	}
	return reply(res)
}
