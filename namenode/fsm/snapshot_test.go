package fsm

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
)

// memSink is a raft.SnapshotSink in memory.
type memSink struct {
	bytes.Buffer
	closed, canceled bool
}

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Close() error  { s.closed = true; return nil }
func (s *memSink) Cancel() error { s.canceled = true; return nil }

// snapshotBytes persists snap to memory, releases it and returns the bytes.
func snapshotBytes(t testing.TB, snap raft.FSMSnapshot) []byte {
	t.Helper()
	defer snap.Release()
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	if !sink.closed || sink.canceled {
		t.Fatalf("sink closed %v, canceled %v after a good Persist", sink.closed, sink.canceled)
	}
	return sink.Bytes()
}

// restored returns a fresh FSM restored from a snapshot of f.
func restored(t testing.TB, f *FSM) *FSM {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	g := New(Config{Superuser: "root", Supergroup: "supergroup"})
	if err := g.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(t, snap)))); err != nil {
		t.Fatal(err)
	}
	return g
}

// fillFSM applies n creates (in directories of 50) and a few other
// changes to f, numbering the log from *idx.
func fillFSM(t testing.TB, f *FSM, idx *uint64, prefix string, n int) {
	t.Helper()
	root := &api.Caller{User: "root", ClientId: "c"}
	for i := range n {
		p := fmt.Sprintf("%s/d%03d/f%05d", prefix, i/50, i)
		applyAt(t, f, idx, CmdCreate, &api.CreateCommand{Caller: root, Path: p, Perm: 0o644, Replication: 3, BlockSize: 1024, CreateParent: true, MtimeUnixMs: int64(i)})
	}
}

// filledImage returns an FSM filled by fillFSM and its snapshot's bytes.
func filledImage(t testing.TB, prefix string, n int) (*FSM, []byte) {
	t.Helper()
	f := New(Config{Superuser: "root", Supergroup: "supergroup"})
	var idx uint64
	fillFSM(t, f, &idx, prefix, n)
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	return f, snapshotBytes(t, snap)
}

// applyAt applies one command at the next index and fails on an error.
func applyAt(t testing.TB, f *FSM, idx *uint64, ct CmdType, msg proto.Message) {
	t.Helper()
	data, err := Encode(ct, msg)
	if err != nil {
		t.Fatal(err)
	}
	*idx++
	if r, _ := f.Apply(&raft.Log{Index: *idx, Type: raft.LogCommand, Data: data}).(*api.CommandResult); r == nil || r.ErrorMsg != "" {
		t.Fatalf("apply %d: %v", ct, r)
	}
}

// liveHash is the namespace hash of f's state.
func liveHash(f *FSM) [32]byte {
	defer f.mu.RLock().RUnlock()
	return f.st.tree.Hash()
}

// failingSink fails every Write once failAfter bytes went through.
type failingSink struct {
	raft.SnapshotSink
	failAfter, n int
}

func (s *failingSink) Write(p []byte) (int, error) {
	if s.n+len(p) > s.failAfter {
		k := max(0, s.failAfter-s.n)
		if k > 0 {
			s.SnapshotSink.Write(p[:k])
		}
		s.n += k
		return k, errors.New("no space left on device")
	}
	s.n += len(p)
	return s.SnapshotSink.Write(p)
}

