package lbm

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// FS is the narrow file-system interface through which the store does ALL of
// its file I/O (after pebble's vfs). Paths are plain OS-style paths.
type FS interface {
	// OpenFile opens name with os.O_* flags and perm, like os.OpenFile.
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	// Create creates or truncates name for reading and writing (mode 0644).
	Create(name string) (File, error)
	// Remove removes a file.
	Remove(name string) error
	// Rename atomically replaces newname with oldname.
	Rename(oldname, newname string) error
	// MkdirAll creates dir and its parents.
	MkdirAll(dir string, perm os.FileMode) error
	// ReadDir returns the sorted names of the entries of dir.
	ReadDir(dir string) ([]string, error)
	// Stat describes a file.
	Stat(name string) (os.FileInfo, error)
	// SyncDir makes the entries of dir (creates, removes, renames) durable.
	SyncDir(dir string) error
}

// File is an open file. ReadAt/WriteAt are positional and safe for
// concurrent use; nothing in the store ever uses a file cursor.
type File interface {
	io.ReaderAt
	io.WriterAt
	Sync() error
	Truncate(size int64) error
	Stat() (os.FileInfo, error)
	Close() error
	// PunchHole deallocates [off, off+n) keeping the file size
	// (fallocate PUNCH_HOLE|KEEP_SIZE); the range then reads as zeros.
	PunchHole(off, n int64) error
}

// OSFS returns the FS backed by the operating system.
func OSFS() FS { return osFS{} }

type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (fs osFS) Create(name string) (File, error) {
	return fs.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
}
func (osFS) Remove(name string) error                    { return os.Remove(name) }
func (osFS) Rename(o, n string) error                    { return os.Rename(o, n) }
func (osFS) MkdirAll(dir string, perm os.FileMode) error { return os.MkdirAll(dir, perm) }
func (osFS) Stat(name string) (os.FileInfo, error)       { return os.Stat(name) }

func (osFS) ReadDir(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names, nil
}

func (osFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

type osFile struct{ *os.File }

// ReadAt differs from os.File.ReadAt only in that a read reaching EOF with
// a full buffer returns nil.
func (f osFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	if n == len(p) && errors.Is(err, io.EOF) {
		err = nil
	}
	return n, err
}

func (f osFile) PunchHole(off, n int64) error {
	if n <= 0 {
		return nil
	}
	for {
		err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "punchhole", Path: f.Name(), Err: err}
		}
		return nil
	}
}

// CountingFS wraps an FS and counts the ReadAt calls made on the files it
// opens (the bench reports them as read calls per replay path).
type CountingFS struct {
	FS
	reads atomic.Int64
	bytes atomic.Int64
}

// NewCountingFS wraps fs.
func NewCountingFS(fs FS) *CountingFS { return &CountingFS{FS: fs} }

// Reads returns the number of ReadAt calls since creation or Reset.
func (c *CountingFS) Reads() int64 { return c.reads.Load() }

// ReadBytes returns the number of bytes requested by ReadAt calls.
func (c *CountingFS) ReadBytes() int64 { return c.bytes.Load() }

// Reset zeroes the counters.
func (c *CountingFS) Reset() { c.reads.Store(0); c.bytes.Store(0) }

func (c *CountingFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := c.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &countingFile{File: f, c: c}, nil
}

func (c *CountingFS) Create(name string) (File, error) {
	f, err := c.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return &countingFile{File: f, c: c}, nil
}

type countingFile struct {
	File
	c *CountingFS
}

func (f *countingFile) ReadAt(p []byte, off int64) (int, error) {
	f.c.reads.Add(1)
	f.c.bytes.Add(int64(len(p)))
	return f.File.ReadAt(p, off)
}

func dirOf(p string) string { return filepath.Dir(filepath.Clean(p)) }

// WriteFileAtomic replaces path with data durably: it writes a temporary
// file with perm, fsyncs it, renames it over path and fsyncs the
// directory, so a crash leaves either the old file or the whole new one.
func WriteFileAtomic(fs FS, path string, data []byte, perm os.FileMode) error {
	tmp := path + ".tmp"
	f, err := fs.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(data, 0)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fs.Rename(tmp, path)
	}
	if err == nil {
		err = fs.SyncDir(dirOf(path))
	}
	return err
}
