package namenode

import (
	"bufio"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/rwlock"
	"github.com/blockfs/blockfs/leases"
	"github.com/blockfs/blockfs/namespace"
)

// blockEvents is told about block changes the FSM applies, so the block map
// (soft state, outside Raft) knows which blocks exist. Called with the FSM's
// write lock held: implementations must not call back into the FSM.
type blockEvents interface {
	// Expect says a block exists with this replication; complete once its
	// file is complete.
	Expect(b namespace.Block, inode namespace.ID, replication uint32, complete bool)
	// Forget says the blocks are gone (deleted, overwritten or abandoned).
	Forget(bs []namespace.Block)
}

// state is everything the FSM replicates.
type state struct {
	tree    *namespace.Tree
	members map[string]*api.Member
	// keys are the published token-signing public keys by kid, each in
	// security.PublicKey binary encoding.
	keys map[string][]byte
	// retries answers retried calls (retrycache.go).
	retries *retryCache
	// leases are the writers' leases and the recoveries in progress.
	leases *leases.Table
}

func newState(superuser, supergroup string) *state {
	return &state{
		tree:    namespace.New(namespace.DefaultLimits(), superuser, supergroup),
		members: map[string]*api.Member{},
		keys:    map[string][]byte{},
		retries: newRetryCache(),
		leases:  leases.New(),
	}
}

// fsm is the Raft state machine. Readers take mu.RLock; Apply takes mu.Lock
// once per batch.
type fsm struct {
	mu         rwlock.Mutex
	st         *state
	superuser  string
	supergroup string
	events     blockEvents
	metrics    *metrics

	// snaps is the node's snapshot store, for Persist to write its file
	// back as it goes and reap old snapshots (snapfiles.go); nil when the
	// FSM runs without one (tests).
	snaps *snapshotFiles

	applied atomic.Uint64
	// keysVersion changes whenever the published key set does.
	keysVersion atomic.Uint64
	// appliedCh is closed and replaced after every applied batch, waking
	// readers that wait for an index.
	chMu      sync.Mutex
	appliedCh chan struct{}
}

func newFSM(superuser, supergroup string, ev blockEvents, m *metrics) *fsm {
	return &fsm{
		st:         newState(superuser, supergroup),
		superuser:  superuser,
		supergroup: supergroup,
		events:     ev,
		metrics:    m,
		appliedCh:  make(chan struct{}),
	}
}

var _ raft.BatchingFSM = (*fsm)(nil)

// Apply applies one log entry.
func (f *fsm) Apply(l *raft.Log) any {
	return f.ApplyBatch([]*raft.Log{l})[0]
}

// ApplyBatch applies a batch of log entries under one lock acquisition.
func (f *fsm) ApplyBatch(logs []*raft.Log) []any {
	start := time.Now()
	out := make([]any, len(logs))
	var last uint64
	f.mu.Lock()
	for i, l := range logs {
		last = l.Index
		if l.Type != raft.LogCommand {
			continue
		}
		out[i] = f.applyEntry(l.Data)
	}
	f.mu.Unlock()
	if last > 0 {
		f.setApplied(last)
	}
	if f.metrics != nil {
		f.metrics.fsmApply.Observe(time.Since(start).Seconds())
		f.metrics.fsmBatch.Observe(float64(len(logs)))
	}
	return out
}

func (f *fsm) setApplied(idx uint64) {
	f.applied.Store(idx)
	f.chMu.Lock()
	close(f.appliedCh)
	f.appliedCh = make(chan struct{})
	f.chMu.Unlock()
}

// appliedIndex returns the last applied index.
func (f *fsm) appliedIndex() uint64 { return f.applied.Load() }

// waitApplied blocks until index idx is applied or done is closed.
func (f *fsm) waitApplied(done <-chan struct{}, idx uint64) bool {
	for {
		f.chMu.Lock()
		ch := f.appliedCh
		f.chMu.Unlock()
		if f.applied.Load() >= idx {
			return true
		}
		select {
		case <-ch:
		case <-done:
			return f.applied.Load() >= idx
		}
	}
}

// batchResult is the FSM's answer to a cmdBatch entry: one result per
// command, in order.
type batchResult []*api.CommandResult

// applyEntry applies one log entry: a single command or a batch.
func (f *fsm) applyEntry(data []byte) any {
	if len(data) == 0 || cmdType(data[0]) != cmdBatch {
		return f.applyOne(data)
	}
	_, msg, err := decodeCommand(data)
	if err != nil {
		return resultError(err)
	}
	cmds := msg.(*api.BatchCommand).Commands
	out := make(batchResult, len(cmds))
	for i, c := range cmds {
		out[i] = f.applyOne(c)
	}
	return out
}