// TestSnapshotWriteFailureKeepsPrevious: a snapshot whose sink fails (a
// full disk, an I/O error) at any point is canceled; the store keeps the
// previous snapshot, which still restores to its state, and the FSM goes
// on applying.
func TestSnapshotWriteFailureKeepsPrevious(t *testing.T) {
	for _, c := range []struct {
		name      string
		failAfter int // bytes accepted before the sink fails
	}{
		{"at the first byte", 0},
		{"in the head", 4},
		{"at the start of the namespace", -1}, // -1: right after the head
		{"in the middle of the namespace", 40 << 10},
		{"one byte short", -2}, // -2: the whole snapshot but its last byte
	} {
		t.Run(c.name, func(t *testing.T) {
			store, err := raft.NewFileSnapshotStoreWithLogger(t.TempDir(), 3, hclog.NewNullLogger())
			if err != nil {
				t.Fatal(err)
			}
			f := New(Config{Superuser: "root", Supergroup: "supergroup"})
			var idx uint64
			fillFSM(t, f, &idx, "/a", 600)
			good := liveHash(f)
			persist := func(failAfter int) error {
				snap, err := f.Snapshot()
				if err != nil {
					t.Fatal(err)
				}
				defer snap.Release()
				sink, err := store.Create(raft.SnapshotVersionMax, idx, 1, raft.Configuration{}, 1, nil)
				if err != nil {
					t.Fatal(err)
				}
				if failAfter < 0 {
					return snap.Persist(sink)
				}
				return snap.Persist(&failingSink{SnapshotSink: sink, failAfter: failAfter})
			}
			if err := persist(-1); err != nil {
				t.Fatal(err)
			}
			fillFSM(t, f, &idx, "/b", 100)
			later := liveHash(f)
			failAfter := c.failAfter
			if failAfter < 0 {
				s, _ := f.Snapshot()
				full := snapshotBytes(t, s)
				failAfter = len(full) - 1
				if c.failAfter == -1 {
					failAfter = len(s.(*fsmSnapshot).head)
				}
			}
			err = persist(failAfter)
			if err == nil || !errs.Is(err, errs.IO) && !bytes.Contains([]byte(err.Error()), []byte("no space")) {
				t.Fatalf("Persist to a failing sink: %v, want the sink's error", err)
			}
			metas, err := store.List()
			if err != nil {
				t.Fatal(err)
			}
			if len(metas) != 1 {
				t.Fatalf("store lists %d snapshots after a failed one, want the previous 1", len(metas))
			}
			_, rc, err := store.Open(metas[0].ID)
			if err != nil {
				t.Fatal(err)
			}
			g := New(Config{Superuser: "root", Supergroup: "supergroup"})
			if err := g.Restore(rc); err != nil {
				t.Fatal(err)
			}
			if liveHash(g) != good {
				t.Fatal("the previous snapshot no longer restores to its state")
			}
			if liveHash(f) != later {
				t.Fatal("a failed snapshot changed the live state")
			}
			fillFSM(t, f, &idx, "/c", 10) // still applying
			if liveHash(f) == later {
				t.Fatal("the FSM stopped applying after a failed snapshot")
			}
		})
	}
}

// TestRestoreRefusesDamagedSnapshot: a truncated or corrupt snapshot is
// refused and the FSM keeps its state and applied index.
func TestRestoreRefusesDamagedSnapshot(t *testing.T) {
	src, img := filledImage(t, "/src", 300)
	idx := src.AppliedIndex()
	flip := func(off int) []byte {
		b := bytes.Clone(img)
		b[off] ^= 0x10
		return b
	}
	for _, c := range []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"magic only", img[:len(snapshotMagic)]},
		{"truncated in the head", img[:20]},
		{"truncated in the namespace", img[:len(img)/2]},
		{"last byte missing", img[:len(img)-1]},
		{"bit flipped in the namespace", flip(len(img) / 2)},
		{"bit flipped in the trailer", flip(len(img) - 1)},
		{"trailing garbage", append(bytes.Clone(img), 0)},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := New(Config{Superuser: "root", Supergroup: "supergroup"})
			var fidx uint64
			fillFSM(t, f, &fidx, "/mine", 50)
			before, applied := liveHash(f), f.AppliedIndex()
			err := f.Restore(io.NopCloser(bytes.NewReader(c.data)))
			if err == nil {
				t.Fatal("a damaged snapshot was restored")
			}
			if k := errs.KindOf(err); k != errs.Corrupt {
				t.Fatalf("error kind %v (%v), want Corrupt", k, err)
			}
			if liveHash(f) != before || f.AppliedIndex() != applied {
				t.Fatal("a refused restore changed the state")
			}
		})
	}
	// The undamaged image restores, to the source's hash.
	g := New(Config{Superuser: "root", Supergroup: "supergroup"})
	if err := g.Restore(io.NopCloser(bytes.NewReader(img))); err != nil {
		t.Fatal(err)
	}
	if liveHash(g) != liveHash(src) || g.AppliedIndex() != idx {
		t.Fatal("restored state differs from the source")
	}
}

