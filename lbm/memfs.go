package lbm

import (
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// MemFS is a strict in-memory FS for tests. It keeps, per file, the content
// as of the last Sync plus the ordered list of later (unsynced) mutations,
// and, per directory, the entries as of the last SyncDir plus the ordered
// list of later namespace operations. CrashClone builds the file system a
// machine would find after a power cut: synced state is kept, and for each
// file and directory a random (seeded) prefix of the unsynced operations
// survives. The last surviving write may be torn, and then the file ends
// where the tear is (a record cut short); otherwise the lost tail of a file
// may be zero-filled up to its pre-crash size (the size reached the disk,
// the bytes did not), so zero-filled tails start at a write boundary.
// Faults (EIO, ENOSPC, ...) can be injected on chosen operations and paths,
// and CrashAfter makes the FS "lose power" after n more mutating operations.
// Directories are created durably by MkdirAll (a simplification).
type MemFS struct {
	mu      sync.Mutex
	dirs    map[string]bool
	files   map[string]*memInode // current namespace
	durable map[string]*memInode // namespace as of the last SyncDir of each dir
	pendNS  map[string][]nsOp    // dir -> unsynced namespace ops, in order
	faults  []Fault
	crashIn int // mutating ops left before the crash; <0: no crash armed
	dead    bool
}

// Op names an FS operation for fault injection.
type Op int

// Operations that faults can target.
const (
	OpAny Op = iota
	OpOpen
	OpCreate
	OpRead
	OpWrite
	OpSync
	OpTruncate
	OpPunch
	OpRemove
	OpRename
	OpSyncDir
	OpStat
	OpReadDir
)

// Fault makes operations of kind Op (OpAny: every kind) on paths starting
// with PathPrefix fail with Err. Count > 0 limits how many times it fires.
type Fault struct {
	Op         Op
	PathPrefix string
	Err        error
	Count      int
}

type nsOp struct {
	name string    // base path (full path)
	ino  *memInode // nil = remove
}

type memInode struct {
	mu     sync.RWMutex
	data   []byte
	synced []byte
	pend   []dataOp
}

type dataOp struct {
	kind int // 0 write, 1 truncate, 2 punch
	off  int64
	b    []byte
	n    int64
}

// NewMemFS returns an empty MemFS.
func NewMemFS() *MemFS {
	return &MemFS{
		dirs:    map[string]bool{"/": true, ".": true},
		files:   map[string]*memInode{},
		durable: map[string]*memInode{},
		pendNS:  map[string][]nsOp{},
		crashIn: -1,
	}
}

// Inject adds a fault.
func (m *MemFS) Inject(f Fault) {
	m.mu.Lock()
	m.faults = append(m.faults, f)
	m.mu.Unlock()
}

// ClearFaults removes all faults.
func (m *MemFS) ClearFaults() {
	m.mu.Lock()
	m.faults = nil
	m.mu.Unlock()
}

// CrashAfter arms a crash: the n+1-th mutating operation from now (write,
// sync, truncate, punch, create, remove, rename, syncdir) and every
// operation after it fail with EIO and have no effect.
func (m *MemFS) CrashAfter(n int) {
	m.mu.Lock()
	m.crashIn = n
	m.mu.Unlock()
}

// Dead reports whether an armed crash has happened.
func (m *MemFS) Dead() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.dead
}

var errCrashed = syscall.EIO

// check returns the error an operation must fail with, if any. Must be
// called with m.mu held.
func (m *MemFS) checkLocked(op Op, path string, mutating bool) error {
	if m.dead {
		return &os.PathError{Op: "memfs", Path: path, Err: errCrashed}
	}
	if mutating && m.crashIn >= 0 {
		if m.crashIn == 0 {
			m.dead = true
			return &os.PathError{Op: "memfs", Path: path, Err: errCrashed}
		}
		m.crashIn--
	}
	for i := range m.faults {
		f := &m.faults[i]
		if (f.Op == OpAny || f.Op == op) && strings.HasPrefix(path, f.PathPrefix) {
			if f.Count > 0 {
				f.Count--
				if f.Count == 0 {
					err := f.Err
					m.faults = append(m.faults[:i], m.faults[i+1:]...)
					return &os.PathError{Op: "memfs", Path: path, Err: err}
				}
			}
			return &os.PathError{Op: "memfs", Path: path, Err: f.Err}
		}
	}
	return nil
}

func (m *MemFS) check(op Op, path string, mutating bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.checkLocked(op, path, mutating)
}

func clean(p string) string { return filepath.Clean(p) }

