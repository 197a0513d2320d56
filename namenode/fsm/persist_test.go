package fsm

import (
	"bytes"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
)

// TestSnapshotStateFileFound: stateFile names the file a FileSnapshotStore
// sink really writes, so a raft release that moves it fails here rather
// than silently dropping the write-back; and what goes through the
// persistWriter reaches the store intact.
func TestSnapshotStateFileFound(t *testing.T) {
	sf := testSnapshotFiles(t)
	store := sf
	sink, err := store.Create(1, 42, 3, raft.Configuration{}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	path := sf.stateFile(sink)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("stateFile = %q: %v", path, err)
	}
	w := newPersistWriter(sink, path)
	if w.f == nil {
		t.Fatal("the persist writer did not open the state file")
	}
	want := make([]byte, 3*syncEvery+12345)
	for i := range want {
		want[i] = byte(rand.Uint32())
	}
	for rest := want; len(rest) > 0; {
		n := min(len(rest), 1+rand.IntN(100<<10))
		if _, err := w.Write(rest[:n]); err != nil {
			t.Fatal(err)
		}
		rest = rest[n:]
	}
	if w.synced < 2*syncEvery || w.wbErr != nil {
		t.Errorf("write-back started for %d bytes of %d; error %v", w.synced, len(want), w.wbErr)
	}
	if err := w.close(); err != nil {
		t.Fatalf("write-back: %v", err)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	_, rc, err := store.Open(sink.ID())
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the store holds %d bytes, not the %d written", len(got), len(want))
	}
	if (*SnapshotStore)(nil).stateFile(sink) != "" {
		t.Error("a snapshot with no store named a state file")
	}
}

// testSnapshotFiles opens a snapshot store in a temp dir.
func testSnapshotFiles(t *testing.T) *SnapshotStore {
	t.Helper()
	sf, err := OpenSnapshotStore(t.TempDir(), io.Discard, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return sf
}

// TestReapKeepsTheNewest: reap leaves exactly the newest retainSnapshots
// snapshots, intact, removes the older ones and what a reap interrupted
// by a crash left, and never touches a snapshot still being written.
func TestReapKeepsTheNewest(t *testing.T) {
	sf := testSnapshotFiles(t)
	write := func(idx uint64, size int) raft.SnapshotSink {
		sink, err := sf.Create(1, idx, 1, raft.Configuration{}, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sink.Write(bytes.Repeat([]byte{byte(idx)}, size)); err != nil {
			t.Fatal(err)
		}
		return sink
	}
	for idx := uint64(1); idx <= 4; idx++ {
		if err := write(idx, 3*reapStep/2+int(idx)).Close(); err != nil {
			t.Fatal(err)
		}
	}
	leftover := filepath.Join(sf.dir, "1-0-0"+reapingSuffix)
	if err := os.MkdirAll(leftover, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(leftover, "state.bin"), make([]byte, 100), 0o644); err != nil {
		t.Fatal(err)
	}
	open := write(5, 10) // being written: not listed, not reaped
	// A snapshot being read (a leader streaming it to a follower) is left
	// whole until its reader closes.
	metas, err := sf.List()
	if err != nil || len(metas) != 4 {
		t.Fatalf("%d snapshots listed before the reap (%v), want 4", len(metas), err)
	}
	_, streaming, err := sf.Open(metas[3].ID) // the oldest, index 1
	if err != nil {
		t.Fatal(err)
	}
	sf.reap()
	got, err := io.ReadAll(streaming)
	if err != nil || len(got) != 3*reapStep/2+1 {
		t.Fatalf("the snapshot streamed during a reap read %d bytes (%v), want %d", len(got), err, 3*reapStep/2+1)
	}
	if metas, _ := sf.List(); len(metas) != retainSnapshots+1 || metas[retainSnapshots].Index != 1 {
		t.Fatalf("after a reap beside a reader the store lists %d snapshots, want the newest %d and the one being read", len(metas), retainSnapshots)
	}
	if err := streaming.Close(); err != nil {
		t.Fatal(err)
	}
	sf.reap()
	metas, err = sf.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(metas) != retainSnapshots || metas[0].Index != 4 || metas[1].Index != 3 {
		t.Fatalf("after reap the store lists %d snapshots, want the newest %d (4 and 3)", len(metas), retainSnapshots)
	}
	for _, m := range metas {
		_, rc, err := sf.Open(m.ID)
		if err != nil {
			t.Fatalf("kept snapshot %d: %v", m.Index, err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || len(b) != 3*reapStep/2+int(m.Index) {
			t.Fatalf("kept snapshot %d reads %d bytes, %v", m.Index, len(b), err)
		}
	}
	entries, err := os.ReadDir(sf.dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != retainSnapshots+1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("snapshot directory holds %v, want the 2 kept and the one being written", names)
	}
	if err := open.Close(); err != nil {
		t.Fatalf("the snapshot being written during the reap: %v", err)
	}

	// Restore reaps too: a follower installing the leader's snapshots
	// never runs Persist.
	_, img := filledImage(t, "/r", 10)
	g := New(Config{Superuser: "root", Supergroup: "supergroup"})
	g.snaps = sf
	if err := g.Restore(io.NopCloser(bytes.NewReader(img))); err != nil {
		t.Fatal(err)
	}
	if metas, err := sf.List(); err != nil || len(metas) != retainSnapshots || metas[0].Index != 5 {
		t.Fatalf("after Restore the store lists %d snapshots (%v), want the newest %d", len(metas), err, retainSnapshots)
	}
}