// TestSnapshotIsItsIndex: commands applied after Snapshot and before (or
// while) Persist runs are not in the snapshot: restoring it gives the state
// at the snapshot's index, and replaying the later commands gives the live
// state again.
func TestSnapshotIsItsIndex(t *testing.T) {
	f := New(Config{Superuser: "root", Supergroup: "supergroup"})
	var idx uint64
	fillFSM(t, f, &idx, "/a", 400)
	at := liveHash(f)
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	// Changes after the snapshot: more files in the same directories,
	// deletes and renames of ones the snapshot holds.
	fillFSM(t, f, &idx, "/a/d005", 420)
	root := &api.Caller{User: "root", ClientId: "c"}
	applyAt(t, f, &idx, CmdDelete, &api.DeleteCommand{Caller: root, Path: "/a/d001", Recursive: true})
	applyAt(t, f, &idx, CmdRename, &api.RenameCommand{Caller: root, Src: "/a/d002", Dst: "/z"})
	applyAt(t, f, &idx, CmdSetPermission, &api.SetPermissionCommand{Caller: root, Path: "/a", Perm: 0o700})
	img := snapshotBytes(t, snap)
	g := New(Config{Superuser: "root", Supergroup: "supergroup"})
	if err := g.Restore(io.NopCloser(bytes.NewReader(img))); err != nil {
		t.Fatal(err)
	}
	if liveHash(g) != at {
		t.Fatal("the snapshot holds changes applied after it was taken")
	}
	s2, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(t, s2)))); err != nil {
		t.Fatal(err)
	}
	if liveHash(g) != liveHash(f) {
		t.Fatal("a snapshot taken after the changes differs from the live state")
	}
}

// TestRestoreFromStoreRefusesDamage goes through a file snapshot store in
// a temp dir, as a restarting namenode or one installing a leader's
// snapshot does: a snapshot damaged on disk after it was written is
// refused by the store's own checksum, and one whose bytes were already
// damaged when they reached the sink (so the store's checksum matches) is
// refused by Restore; either way the FSM keeps its state.
func TestRestoreFromStoreRefusesDamage(t *testing.T) {
	src := New(Config{Superuser: "root", Supergroup: "supergroup"})
	var idx uint64
	fillFSM(t, src, &idx, "/src", 200)
	s, err := src.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	img := snapshotBytes(t, s)
	for _, c := range []struct {
		name string
		// write puts the snapshot into the store; it may damage it.
		write func(t *testing.T, dir string, sink raft.SnapshotSink)
		// storeRefuses: the store's checksum catches it before Restore.
		storeRefuses bool
	}{
		{"truncated on disk", func(t *testing.T, dir string, sink raft.SnapshotSink) {
			sink.Write(img)
			must(t, sink.Close())
			must(t, os.Truncate(filepath.Join(dir, "snapshots", sink.ID(), "state.bin"), int64(len(img)/2)))
		}, true},
		{"bit flipped on disk", func(t *testing.T, dir string, sink raft.SnapshotSink) {
			sink.Write(img)
			must(t, sink.Close())
			p := filepath.Join(dir, "snapshots", sink.ID(), "state.bin")
			b, err := os.ReadFile(p)
			must(t, err)
			b[len(b)/3] ^= 1
			must(t, os.WriteFile(p, b, 0o600))
		}, true},
		{"truncated before the sink", func(t *testing.T, dir string, sink raft.SnapshotSink) {
			sink.Write(img[:len(img)*2/3])
			must(t, sink.Close())
		}, false},
		{"bit flipped before the sink", func(t *testing.T, dir string, sink raft.SnapshotSink) {
			b := bytes.Clone(img)
			b[len(b)/3] ^= 1
			sink.Write(b)
			must(t, sink.Close())
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			store, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, hclog.NewNullLogger())
			must(t, err)
			sink, err := store.Create(raft.SnapshotVersionMax, idx, 1, raft.Configuration{}, 1, nil)
			must(t, err)
			c.write(t, dir, sink)

			f := New(Config{Superuser: "root", Supergroup: "supergroup"})
			var fidx uint64
			fillFSM(t, f, &fidx, "/mine", 20)
			before, applied := liveHash(f), f.AppliedIndex()
			metas, err := store.List()
			must(t, err)
			if len(metas) != 1 {
				t.Fatalf("store lists %d snapshots, want 1", len(metas))
			}
			_, rc, err := store.Open(metas[0].ID)
			if (err != nil) != c.storeRefuses {
				t.Fatalf("store.Open: %v, want refused %v", err, c.storeRefuses)
			}
			if err == nil {
				if err := f.Restore(rc); err == nil {
					t.Fatal("a damaged snapshot was restored")
				} else if errs.KindOf(err) != errs.Corrupt {
					t.Fatalf("Restore: %v, want Corrupt", err)
				}
			}
			if liveHash(f) != before || f.AppliedIndex() != applied {
				t.Fatal("a refused snapshot changed the state")
			}
		})
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// applyNamed applies n mkdirs under /named, each a named call (client
// "w", call ids from *call), so each lands in the retry cache.
func applyNamed(t testing.TB, f *FSM, idx, call *uint64, n int) {
	t.Helper()
	for range n {
		*call++
		c := &api.Caller{User: "root", ClientId: "w", CallId: *call}
		applyAt(t, f, idx, CmdMkdirs, &api.MkdirsCommand{Caller: c, Path: fmt.Sprintf("/named/d%03d/e%06d", *call/1000, *call), Perm: 0o755, Parents: true, MtimeUnixMs: int64(*call)})
	}
}

// TestSnapshotRetryCacheIsItsIndex: Persist marshals the retry cache after
// the lock is gone, from the entries the cache held when the snapshot was
// taken. Calls applied later, enough to evict every one of those entries,
// must not reach the snapshot, and the evicted ones must.
func TestSnapshotRetryCacheIsItsIndex(t *testing.T) {
	f := New(Config{Superuser: "root", Supergroup: "supergroup"})
	var idx, call uint64
	applyNamed(t, f, &idx, &call, 100)
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	applyNamed(t, f, &idx, &call, retryCacheSize+10)
	g := New(Config{Superuser: "root", Supergroup: "supergroup"})
	if err := g.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(t, snap)))); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		call uint64
		want bool
	}{{1, true}, {100, true}, {101, false}, {call, false}} {
		_, ok := g.st.retries.get(callKey{"root\x00w", tc.call})
		if ok != tc.want {
			t.Errorf("call %d in the restored retry cache: %v, want %v", tc.call, ok, tc.want)
		}
		if _, live := f.st.retries.get(callKey{"root\x00w", tc.call}); tc.call <= 100 && live {
			t.Errorf("call %d still in the live cache: the test evicted nothing", tc.call)
		}
	}
	if got := g.st.retries.n; got != 100 {
		t.Errorf("restored retry cache holds %d entries, want 100", got)
	}
}

