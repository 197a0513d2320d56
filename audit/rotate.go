package audit

import (
	"fmt"
	"os"
	"sync"
)

// rotatingFile is the audit file: appended to, and when a write would take
// it past max bytes, renamed to path.1 (path.1 to path.2, and so on, the
// oldest beyond backups removed) and started again. lumberjack does the
// same but leaves a goroutine running after Close (its mill), which a
// namenode that starts and stops in-process, as in tests, would leak.
type rotatingFile struct {
	path    string
	max     int64
	backups int // rotated files kept; 0: all

	mu   sync.Mutex
	f    *os.File
	size int64
}

func openRotating(path string, max int64, backups int) (*rotatingFile, error) {
	r := &rotatingFile{path: path, max: max, backups: backups}
	if err := r.open(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *rotatingFile) open() error {
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	r.f, r.size = f, st.Size()
	return nil
}

// Write appends p, rotating first if p would take the file past max. A
// single write larger than max goes into a fresh file whole.
func (r *rotatingFile) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return 0, os.ErrClosed
	}
	if r.size > 0 && r.size+int64(len(p)) > r.max {
		if err := r.rotate(); err != nil {
			return 0, err
		}
	}
	n, err := r.f.Write(p)
	r.size += int64(n)
	return n, err
}

func (r *rotatingFile) rotate() error {
	if err := r.f.Close(); err != nil {
		return err
	}
	r.f = nil
	last := r.backups
	if last == 0 {
		for last = 1; exists(r.name(last)); last++ {
		}
	}
	_ = os.Remove(r.name(last))
	for i := last - 1; i >= 1; i-- {
		if exists(r.name(i)) {
			if err := os.Rename(r.name(i), r.name(i+1)); err != nil {
				return err
			}
		}
	}
	if err := os.Rename(r.path, r.name(1)); err != nil {
		return err
	}
	return r.open()
}

func (r *rotatingFile) name(i int) string { return fmt.Sprintf("%s.%d", r.path, i) }

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// Close closes the file.
func (r *rotatingFile) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	return err
}
