package namenode

import (
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
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

// snapshotFiles is the node's raft.FileSnapshotStore as Persist sees it:
// where a sink writes (for write-back, persist.go) and how old snapshots
// go. Raft's own reaping removes each old snapshot with one unlink, and
// freeing a 107 MB file (a million files) in one go held the Raft log's
// fsync, so every write, 13 to 19 ms on this machine's ext4; reap frees it
// reapStep at a time instead, pausing as long as each step took (about
// 1 ms per step, and a concurrent fsync then waited at most 2 ms).
type snapshotFiles struct {
	dir   string // the store's snapshots directory
	store *raft.FileSnapshotStore
	log   *slog.Logger
}

// openSnapshotFiles opens raft's file snapshot store in base (its files go
// to base/snapshots) with raft's reaping off: snapshotFiles.reap keeps
// retainSnapshots instead, after every Persist and Restore.
func openSnapshotFiles(base string, logw *slogWriter, log *slog.Logger) (*snapshotFiles, error) {
	store, err := raft.NewFileSnapshotStore(base, math.MaxInt32, logw)
	if err != nil {
		return nil, err
	}
	return &snapshotFiles{dir: filepath.Join(base, "snapshots"), store: store, log: log}, nil
}

// stateFile names the file a sink of this store writes the snapshot to
// (<dir>/<id>.tmp/state.bin until the sink is closed), or "" when sf is nil
// or the sink is another kind. TestSnapshotStateFileFound checks the layout
// against the store.
func (sf *snapshotFiles) stateFile(sink raft.SnapshotSink) string {
	if sf == nil {
		return ""
	}
	if _, ok := sink.(*raft.FileSnapshotSink); !ok {
		return ""
	}
	return filepath.Join(sf.dir, sink.ID()+".tmp", "state.bin")
}

// reap removes every snapshot but the newest retainSnapshots, and what an
// earlier reap left half done. A snapshot is first renamed out of the
// store's listing, then its state file is truncated reapStep at a time and
// the directory removed. A leader still streaming that snapshot to a
// follower gets a short read, and the follower refuses the install and is
// sent the newest snapshot next time. Failures are logged: a snapshot left
// behind is reaped on the next try.
func (sf *snapshotFiles) reap() {
	if sf == nil {
		return
	}
	metas, err := sf.store.List()
	if err != nil {
		sf.log.Warn("list snapshots to reap", "err", err)
		return
	}
	for _, m := range metas[min(len(metas), retainSnapshots):] {
		dir := filepath.Join(sf.dir, m.ID)
		if err := os.Rename(dir, dir+reapingSuffix); err != nil {
			sf.log.Warn("reap snapshot", "id", m.ID, "err", err)
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