// applyOne decodes and applies one command. Errors are results, never
// panics: a bad command must not stop the state machine.
func (f *fsm) applyOne(data []byte) *api.CommandResult {
	t, msg, err := decodeCommand(data)
	if err != nil {
		return resultError(err)
	}
	if t == cmdBatch {
		return resultError(errs.New(errs.Invalid, "fsm", "", "batches do not nest"))
	}
	var key callKey
	named := false
	if c, ok := msg.(interface{ GetCaller() *api.Caller }); ok {
		if key, named = keyOf(c.GetCaller()); named {
			if prev, ok := f.st.retries.get(key); ok {
				return prev
			}
		}
	}
	res, err := f.dispatch(t, msg)
	if err != nil {
		res = resultError(err)
	} else if res == nil {
		res = &api.CommandResult{}
	}
	if named {
		f.st.retries.put(key, res)
	}
	return res
}

func (f *fsm) dispatch(t cmdType, msg proto.Message) (*api.CommandResult, error) {
	switch t {
	case cmdMkdirs:
		return f.applyMkdirs(msg.(*api.MkdirsCommand))
	case cmdCreate:
		return f.applyCreate(msg.(*api.CreateCommand))
	case cmdAddBlock:
		return f.applyAddBlock(msg.(*api.AddBlockCommand))
	case cmdComplete:
		return f.applyComplete(msg.(*api.CompleteCommand))
	case cmdAbandonBlock:
		return f.applyAbandonBlock(msg.(*api.AbandonBlockCommand))
	case cmdDelete:
		return f.applyDelete(msg.(*api.DeleteCommand))
	case cmdAppend:
		c := msg.(*api.AppendCommand)
		s, p, err := f.asPath(c.Caller, "Append", c.Path)
		if err != nil {
			return nil, err
		}
		if err := f.guardUnderConstruction(c.Caller, s, p, c.MtimeUnixMs, c.SoftLimitMs); err != nil {
			return nil, err
		}
		var fi namespace.FileInfo
		var reopened *namespace.Block
		if c.NewBlock {
			fi, err = s.Append(p, c.MtimeUnixMs)
		} else {
			// The stamp is taken only if the block is reopened.
			fi, reopened, err = s.AppendLast(p, f.st.tree.NextGenStamp(), c.MtimeUnixMs)
		}
		if err != nil {
			return nil, err
		}
		f.st.leases.Add(fi.ID, writerOf(c.Caller), c.MtimeUnixMs)
		_, bs, _ := f.st.tree.FileByID(fi.ID)
		out := &api.CommandResult{Status: toFileStatus(fi), Blocks: make([]*api.Block, len(bs))}
		for i, b := range bs {
			out.Blocks[i] = toAPIBlock(b)
		}
		if reopened != nil {
			out.Block = toAPIBlock(*reopened)
			if f.events != nil {
				f.events.Expect(*reopened, fi.ID, fi.Replication, false)
			}
		}
		return out, nil
	case cmdRename:
		c := msg.(*api.RenameCommand)
		s, src, err := f.asPath(c.Caller, "Rename", c.Src)
		if err != nil {
			return nil, err
		}
		dst, err := namespace.ParsePath(c.Dst)
		if err != nil {
			return nil, errs.WithOp(err, "Rename")
		}
		return nil, s.Rename(src, dst, c.MtimeUnixMs)
	case cmdSetMember:
		m := proto.Clone(msg.(*api.SetMemberCommand).Member).(*api.Member)
		if m == nil || m.Id == "" {
			return nil, errs.New(errs.Invalid, "SetMember", "", "member id is required")
		}
		f.st.members[m.Id] = m
		return nil, nil
	case cmdRemoveMember:
		delete(f.st.members, msg.(*api.RemoveMemberCommand).Id)
		return nil, nil
	case cmdSetPermission:
		c := msg.(*api.SetPermissionCommand)
		s, p, err := f.asPath(c.Caller, "SetPermission", c.Path)
		if err != nil {
			return nil, err
		}
		return nil, s.SetPermission(p, c.Perm, c.MtimeUnixMs)
	case cmdSetOwner:
		c := msg.(*api.SetOwnerCommand)
		s, p, err := f.asPath(c.Caller, "SetOwner", c.Path)
		if err != nil {
			return nil, err
		}
		return nil, s.SetOwner(p, c.Owner, c.Group)
	case cmdRegisterKey:
		return nil, f.applyRegisterKey(msg.(*api.RegisterKeyCommand))
	case cmdPruneKeys:
		f.applyPruneKeys(msg.(*api.PruneKeysCommand))
		return nil, nil
	case cmdRenewLease:
		return f.applyRenewLease(msg.(*api.RenewLeaseCommand))
	case cmdRecoverLease:
		return f.applyRecoverLease(msg.(*api.RecoverLeaseCommand))
	case cmdCommitBlockSync:
		return f.applyCommitBlockSync(msg.(*api.CommitBlockSyncCommand))
	case cmdFsync:
		return f.applyFsync(msg.(*api.FsyncCommand))
	case cmdUpdateBlockForPipeline:
		return f.applyUpdateBlockForPipeline(msg.(*api.UpdateBlockForPipelineCommand))
	case cmdUpdatePipeline:
		return f.applyUpdatePipeline(msg.(*api.UpdatePipelineCommand))
	}
	return nil, errs.Newf(errs.Internal, "fsm", "", "command type %d has no handler", t)
}

