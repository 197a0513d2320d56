package fsm

import (
	"bufio"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/base/rwlock"
	"github.com/blockfs/blockfs/leases"
	"github.com/blockfs/blockfs/namespace"
)

// --- snapshots ---

// snapshotMagic starts every FSM snapshot; see docs/FORMATS.md.
// BFSNAP06 adds PutFile's id reservations after the spent nonces
// (reserve.go); BFSNAP05 added the datanode admin states after the deny
// list (admin.go); BFSNAP04 added the deny list after the keys
// (revoke.go); BFSNAP03 added the spent redirect nonces after the lease
// table; BFSNAP02 the lease table after the retry cache. Older snapshots
// still restore, with no reservations (and, before BFSNAP05, no admin
// states; before BFSNAP04, an empty deny list; before BFSNAP03, no spent
// nonces; from BFSNAP01, no leases).
const (
	snapshotMagic   = "BFSNAP06"
	snapshotMagicV5 = "BFSNAP05"
	snapshotMagicV4 = "BFSNAP04"
	snapshotMagicV3 = "BFSNAP03"
	snapshotMagicV2 = "BFSNAP02"
	snapshotMagicV1 = "BFSNAP01"
)

// Snapshot captures the state at the current index. It runs on the FSM
// goroutine, so no Apply runs beside it. Under the write lock it encodes
// the small sections (members, keys: a few hundred bytes) and the lease
// table (it lists only files open for write), freezes the retry cache
// (retryCache.frozen: 64 chunk pointers, copy-on-write) and opens a
// namespace.View, the namespace frozen by copy-on-write. Persist then
// marshals the retry cache and encodes the namespace from the view holding
// none of the FSM's locks, streaming to the sink: applies go on beside it,
// and no second copy of the image is ever in memory. Marshalling the full
// retry cache under the lock instead stalled every write and read at every
// snapshot (docs/OPERATIONS.md, "Measured figures behind design choices").
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var head, lease byteBuffer
	if err := writeSnapshotHead(&head, f.st, f.applied.Load()); err != nil {
		return nil, err
	}
	if _, err := f.st.leases.WriteTo(&lease); err != nil {
		return nil, err
	}
	if err := f.st.nonces.writeTo(&lease); err != nil {
		return nil, err
	}
	if err := f.st.reserved.writeTo(&lease); err != nil {
		return nil, err
	}
	return &fsmSnapshot{mu: &f.mu, head: head.b, retries: f.st.retries.frozen(), leases: lease.b, view: f.st.tree.View(), snaps: f.snaps}, nil
}

// Restore replaces the state with a snapshot: it reads into a fresh state
// and swaps it in only when the whole stream decoded.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	st, applied, err := readSnapshot(bufio.NewReaderSize(rc, 1<<16))
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.st = st
	f.publishRevoked()
	f.publishAdmin()
	// The block map expects exactly the restored blocks: those of the old
	// state that the snapshot lacks are forgotten, their replicas deleted.
	f.resetBlockEvents(st)
	f.applied.Store(applied)
	f.mu.Unlock()
	f.notifyApplied()
	// A snapshot installed from the leader went into the store by raft's
	// own sink, which does not reap (snapfiles.go): reap here too, so a
	// follower that only ever installs keeps two like any node.
	f.snaps.reap()
	return nil
}

// writeSnapshotHead writes the first sections of a snapshot: the header,
// the members, the keys, the deny list and the admin states. The retry cache, the lease table and the
// namespace image follow (fsmSnapshot.writeTo).
func writeSnapshotHead(w io.Writer, st *state, applied uint64) error {
	if _, err := io.WriteString(w, snapshotMagic); err != nil {
		return err
	}
	var idx [8]byte
	binary.LittleEndian.PutUint64(idx[:], applied)
	if _, err := w.Write(idx[:]); err != nil {
		return err
	}
	ids := make([]string, 0, len(st.members))
	for id := range st.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var hdr [4]byte
	binary.LittleEndian.PutUint32(hdr[:], uint32(len(ids)))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	for _, id := range ids {
		if err := writeFramed(w, st.members[id]); err != nil {
			return err
		}
	}
	if err := writeKeys(w, st.keys); err != nil {
		return err
	}
	if err := writeRevoked(w, st.revoked); err != nil {
		return err
	}
	return writeAdmin(w, st.admin)
}

// writeFramed writes m deterministically encoded, after its length as a
// u32 (docs/FORMATS.md: the members' and the deny list's records).
func writeFramed(w io.Writer, m proto.Message) error {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return err
	}
	var hdr [4]byte
	binary.LittleEndian.PutUint32(hdr[:], uint32(len(b)))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

