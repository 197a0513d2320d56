package fsm

import (
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// retainSnapshots is how many complete snapshots a node keeps on disk.
const retainSnapshots = 2

// reapStep is how much of an old snapshot's file one truncation frees.
const reapStep = 4 << 20

// reapingSuffix marks a snapshot directory being removed. It ends in
// ".tmp", so raft's store lists it no more, as it does not list a snapshot
// still being written.
const reapingSuffix = ".reaping.tmp"

// SnapshotStore is the node's raft.FileSnapshotStore with its reaping done
// by the namenode. Raft's own reaping removes each old snapshot with one
// unlink, and freeing a large file in one go holds the Raft log's fsync,
// so every write, on ext4; reap frees it reapStep at a time instead,
// pausing as long as each step took (docs/OPERATIONS.md, "Measured
// figures behind design choices"). Raft is given SnapshotStore itself as its store, so it counts the
// readers of each snapshot (a leader streaming one to a follower, an
// admin Snapshot call checking it) and reap leaves one that is being read
// for a later reap: truncating it would cut the stream short. It also
// names the file a sink writes, for Persist's write-back (persist.go).
type SnapshotStore struct {
	*raft.FileSnapshotStore
	dir string // the store's snapshots directory
	log *slog.Logger

	mu      sync.Mutex     // held by reap throughout, so reaps do not overlap
	readers map[string]int // snapshot id -> open readers; guarded by rmu
	rmu     sync.Mutex
}

var _ raft.SnapshotStore = (*SnapshotStore)(nil)

// OpenSnapshotStore opens raft's file snapshot store in base (its files go
// to base/snapshots) with raft's reaping off, and reaps what a crash may
// have left beyond retainSnapshots before raft looks for a snapshot to
// restore (raft tries every listed one, newest first). reap keeps
// retainSnapshots after every Persist and Restore.
func OpenSnapshotStore(base string, logw io.Writer, log *slog.Logger) (*SnapshotStore, error) {
	store, err := raft.NewFileSnapshotStore(base, math.MaxInt32, logw)
	if err != nil {
		return nil, err
	}
	sf := &SnapshotStore{FileSnapshotStore: store, dir: filepath.Join(base, "snapshots"), log: log, readers: map[string]int{}}
	sf.reap()
	return sf, nil
}

// Open opens snapshot id for reading, as raft's store does, and counts the
// reader until it closes. The count starts before the store's Open, which
// reads the whole file for its CRC, so a reap cannot truncate it then.
func (sf *SnapshotStore) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	sf.rmu.Lock()
	sf.readers[id]++
	sf.rmu.Unlock()
	r := &countedReader{sf: sf, id: id}
	meta, rc, err := sf.FileSnapshotStore.Open(id)
	if err != nil {
		r.uncount()
		return nil, nil, err
	}
	r.ReadCloser = rc
	return meta, r, nil
}

// countedReader is an open snapshot; Close uncounts it once.
type countedReader struct {
	io.ReadCloser
	sf   *SnapshotStore
	id   string
	once sync.Once
}

func (r *countedReader) Close() error {
	r.uncount()
	return r.ReadCloser.Close()
}

// uncount drops the reader from its snapshot's count, once.
func (r *countedReader) uncount() {
	r.once.Do(func() {
		r.sf.rmu.Lock()
		if r.sf.readers[r.id]--; r.sf.readers[r.id] <= 0 {
			delete(r.sf.readers, r.id)
		}
		r.sf.rmu.Unlock()
	})
}

// newest returns the metadata of the newest complete snapshot. Raft takes
// one snapshot at a time, so right after a snapshot future succeeds it is
// that snapshot's.
func (sf *SnapshotStore) Newest() (*raft.SnapshotMeta, error) {
	metas, err := sf.List()
	if err != nil {
		return nil, err
	}
	if len(metas) == 0 {
		return nil, errors.New("no snapshot in the store")
	}
	return metas[0], nil
}

// stateFile names the file a sink of this store writes the snapshot to
// (<dir>/<id>.tmp/state.bin until the sink is closed), or "" when sf is nil
// or the sink is another kind. TestSnapshotStateFileFound checks the layout
// against the store.
func (sf *SnapshotStore) stateFile(sink raft.SnapshotSink) string {
	if sf == nil {
		return ""
	}
	if _, ok := sink.(*raft.FileSnapshotSink); !ok {
		return ""
	}
	return filepath.Join(sf.dir, sink.ID()+".tmp", "state.bin")
}

// reap removes every snapshot but the newest retainSnapshots, except one
// still being read (the next reap takes it), and what an earlier reap left
// half done. A snapshot is first renamed out of the store's listing (the
// directory is fsynced, so a crash cannot bring back a listed snapshot
// with a truncated file), then its state file is truncated reapStep at a
// time and the directory removed. Failures are logged: a snapshot left
// behind is reaped on the next try. It runs on the goroutine that calls
// it: after Persist, Raft's snapshot goroutine; after Restore, the FSM's,
// where each reapStep of old snapshot adds one truncation and its pause to
// an install or a start.
func (sf *SnapshotStore) reap() {
	if sf == nil {
		return
	}
	sf.mu.Lock()
	defer sf.mu.Unlock()
	metas, err := sf.List()
	if err != nil {
		sf.log.Warn("list snapshots to reap", "err", err)
		return
	}
	renamed := false
	for _, m := range metas[min(len(metas), retainSnapshots):] {
		sf.rmu.Lock()
		n := sf.readers[m.ID]
		sf.rmu.Unlock()
		if n > 0 {
			continue
		}
		dir := filepath.Join(sf.dir, m.ID)
		if err := os.Rename(dir, dir+reapingSuffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			sf.log.Warn("reap snapshot", "id", m.ID, "err", err)
			continue
		}
		renamed = true
	}
	if renamed {
		if err := syncDir(sf.dir); err != nil {
			sf.log.Warn("reap snapshots: sync directory", "err", err)
			return
		}
	}
	entries, err := os.ReadDir(sf.dir)
	if err != nil {
		sf.log.Warn("list snapshots to reap", "err", err)
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasSuffix(e.Name(), reapingSuffix) {
			continue
		}
		dir := filepath.Join(sf.dir, e.Name())
		truncateGently(filepath.Join(dir, "state.bin"))
		if err := os.RemoveAll(dir); err != nil {
			sf.log.Warn("reap snapshot", "dir", dir, "err", err)
			continue
		}
		sf.log.Info("reaped snapshot", "id", strings.TrimSuffix(e.Name(), reapingSuffix))
	}
}

// syncDir fsyncs directory dir, making the renames in it durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// truncateGently shrinks the file at path to nothing, reapStep at a time,
// pausing after each step as long as it took. A file that cannot be opened
// is left for RemoveAll.
func truncateGently(path string) {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return
	}
	for size := fi.Size(); size > 0; {
		size = max(0, size-reapStep)
		t0 := time.Now()
		if err := f.Truncate(size); err != nil {
			return
		}
		time.Sleep(time.Since(t0))
	}
}
