package namenode

import (
	"os"

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