// BenchmarkSnapshotTake is the time the FSM's write lock is held to take a
// snapshot (Snapshot, then Release) with a full retry cache and 100 files
// open for write: every write and read waits this long at every snapshot.
func BenchmarkSnapshotTake(b *testing.B) {
	f := New(Config{Superuser: "root", Supergroup: "supergroup"})
	var idx, call uint64
	applyNamed(b, f, &idx, &call, retryCacheSize)
	fillFSM(b, f, &idx, "/open", 100)
	b.ResetTimer()
	for b.Loop() {
		s, err := f.Snapshot()
		if err != nil {
			b.Fatal(err)
		}
		s.Release()
	}
}

// TestSnapshotBytesPinned pins the snapshot's bytes for a fixed state with
// a wrapped retry cache: every node must write the same bytes for the same
// state (docs/FORMATS.md), and a change to how a snapshot is taken must not
// change them. If the format changes on purpose, the magic changes too and
// this hash with it.
func TestSnapshotBytesPinned(t *testing.T) {
	f := New(Config{Superuser: "root", Supergroup: "supergroup"})
	var idx, call uint64
	fillFSM(t, f, &idx, "/p", 200)
	applyNamed(t, f, &idx, &call, retryCacheSize+500)
	for _, e := range pinnedAdminStates() {
		applyAt(t, f, &idx, CmdSetAdminState, &api.SetAdminStateCommand{Entries: []*api.AdminStateEntry{e}})
	}
	applyAt(t, f, &idx, CmdReserveIds, &api.ReserveIdsCommand{Count: 100, MtimeUnixMs: 1, ExpiresUnixMs: 1 + 3600*1000})
	if len(f.st.reserved.rs) != 1 {
		t.Fatal("the reservation was refused: the pinned state lacks its section")
	}
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	img := snapshotBytes(t, snap)
	const want = "a86c8778bdbb78ed67faa6ecf0d5e4c61d3d4132e1390ad947b1166c76d9b40e" // BFSNAP06 (PutFile's reservations) with namespace image version 4 (quotas)
	if got := fmt.Sprintf("%x", sha256.Sum256(img)); got != want {
		t.Fatalf("snapshot of %d bytes hashes to %s, want %s", len(img), got, want)
	}
}
