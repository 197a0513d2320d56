package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unsafe"
)

const dropCachesPath = "/proc/sys/vm/drop_caches"

// dropCachesWritable probes drop_caches without dropping anything: the
// kernel rejects the value 0 with EINVAL after the permission and
// read-only-mount checks, so EINVAL means a real write would work.
func dropCachesWritable() (bool, string) {
	f, err := os.OpenFile(dropCachesPath, os.O_WRONLY, 0)
	if err != nil {
		return false, err.Error()
	}
	defer f.Close()
	_, err = f.Write([]byte("0"))
	if errors.Is(err, syscall.EINVAL) {
		return true, ""
	}
	if err == nil {
		return true, ""
	}
	return false, err.Error()
}

// dropPageCache writes back dirty pages and drops the clean page cache,
// dentries and inodes (system-wide).
func dropPageCache() error {
	syscall.Sync()
	return os.WriteFile(dropCachesPath, []byte("3"), 0)
}

// residency counts the pages of the metadata files under root that are
// in the page cache (mincore of a read-only mapping), and all their pages.
func residency(root string) (resident, total int) {
	page := os.Getpagesize()
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".metadata") {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return nil
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil || fi.Size() == 0 {
			return nil
		}
		m, err := syscall.Mmap(int(f.Fd()), 0, int(fi.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
		if err != nil {
			return nil
		}
		defer syscall.Munmap(m)
		vec := make([]byte, (len(m)+page-1)/page)
		_, _, errno := syscall.Syscall(syscall.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0])))
		if errno != 0 {
			return nil
		}
		for _, v := range vec {
			total++
			if v&1 != 0 {
				resident++
			}
		}
		return nil
	})
	return resident, total
}
