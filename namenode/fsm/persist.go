package fsm

import (
	"io"
	"os"
)

// Persist streams a snapshot of the whole namespace, hundreds of megabytes
// at millions of files, while the node goes on serving. The snapshot store
// fsyncs the file when Persist ends; everything still dirty is written
// then, and on ext4 the Raft log's own fsync (every write's commit) waits
// behind it, so a large final fsync stalls every write (docs/OPERATIONS.md,
// "Measured figures behind design choices"). persistWriter has the kernel write the file back as
// it grows (sync_file_range, on Linux), waiting for each syncEvery chunk
// before the next, so little more than two chunks (and the sink's buffer)
// is ever dirty and the final fsync finds almost nothing left. (The encode
// itself yields the processor every 64 KiB: namespace.View.Encode.)
const syncEvery = 256 << 10

// syncSlack is how far behind what was written the write-back stays: the
// sink buffers a little, and only what is surely in the file is synced.
const syncSlack = 64 << 10

// persistWriter is the writer Persist encodes into: the snapshot sink,
// written back as it goes.
type persistWriter struct {
	w       io.Writer
	f       *os.File // the sink's state file, for write-back; nil if not found
	written int64    // bytes written through w
	synced  int64    // bytes whose write-back has been started
	// wbErr is why write-back did not start (the state file would not
	// open) or stopped (its first error). It is not Persist's: write-back
	// only paces the write, and the store's fsync at the end is what makes
	// the snapshot durable and reports a failure.
	wbErr error
}

// newPersistWriter returns the writer for sink; state names the file the
// sink writes ("" if unknown: no write-back then).
func newPersistWriter(sink io.Writer, state string) *persistWriter {
	pw := &persistWriter{w: sink}
	if state != "" {
		pw.f, pw.wbErr = os.Open(state)
	}
	return pw
}

func (pw *persistWriter) Write(p []byte) (int, error) {
	n, err := pw.w.Write(p)
	pw.written += int64(n)
	if pw.f != nil && pw.wbErr == nil && pw.written-pw.synced >= syncEvery+syncSlack {
		pw.wbErr = writeBack(pw.f, pw.synced, syncEvery)
		pw.synced += syncEvery
	}
	return n, err
}

// close closes the state file and returns why write-back did not run or
// stopped, if it did not run to the end.
func (pw *persistWriter) close() error {
	if pw.f != nil {
		pw.f.Close()
	}
	return pw.wbErr
}
