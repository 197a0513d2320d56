package netfault

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/tests/robustness"
)

// lengthFile is one file of the hflush writer: its bytes derive from its
// name, and its history is checked against robustness.LengthModel alone.
type lengthFile struct {
	path string
	data []byte
	hist *robustness.LengthHistory
}

// lengthWorkload is one writer appending to a file in small pieces,
// hflushing after each, and readers statting and reading whichever file
// it writes now. A flush that fails ends the file (it stays open: its
// lease is the writer's) and the writer starts the next.
type lengthWorkload struct {
	writer  *client.Client
	readers []*client.Client
	dir     string
	acked   *ackCounter

	mu    sync.Mutex
	files []*lengthFile
	// abandoned are files whose write or hflush failed: the writer keeps
	// them open (its client renews their lease to the end), so none may
	// be closed by a lease recovery meanwhile.
	abandoned []*lengthFile
	cur       atomic.Pointer[lengthFile]
	// bad are bytes a reader saw that the writer never wrote, or a read
	// shorter than the length a stat before it answered.
	bad []string
}

const lengthBlockSize = 4096

func (w *lengthWorkload) newFile(n int) *lengthFile {
	p := fmt.Sprintf("%s/v%03d", w.dir, n)
	f := &lengthFile{path: p, data: content(p), hist: robustness.NewLengthHistory()}
	w.mu.Lock()
	w.files = append(w.files, f)
	w.mu.Unlock()
	return f
}

// write runs the writer until ctx ends.
func (w *lengthWorkload) write(ctx context.Context, rng *rand.Rand) {
	for n := 0; ctx.Err() == nil; n++ {
		f := w.newFile(n)
		fctx, cancel := context.WithTimeout(ctx, 90*time.Second)
		w.writeFile(fctx, rng, f)
		cancel()
	}
}

func (w *lengthWorkload) writeFile(ctx context.Context, rng *rand.Rand, f *lengthFile) {
	h := f.hist
	call := h.Now()
	wr, err := w.writer.Create(ctx, f.path, client.CreateOptions{Perm: 0o644, Replication: 3, BlockSize: lengthBlockSize})
	if err != nil {
		return // never created: nothing to check
	}
	h.Add(0, robustness.LengthInput{Op: robustness.LenFlush, Len: 0}, call, robustness.LengthOutput{}, h.Now())
	w.cur.Store(f)
	off, flushes := 0, 20+rng.IntN(60)
	for i := 0; i < flushes && ctx.Err() == nil && off < len(f.data); i++ {
		k := min(len(f.data)-off, 1+rng.IntN(700))
		if _, err := wr.Write(f.data[off : off+k]); err != nil {
			h.Add(0, robustness.LengthInput{Op: robustness.LenFlush, Len: int64(off + k)}, h.Now(), robustness.LengthOutput{Unknown: true}, math.MaxInt64)
			w.abandon(f)
			return
		}
		off += k
		call := h.Now()
		if err := wr.Hflush(); err != nil {
			h.Add(0, robustness.LengthInput{Op: robustness.LenFlush, Len: int64(off)}, call, robustness.LengthOutput{Unknown: true}, math.MaxInt64)
			w.abandon(f)
			return
		}
		h.Add(0, robustness.LengthInput{Op: robustness.LenFlush, Len: int64(off)}, call, robustness.LengthOutput{}, h.Now())
		w.acked.Add(1)
	}
	call = h.Now()
	if err := wr.Close(); err != nil {
		h.Add(0, robustness.LengthInput{Op: robustness.LenFlush, Len: int64(off)}, call, robustness.LengthOutput{Unknown: true}, math.MaxInt64)
		return
	}
	h.Add(0, robustness.LengthInput{Op: robustness.LenFlush, Len: int64(off)}, call, robustness.LengthOutput{}, h.Now())
	w.acked.Add(1)
}

// read runs reader id until ctx ends: a linearizable stat joins the
// file's history, then the bytes are read and compared with the file's.
func (w *lengthWorkload) read(ctx context.Context, id int) {
	c := w.readers[id-1]
	for ctx.Err() == nil {
		f := w.cur.Load()
		if f == nil {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		octx, cancel := context.WithTimeout(ctx, 10*time.Second)
		call := f.hist.Now()
		st, err := c.Stat(octx, f.path)
		ret := f.hist.Now()
		if err != nil {
			cancel()
			time.Sleep(20 * time.Millisecond)
			continue // a failed read says nothing
		}
		f.hist.Add(id, robustness.LengthInput{Op: robustness.LenRead}, call, robustness.LengthOutput{Len: int64(st.Length)}, ret)
		got, err := c.ReadFile(octx, f.path)
		cancel()
		if err != nil {
			continue
		}
		if len(got) > len(f.data) || !bytes.Equal(got, f.data[:len(got)]) {
			w.fail(fmt.Sprintf("%s: reader %d read %d bytes that differ from what was written", f.path, id, len(got)))
		} else if len(got) < int(st.Length) {
			w.fail(fmt.Sprintf("%s: reader %d read %d bytes after a stat answered %d", f.path, id, len(got), st.Length))
		}
	}
}

func (w *lengthWorkload) abandon(f *lengthFile) {
	w.mu.Lock()
	w.abandoned = append(w.abandoned, f)
	w.mu.Unlock()
}

// recoveredUnderWriter returns the abandoned files some lease recovery
// closed although their writer's client renewed its lease throughout
// (every fault is shorter than the hard limit, and no other client
// touches them): the leader took a live writer's file.
func (w *lengthWorkload) recoveredUnderWriter(ctx context.Context) (checked int, bad []string) {
	w.mu.Lock()
	files := append([]*lengthFile(nil), w.abandoned...)
	w.mu.Unlock()
	for _, f := range files {
		for try := 0; try < 5; try++ {
			octx, cancel := context.WithTimeout(ctx, 10*time.Second)
			st, err := w.readers[0].Stat(octx, f.path)
			cancel()
			if err != nil {
				continue
			}
			checked++
			if !st.UnderConstruction {
				bad = append(bad, fmt.Sprintf("%s: closed by a lease recovery while its writer lived and renewed its lease", f.path))
			}
			break
		}
	}
	return checked, bad
}

func (w *lengthWorkload) fail(s string) {
	w.mu.Lock()
	w.bad = append(w.bad, s)
	w.mu.Unlock()
}

// check checks every file's history: it returns the files, the flushes
// acknowledged, and one line per file whose history is not linearizable
// against the visible-length model, then the bad reads.
func (w *lengthWorkload) check(timeout time.Duration) (files, flushes int, anomalies []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, f := range w.files {
		ops := f.hist.Ops()
		if len(ops) == 0 {
			continue
		}
		files++
		for _, op := range ops {
			if in := op.Input.(robustness.LengthInput); in.Op == robustness.LenFlush && !op.Output.(robustness.LengthOutput).Unknown {
				flushes++
			}
		}
		if res := porcupine.CheckOperationsTimeout(robustness.LengthModel, ops, timeout); res != porcupine.Ok {
			anomalies = append(anomalies, fmt.Sprintf("%s: visible-length history of %d operations is %s", f.path, len(ops), res))
		}
	}
	return files, flushes, append(anomalies, w.bad...)
}
