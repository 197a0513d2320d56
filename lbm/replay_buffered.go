package lbm

import (
	"errors"
	"io"

	"github.com/blockfs/blockfs/errs"
)

// readaheadWindow is the buffer size of the buffered streaming reader
// (tests shrink it to make records straddle refills).
var readaheadWindow int64 = 1 << 20

// preadFull reads exactly len(b) bytes at off, or fails with an errs.IO
// error naming path (a short read is io.ErrUnexpectedEOF).
func preadFull(f File, path string, b []byte, off int64) error {
	if n, err := f.ReadAt(b, off); n < len(b) {
		return errs.Wrap(errs.IO, "lbm.Open", path, errors.Join(io.ErrUnexpectedEOF, err))
	}
	return nil
}

// readahead serves positioned reads of a file of known size from one
// window filled by a single large ReadAt. Replay reads front to back, so
// a record's header and body+crc are nearly always in the window and a
// refill happens once per readaheadWindow bytes. A read outside the window
// refills it at that offset; a read as large as the window bypasses it.
// Bytes are copied out raw: the caller decrypts them at their own offset.
type readahead struct {
	f    File
	path string
	size int64
	buf  []byte // buf[:n] holds the file bytes at [off, off+n)
	off  int64
	n    int
}

func newReadahead(f File, path string, size int64) *readahead {
	return &readahead{f: f, path: path, size: size, buf: make([]byte, min(size, readaheadWindow))}
}

func (r *readahead) readAt(b []byte, off int64) error {
	if off >= r.off && off+int64(len(b)) <= r.off+int64(r.n) {
		copy(b, r.buf[off-r.off:])
		return nil
	}
	if len(b) >= len(r.buf) {
		return preadFull(r.f, r.path, b, off)
	}
	// Refill at off, up to EOF: a read past EOF fails below as short.
	n := int(min(int64(len(r.buf)), max(0, r.size-off)))
	if n < len(b) {
		n = len(b)
	}
	r.n = 0
	if err := preadFull(r.f, r.path, r.buf[:n], off); err != nil {
		return err
	}
	r.off, r.n = off, n
	copy(b, r.buf[:len(b)])
	return nil
}
