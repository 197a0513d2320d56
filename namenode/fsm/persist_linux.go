package fsm

import (
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// writeBack starts writing back bytes [off, off+n) of f and waits for the
// chunk before it (the bytes [off-n, off)) to reach the disk.
func writeBack(f *os.File, off, n int64) error {
	fd := int(f.Fd())
	if err := unix.SyncFileRange(fd, off, n, unix.SYNC_FILE_RANGE_WRITE); err != nil || off < n {
		return err
	}
	return unix.SyncFileRange(fd, off-n, n, unix.SYNC_FILE_RANGE_WAIT_BEFORE|unix.SYNC_FILE_RANGE_WRITE|unix.SYNC_FILE_RANGE_WAIT_AFTER)
}

// persistNice is the scheduling priority (nice) the encode runs at.
const persistNice = 10

// inBackground runs fn on an OS thread of its own at nice persistNice and
// returns its error; the thread is discarded after (its goroutine exits
// still locked to it), so the priority goes nowhere else. The encode is
// background work that keeps a core busy for as long as the image takes;
// at normal priority the threads a Create needs (the Raft log writer woken
// from its fsync, the handlers) waited for the CPU behind it
// (docs/OPERATIONS.md, "Measured figures behind design choices"). If the
// priority cannot be set, fn runs at the
// thread's own.
func inBackground(fn func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: see above
		_ = unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), persistNice)
		done <- fn()
	}()
	return <-done
}