// OpenFile implements FS.
func (m *MemFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	op := OpOpen
	if flag&os.O_CREATE != 0 {
		op = OpCreate
	}
	ino, exists := m.files[name]
	mut := (flag&os.O_CREATE != 0 && !exists) || (flag&os.O_TRUNC != 0 && exists)
	if err := m.checkLocked(op, name, mut); err != nil {
		return nil, err
	}
	if !m.dirs[filepath.Dir(name)] {
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.ENOENT}
	}
	if exists {
		if flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0 {
			return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EEXIST}
		}
		if flag&os.O_TRUNC != 0 {
			ino.mu.Lock()
			ino.data = ino.data[:0:0]
			ino.pend = append(ino.pend, dataOp{kind: 1, n: 0})
			ino.mu.Unlock()
		}
	} else {
		if flag&os.O_CREATE == 0 {
			return nil, &os.PathError{Op: "open", Path: name, Err: syscall.ENOENT}
		}
		ino = &memInode{}
		m.files[name] = ino
		d := filepath.Dir(name)
		m.pendNS[d] = append(m.pendNS[d], nsOp{name: name, ino: ino})
	}
	return &memFile{fs: m, ino: ino, name: name, rdonly: flag&(os.O_WRONLY|os.O_RDWR) == 0}, nil
}

// Create implements FS.
func (m *MemFS) Create(name string) (File, error) {
	return m.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
}

// Remove implements FS.
func (m *MemFS) Remove(name string) error {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.checkLocked(OpRemove, name, true); err != nil {
		return err
	}
	if _, ok := m.files[name]; !ok {
		return &os.PathError{Op: "remove", Path: name, Err: syscall.ENOENT}
	}
	delete(m.files, name)
	d := filepath.Dir(name)
	m.pendNS[d] = append(m.pendNS[d], nsOp{name: name})
	return nil
}

// Rename implements FS.
func (m *MemFS) Rename(oldname, newname string) error {
	oldname, newname = clean(oldname), clean(newname)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.checkLocked(OpRename, oldname, true); err != nil {
		return err
	}
	ino, ok := m.files[oldname]
	if !ok {
		return &os.PathError{Op: "rename", Path: oldname, Err: syscall.ENOENT}
	}
	delete(m.files, oldname)
	m.files[newname] = ino
	// Recorded as one op per directory, the new name first so that a
	// crash never loses both names when old and new share a directory.
	nd, od := filepath.Dir(newname), filepath.Dir(oldname)
	m.pendNS[nd] = append(m.pendNS[nd], nsOp{name: newname, ino: ino})
	m.pendNS[od] = append(m.pendNS[od], nsOp{name: oldname})
	return nil
}

// MkdirAll implements FS (durably, immediately).
func (m *MemFS) MkdirAll(dir string, perm os.FileMode) error {
	dir = clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.checkLocked(OpCreate, dir, false); err != nil {
		return err
	}
	for d := dir; ; d = filepath.Dir(d) {
		m.dirs[d] = true
		if d == filepath.Dir(d) {
			break
		}
	}
	return nil
}

// ReadDir implements FS.
func (m *MemFS) ReadDir(dir string) ([]string, error) {
	dir = clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.checkLocked(OpReadDir, dir, false); err != nil {
		return nil, err
	}
	if !m.dirs[dir] {
		return nil, &os.PathError{Op: "readdir", Path: dir, Err: syscall.ENOENT}
	}
	var names []string
	for p := range m.files {
		if filepath.Dir(p) == dir {
			names = append(names, filepath.Base(p))
		}
	}
	for p := range m.dirs {
		if p != dir && filepath.Dir(p) == dir {
			names = append(names, filepath.Base(p))
		}
	}
	sort.Strings(names)
	return names, nil
}

// Stat implements FS.
func (m *MemFS) Stat(name string) (os.FileInfo, error) {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.checkLocked(OpStat, name, false); err != nil {
		return nil, err
	}
	if ino, ok := m.files[name]; ok {
		ino.mu.RLock()
		defer ino.mu.RUnlock()
		return memInfo{name: filepath.Base(name), size: int64(len(ino.data))}, nil
	}
	if m.dirs[name] {
		return memInfo{name: filepath.Base(name), dir: true}, nil
	}
	return nil, &os.PathError{Op: "stat", Path: name, Err: syscall.ENOENT}
}

// SyncDir implements FS.
func (m *MemFS) SyncDir(dir string) error {
	dir = clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.checkLocked(OpSyncDir, dir, true); err != nil {
		return err
	}
	for _, op := range m.pendNS[dir] {
		if op.ino == nil {
			delete(m.durable, op.name)
		} else {
			m.durable[op.name] = op.ino
		}
	}
	delete(m.pendNS, dir)
	return nil
}