// The handlers below run each namespace operation as the command's
// caller: the Session checks permissions on the inodes it resolves and
// changes nothing when a check fails. New inodes belong to the caller and
// take the group of their parent directory, as in HDFS.

func (f *fsm) applyMkdirs(c *api.MkdirsCommand) (*api.CommandResult, error) {
	s, p, err := f.asPath(c.Caller, "Mkdirs", c.Path)
	if err != nil {
		return nil, err
	}
	return nil, s.Mkdirs(p, namespace.MkdirsOpts{Perm: c.Perm, Parents: c.Parents, MtimeMs: c.MtimeUnixMs})
}

func (f *fsm) applyCreate(c *api.CreateCommand) (*api.CommandResult, error) {
	s, p, err := f.asPath(c.Caller, "Create", c.Path)
	if err != nil {
		return nil, err
	}
	fi, removed, err := s.Create(p, namespace.CreateOpts{
		Perm: c.Perm, Overwrite: c.Overwrite, CreateParent: c.CreateParent,
		Replication: c.Replication, BlockSize: c.BlockSize, MtimeMs: c.MtimeUnixMs,
		UnderConstruction: func(fi namespace.FileInfo) error {
			return f.checkTakeover(c.Caller, "Create", c.Path, fi.ID, fi.Writer, c.MtimeUnixMs, c.SoftLimitMs)
		},
	})
	if err != nil {
		return nil, err
	}
	f.forget(removed)
	if len(removed) > 0 {
		f.pruneLeases()
	}
	f.st.leases.Add(fi.ID, writerOf(c.Caller), c.MtimeUnixMs)
	return &api.CommandResult{Status: toFileStatus(fi)}, nil
}

// applyAddBlock allocates the next block for the file's writer. A writer
// retrying an AddBlock whose answer it lost gets the same block again
// (namespace.Session.AddBlock), not a second allocation.
func (f *fsm) applyAddBlock(c *api.AddBlockCommand) (*api.CommandResult, error) {
	if err := f.notRecovering("AddBlock", c.Path, c.InodeId); err != nil {
		return nil, err
	}
	s, p, err := f.asPath(c.Caller, "AddBlock", c.Path)
	if err != nil {
		return nil, err
	}
	var prev *namespace.Block
	if c.Previous != nil {
		b := fromAPIBlock(c.Previous)
		prev = &b
	}
	nb, err := s.AddBlock(p, namespace.ID(c.InodeId), prev, c.MtimeUnixMs)
	if err != nil {
		return nil, f.leaseError(err, c.Caller, namespace.ID(c.InodeId))
	}
	if !nb.Retried && f.events != nil {
		f.events.Expect(nb.Block, nb.File.ID, nb.File.Replication, false)
		if p, ok := f.events.(pipelineRecorder); ok {
			p.Pipeline(nb.Block, c.Targets)
		}
	}
	return &api.CommandResult{Block: toAPIBlock(nb.Block), Offset: nb.Offset, Status: toFileStatus(nb.File)}, nil
}

func (f *fsm) applyComplete(c *api.CompleteCommand) (*api.CommandResult, error) {
	if err := f.notRecovering("Complete", c.Path, c.InodeId); err != nil {
		return nil, err
	}
	s, p, err := f.asPath(c.Caller, "Complete", c.Path)
	if err != nil {
		return nil, err
	}
	bs := make([]namespace.Block, len(c.Blocks))
	for i, b := range c.Blocks {
		bs[i] = fromAPIBlock(b)
	}
	fi, err := s.Complete(p, namespace.ID(c.InodeId), bs, c.MtimeUnixMs)
	if err != nil {
		return nil, f.leaseError(err, c.Caller, namespace.ID(c.InodeId))
	}
	f.st.leases.Remove(fi.ID)
	if f.events != nil {
		for _, b := range bs {
			f.events.Expect(b, fi.ID, fi.Replication, true)
		}
	}
	return &api.CommandResult{Status: toFileStatus(fi)}, nil
}

