package namenode

import (
	"os"

	"golang.org/x/sys/unix"
)

// writeBack starts writing back bytes [off, off+n) of f and waits for the
// chunk before it (the bytes [off-n, off)) to reach the disk. Errors are
// ignored: this only paces the write, and the store's fsync at the end is
// what makes the snapshot durable and reports a failure.
func writeBack(f *os.File, off, n int64) {
	fd := int(f.Fd())
	_ = unix.SyncFileRange(fd, off, n, unix.SYNC_FILE_RANGE_WRITE)
	if off >= n {
		_ = unix.SyncFileRange(fd, off-n, n, unix.SYNC_FILE_RANGE_WAIT_BEFORE|unix.SYNC_FILE_RANGE_WRITE|unix.SYNC_FILE_RANGE_WAIT_AFTER)
	}
}
