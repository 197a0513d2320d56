package robustness

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/localcluster"
	"github.com/blockfs/blockfs/namenode"
)

// TestVisibleLength: one writer appends to a file in pieces, hflushing
// after each and now and then closing it and reopening it with append,
// while readers stat and read it, and the leader namenode and a datanode
// of the pipeline are stopped and started again. The history is checked
// against LengthModel: a read after an acknowledged hflush sees at least
// the hflushed bytes, the visible length never goes back, and every byte a
// reader sees is the writer's.
func TestVisibleLength(t *testing.T) {
	seed := seed(t)
	rng := rand.New(rand.NewPCG(seed, 7))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Config{
		Namenodes: 3, Datanodes: 4, Dir: t.TempDir(),
		Namenode: func(i int, nc *namenode.Config) { nc.Raft.ApplyTimeout = 3 * time.Second },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	newClient := func() *client.Client {
		cl, err := c.ClientAs("root")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cl.Close() })
		return cl
	}
	const p, blockSize = "/vis", 2048
	data := make([]byte, 64*blockSize)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	h := NewLengthHistory()
	runCtx, stop := context.WithTimeout(ctx, 6*time.Second)
	defer stop()
	var wg sync.WaitGroup
	// The writer.
	wcl := newClient()
	wg.Go(func() {
		w, err := wcl.Create(ctx, p, client.CreateOptions{BlockSize: blockSize, Replication: 3})
		if err != nil {
			t.Error(err)
			return
		}
		h.Add(0, LengthInput{Op: LenFlush, Len: 0}, h.Now(), LengthOutput{}, h.Now())
		off := 0
		for runCtx.Err() == nil && off < len(data) {
			n := min(len(data)-off, 1+rng.IntN(700))
			if _, err := w.Write(data[off : off+n]); err != nil {
				t.Errorf("write at %d: %v", off, err)
				return
			}
			off += n
			closeNow := rng.IntN(8) == 0
			call := h.Now()
			if closeNow {
				err = w.Close()
			} else {
				err = w.Hflush()
			}
			if err != nil {
				h.Add(0, LengthInput{Op: LenFlush, Len: int64(off)}, call, LengthOutput{Unknown: true}, math.MaxInt64)
				t.Logf("flush at %d failed: %v", off, err)
				return
			}
			h.Add(0, LengthInput{Op: LenFlush, Len: int64(off)}, call, LengthOutput{}, h.Now())
			if closeNow {
				if w, err = wcl.Append(ctx, p); err != nil {
					t.Errorf("append at %d: %v", off, err)
					return
				}
			}
		}
		if err := w.Close(); err != nil {
			t.Errorf("final close: %v", err)
		}
	})
	// Readers: a linearizable stat, then the bytes (which may be longer by
	// then, never different).
	for id := 1; id <= 2; id++ {
		rcl := newClient()
		wg.Go(func() {
			for runCtx.Err() == nil {
				call := h.Now()
				st, err := rcl.Stat(runCtx, p)
				ret := h.Now()
				if err != nil {
					time.Sleep(10 * time.Millisecond)
					continue // a failed read says nothing
				}
				h.Add(id, LengthInput{Op: LenRead}, call, LengthOutput{Len: int64(st.Length)}, ret)
				got, err := rcl.ReadFile(runCtx, p)
				if err == nil && !bytes.Equal(got, data[:len(got)]) {
					t.Errorf("reader %d: %d bytes read differ from what was written", id, len(got))
				}
				if err == nil && len(got) < int(st.Length) {
					t.Errorf("reader %d: read %d bytes after the file was %d", id, len(got), st.Length)
				}
			}
		})
	}
	// Faults: the leader namenode, then a datanode, stopped and restarted.
	time.Sleep(1500 * time.Millisecond)
	li := c.Leader()
	if err := c.StopNamenode(li); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if err := c.RestartNamenode(ctx, li); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if err := c.StopDatanode(1); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if err := c.RestartDatanode(ctx, 1); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	ops := h.Ops()
	flushes := 0
	for _, op := range ops {
		if op.Input.(LengthInput).Op == LenFlush {
			flushes++
		}
	}
	res, info := porcupine.CheckOperationsVerbose(LengthModel, ops, 30*time.Second)
	if res != porcupine.Ok {
		path := t.TempDir() + "/visible-length.html"
		_ = porcupine.VisualizePath(LengthModel, info, path)
		t.Fatalf("history of %d operations (%d flushes) is %v; visualization in %s", len(ops), flushes, res, path)
	}
	t.Logf("%d operations (%d flushes) linearizable against the visible-length model", len(ops), flushes)
	if flushes < 10 {
		t.Fatalf("only %d flushes: the run checked little", flushes)
	}
}