func (f *fsm) applyAbandonBlock(c *api.AbandonBlockCommand) (*api.CommandResult, error) {
	if err := f.notRecovering("AbandonBlock", c.Path, c.InodeId); err != nil {
		return nil, err
	}
	s, p, err := f.asPath(c.Caller, "AbandonBlock", c.Path)
	if err != nil {
		return nil, err
	}
	b := fromAPIBlock(c.Block)
	if err := s.AbandonBlock(p, namespace.ID(c.InodeId), b); err != nil {
		return nil, err
	}
	f.forget([]namespace.Block{b})
	return nil, nil
}

func (f *fsm) applyDelete(c *api.DeleteCommand) (*api.CommandResult, error) {
	s, p, err := f.asPath(c.Caller, "Delete", c.Path)
	if err != nil {
		return nil, err
	}
	removed, err := s.Delete(p, c.Recursive, c.MtimeUnixMs)
	if err != nil {
		return nil, err
	}
	f.forget(removed)
	f.pruneLeases()
	out := &api.CommandResult{Removed: make([]*api.Block, len(removed))}
	for i, b := range removed {
		out.Removed[i] = toAPIBlock(b)
	}
	return out, nil
}

func (f *fsm) forget(bs []namespace.Block) {
	if f.events != nil && len(bs) > 0 {
		f.events.Forget(bs)
	}
}

// --- snapshots ---

// snapshotMagic starts every FSM snapshot; see docs/FORMATS.md.
// BFSNAP02 adds the lease table after the retry cache; BFSNAP01
// snapshots (no lease table) still restore, with no leases.
const (
	snapshotMagic   = "BFSNAP02"
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
// retry cache (16384 results) under the lock took 12 to 15 ms, a stall of
// every write and read at every snapshot.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var head, lease byteBuffer
	if err := writeSnapshotHead(&head, f.st, f.applied.Load()); err != nil {
		return nil, err
	}
	if _, err := f.st.leases.WriteTo(&lease); err != nil {
		return nil, err
	}
	return &fsmSnapshot{mu: &f.mu, head: head.b, retries: f.st.retries.frozen(), leases: lease.b, view: f.st.tree.View(), snaps: f.snaps}, nil
}

// Restore replaces the state with a snapshot: it reads into a fresh state
// and swaps it in only when the whole stream decoded.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	st, applied, err := readSnapshot(bufio.NewReaderSize(rc, 1<<16))
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.st = st
	// The block map expects exactly the restored blocks: those of the old
	// state that the snapshot lacks are forgotten, their replicas deleted.
	f.resetBlockEvents(st)
	f.mu.Unlock()
	f.setApplied(applied)
	// A snapshot installed from the leader went into the store by raft's
	// own sink, which does not reap (snapfiles.go): reap here too, so a
	// follower that only ever installs keeps two like any node.
	f.snaps.reap()
	return nil
}

// writeSnapshotHead writes the first sections of a snapshot: the header,
// the members and the keys. The retry cache, the lease table and the
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
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(st.members[id])
		if err != nil {
			return err
		}
		binary.LittleEndian.PutUint32(hdr[:], uint32(len(b)))
		if _, err := w.Write(hdr[:]); err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return writeKeys(w, st.keys)
}

func readSnapshot(r io.Reader) (*state, uint64, error) {
	corrupt := func(msg string) error { return errs.New(errs.Corrupt, "restore snapshot", "", msg) }
	magic := make([]byte, len(snapshotMagic))
	if _, err := io.ReadFull(r, magic); err != nil || (string(magic) != snapshotMagic && string(magic) != snapshotMagicV1) {
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
	if st.retries, err = readRetryCache(r); err != nil {
		return nil, 0, err
	}
	st.leases = leases.New()
	if string(magic) == snapshotMagic {
		if st.leases, err = leases.Read(r); err != nil {
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
	head    []byte      // header, members, keys; encoded
	retries *retryCache // the retry cache, frozen; marshalled by writeTo
	leases  []byte      // the lease table, encoded
	view    *namespace.View
	snaps   *snapshotFiles // the snapshot store, if known (snapfiles.go)
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
		return errs.Wrap(errs.IO, "snapshot", "", err)
	}
	if err := writeRetryEntries(w, s.retries); err != nil {
		return errs.Wrap(errs.IO, "snapshot", "", err)
	}
	if _, err := w.Write(s.leases); err != nil {
		return errs.Wrap(errs.IO, "snapshot", "", err)
	}
	return s.view.Encode(w)
}

// Release closes the view, so the namespace stops keeping pre-images for it.
func (s *fsmSnapshot) Release() {
	s.mu.Lock()
	s.view.Close()
	s.mu.Unlock()
}
