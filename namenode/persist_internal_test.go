package namenode

import (
	"bytes"
	"io"
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
	dir := t.TempDir()
	store, err := raft.NewFileSnapshotStore(dir, 2, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	sink, err := store.Create(1, 42, 3, raft.Configuration{}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &fsmSnapshot{snapDir: filepath.Join(dir, "snapshots")}
	path := s.stateFile(sink)
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
	if w.synced < 2*syncEvery {
		t.Errorf("write-back started for %d bytes of %d", w.synced, len(want))
	}
	w.close()
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
	if (&fsmSnapshot{}).stateFile(sink) != "" {
		t.Error("a snapshot with no store directory named a state file")
	}
}