func readSnapshot(r *bufio.Reader) (*state, uint64, error) {
	corrupt := func(msg string) error { return errs.New(errs.Corrupt, "fsm.FSM.Restore", "", msg) }
	magic := make([]byte, len(snapshotMagic))
	if _, err := io.ReadFull(r, magic); err != nil {
		return nil, 0, corrupt("bad magic")
	}
	version := 0
	switch string(magic) {
	case snapshotMagicV1:
		version = 1
	case snapshotMagicV2:
		version = 2
	case snapshotMagicV3:
		version = 3
	case snapshotMagicV4:
		version = 4
	case snapshotMagicV5:
		version = 5
	case snapshotMagic:
		version = 6
	default:
		return nil, 0, corrupt("bad magic")
	}
	var idx [8]byte
	if _, err := io.ReadFull(r, idx[:]); err != nil {
		return nil, 0, corrupt("truncated applied index")
	}
	applied := binary.LittleEndian.Uint64(idx[:])
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, 0, corrupt("truncated member count")
	}
	n := binary.LittleEndian.Uint32(hdr[:])
	if n > 1024 {
		return nil, 0, corrupt("implausible member count")
	}
	st := &state{members: make(map[string]*api.Member, n)}
	var err error
	for i := uint32(0); i < n; i++ {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return nil, 0, corrupt("truncated member")
		}
		size := binary.LittleEndian.Uint32(hdr[:])
		if size > 1<<16 {
			return nil, 0, corrupt("implausible member size")
		}
		b := make([]byte, size)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, 0, corrupt("truncated member")
		}
		m := &api.Member{}
		if err := proto.Unmarshal(b, m); err != nil {
			return nil, 0, corrupt("bad member: " + err.Error())
		}
		st.members[m.Id] = m
	}
	if st.keys, err = readKeys(r); err != nil {
		return nil, 0, err
	}
	st.revoked = map[string]*api.RevokedEntry{}
	if version >= 4 {
		if st.revoked, err = readRevoked(r); err != nil {
			return nil, 0, err
		}
	}
	st.admin = map[string]*api.AdminStateEntry{}
	if version >= 5 {
		if st.admin, err = readAdmin(r); err != nil {
			return nil, 0, err
		}
	}
	if st.retries, err = readRetryCache(r); err != nil {
		return nil, 0, err
	}
	st.leases = leases.New()
	if version >= 2 {
		if st.leases, err = leases.Read(r); err != nil {
			return nil, 0, err
		}
	}
	st.nonces = newSpentNonces()
	if version >= 3 {
		if st.nonces, err = readSpentNonces(r); err != nil {
			return nil, 0, err
		}
	}
	st.reserved = &reservations{}
	if version >= 6 {
		if st.reserved, err = readReservations(r); err != nil {
			return nil, 0, err
		}
	}
	tree, err := namespace.ReadImage(r)
	if err != nil {
		return nil, 0, err
	}
	st.tree = tree
	return st, applied, nil
}

type byteBuffer struct{ b []byte }

func (w *byteBuffer) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }

// fsmSnapshot is a snapshot taken and not yet released: its sections as
// they were at its index, and the view of the namespace it streams.
type fsmSnapshot struct {
	mu      *rwlock.Mutex
	head    []byte      // header, members, keys, deny list, admin states; encoded
	retries *retryCache // the retry cache, frozen; marshalled by writeTo
	leases  []byte      // the lease table, the spent nonces and the id reservations, encoded
	view    *namespace.View
	snaps   *SnapshotStore // the snapshot store, if known (snapfiles.go)
}

// Persist streams the snapshot to the sink. On any error it cancels the
// sink, so the store keeps its previous snapshots and drops this one; the
// FSM is untouched and goes on serving.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	state := s.snaps.stateFile(sink)
	w := newPersistWriter(sink, state)
	err := inBackground(func() error { return s.writeTo(w) }) // persist_linux.go
	if werr := w.close(); werr != nil && s.snaps != nil {
		s.snaps.log.Warn("snapshot write-back did not run; the store's final fsync writes the whole image", "err", werr)
	}
	if err != nil {
		sink.Cancel()
		return err
	}
	if err := sink.Close(); err != nil {
		// The store leaves the half-made directory; it is never listed.
		if state != "" {
			_ = os.RemoveAll(filepath.Dir(state))
		}
		return err
	}
	s.snaps.reap()
	return nil
}

// writeTo writes the whole snapshot to w. The namespace's view needs none
// of the FSM's locks: applies and reads run beside the encode.
func (s *fsmSnapshot) writeTo(w io.Writer) error {
	if _, err := w.Write(s.head); err != nil {
		return errs.Wrap(errs.IO, "fsm.FSM.Snapshot", "", err)
	}
	if err := writeRetryEntries(w, s.retries); err != nil {
		return errs.Wrap(errs.IO, "fsm.FSM.Snapshot", "", err)
	}
	if _, err := w.Write(s.leases); err != nil {
		return errs.Wrap(errs.IO, "fsm.FSM.Snapshot", "", err)
	}
	return s.view.Encode(w)
}

// Release closes the view, so the namespace stops keeping pre-images for it.
func (s *fsmSnapshot) Release() {
	s.mu.Lock()
	s.view.Close()
	s.mu.Unlock()
}