// CrashClone returns the FS as found after a power cut now: see MemFS.
// The clone has no faults and no armed crash.
func (m *MemFS) CrashClone(seed int64) *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	rng := rand.New(rand.NewSource(seed))
	out := NewMemFS()
	for d := range m.dirs {
		out.dirs[d] = true
	}
	ns := map[string]*memInode{}
	for p, ino := range m.durable {
		ns[p] = ino
	}
	dirs := make([]string, 0, len(m.pendNS))
	for d := range m.pendNS {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		ops := m.pendNS[d]
		keep := rng.Intn(len(ops) + 1)
		for _, op := range ops[:keep] {
			if op.ino == nil {
				delete(ns, op.name)
			} else {
				ns[op.name] = op.ino
			}
		}
	}
	names := make([]string, 0, len(ns))
	for p := range ns {
		names = append(names, p)
	}
	sort.Strings(names)
	built := map[*memInode]*memInode{}
	for _, p := range names {
		ino := ns[p]
		if c, ok := built[ino]; ok {
			out.files[p] = c
			out.durable[p] = c
			continue
		}
		c := &memInode{data: ino.crashContent(rng)}
		c.synced = append([]byte(nil), c.data...)
		built[ino] = c
		out.files[p] = c
		out.durable[p] = c
	}
	return out
}

func (ino *memInode) crashContent(rng *rand.Rand) []byte {
	ino.mu.RLock()
	defer ino.mu.RUnlock()
	data := append([]byte(nil), ino.synced...)
	if len(ino.pend) == 0 {
		return data
	}
	keep := rng.Intn(len(ino.pend) + 1)
	torn := false
	for i, op := range ino.pend[:keep] {
		switch op.kind {
		case 0:
			b := op.b
			if i == keep-1 && rng.Intn(2) == 0 {
				b = b[:rng.Intn(len(b)+1)] // torn write: the file ends there
				torn = true
			}
			data = memWrite(data, b, op.off)
		case 1:
			data = memTruncate(data, op.n)
		case 2:
			memPunch(data, op.off, op.n)
		}
	}
	if cur := int64(len(ino.data)); !torn && int64(len(data)) < cur && rng.Intn(2) == 0 {
		data = memTruncate(data, cur) // the size made it, the bytes did not
	}
	return data
}

func memWrite(data, b []byte, off int64) []byte {
	end := off + int64(len(b))
	if end > int64(len(data)) {
		data = memTruncate(data, end)
	}
	copy(data[off:], b)
	return data
}

func memTruncate(data []byte, n int64) []byte {
	if n <= int64(len(data)) {
		return data[:n]
	}
	if n <= int64(cap(data)) {
		old := len(data)
		data = data[:n]
		clear(data[old:])
		return data
	}
	nd := make([]byte, n, n+n/4)
	copy(nd, data)
	return nd
}

func memPunch(data []byte, off, n int64) {
	if off >= int64(len(data)) {
		return
	}
	end := min(off+n, int64(len(data)))
	clear(data[off:end])
}

type memFile struct {
	fs     *MemFS
	ino    *memInode
	name   string
	rdonly bool
	closed bool
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.fs.check(OpRead, f.name, false); err != nil {
		return 0, err
	}
	f.ino.mu.RLock()
	defer f.ino.mu.RUnlock()
	if off >= int64(len(f.ino.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.ino.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	if f.rdonly {
		return 0, &os.PathError{Op: "write", Path: f.name, Err: syscall.EBADF}
	}
	if err := f.fs.check(OpWrite, f.name, true); err != nil {
		return 0, err
	}
	f.ino.mu.Lock()
	defer f.ino.mu.Unlock()
	f.ino.data = memWrite(f.ino.data, p, off)
	f.ino.pend = append(f.ino.pend, dataOp{kind: 0, off: off, b: append([]byte(nil), p...)})
	return len(p), nil
}

func (f *memFile) Sync() error {
	if err := f.fs.check(OpSync, f.name, true); err != nil {
		return err
	}
	f.ino.mu.Lock()
	defer f.ino.mu.Unlock()
	f.ino.synced = append(f.ino.synced[:0:0], f.ino.data...)
	f.ino.pend = nil
	return nil
}

func (f *memFile) Truncate(size int64) error {
	if err := f.fs.check(OpTruncate, f.name, true); err != nil {
		return err
	}
	f.ino.mu.Lock()
	defer f.ino.mu.Unlock()
	f.ino.data = memTruncate(f.ino.data, size)
	f.ino.pend = append(f.ino.pend, dataOp{kind: 1, n: size})
	return nil
}

func (f *memFile) PunchHole(off, n int64) error {
	if err := f.fs.check(OpPunch, f.name, true); err != nil {
		return err
	}
	f.ino.mu.Lock()
	defer f.ino.mu.Unlock()
	memPunch(f.ino.data, off, n)
	f.ino.pend = append(f.ino.pend, dataOp{kind: 2, off: off, n: n})
	return nil
}

func (f *memFile) Stat() (os.FileInfo, error) {
	if err := f.fs.check(OpStat, f.name, false); err != nil {
		return nil, err
	}
	f.ino.mu.RLock()
	defer f.ino.mu.RUnlock()
	return memInfo{name: filepath.Base(f.name), size: int64(len(f.ino.data))}, nil
}

func (f *memFile) Close() error { f.closed = true; return nil }

type memInfo struct {
	name string
	size int64
	dir  bool
}

func (i memInfo) Name() string       { return i.name }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) Mode() os.FileMode  { return 0o644 }
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return i.dir }
func (i memInfo) Sys() any           { return nil }
