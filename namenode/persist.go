package namenode

import (
	"io"
	"os"
	"runtime"
)

// Persist streams a snapshot of the whole namespace, seconds of CPU and
// hundreds of megabytes at millions of files, while the node goes on
// serving. Two things it does would otherwise reach the clients' writes:
//
//   - The encode is CPU-bound, and the Go scheduler preempts a running
//     goroutine only after 10 ms; on a 2-core machine a Create's goroutines
//     (gRPC, Raft's leader loop, the FSM) could wait that long for a
//     processor. persistWriter yields the processor every yieldEvery bytes.
//   - The snapshot store fsyncs the file when Persist ends. Everything still
//     dirty is written then, and on ext4 the Raft log's own fsync (every
//     write's commit) waits behind it: measured, a 21 MB image held a Create
//     for 10 to 15 ms at a median of 0.35 ms. persistWriter has the kernel
//     write the file back as it grows (sync_file_range, on Linux), waiting
//     for each syncEvery chunk before the next, so at most two chunks are
//     ever dirty and the final fsync finds almost nothing left.
const (
	yieldEvery = 64 << 10
	syncEvery  = 256 << 10
)

// persistWriter is the writer Persist encodes into: the snapshot sink,
// yielding and writing back as it goes.
type persistWriter struct {
	w       io.Writer
	f       *os.File // the sink's state file, for write-back; nil if not found
	sinceY  int      // bytes since the last yield
	written int64    // bytes written through w
	synced  int64    // bytes whose write-back has been started
	// wbErr is the write-back's first error, after which it stops. It is
	// not Persist's: write-back only paces the write, and the store's
	// fsync at the end is what makes the snapshot durable and reports a
	// failure.
	wbErr error
}

// newPersistWriter returns the writer for sink; state names the file the
// sink writes ("" if unknown: no write-back then).
func newPersistWriter(sink io.Writer, state string) *persistWriter {
	pw := &persistWriter{w: sink}
	if state != "" {
		if f, err := os.Open(state); err == nil {
			pw.f = f
		}
	}
	return pw
}

func (pw *persistWriter) Write(p []byte) (int, error) {
	n, err := pw.w.Write(p)
	pw.written += int64(n)
	if pw.sinceY += n; pw.sinceY >= yieldEvery {
		pw.sinceY = 0
		runtime.Gosched()
	}
	// The sink buffers a little; start write-back only of what is surely
	// in the file already.
	if pw.f != nil && pw.wbErr == nil && pw.written-pw.synced >= syncEvery+yieldEvery {
		pw.wbErr = writeBack(pw.f, pw.synced, syncEvery)
		pw.synced += syncEvery
	}
	return n, err
}

func (pw *persistWriter) close() {
	if pw.f != nil {
		pw.f.Close()
	}
}
