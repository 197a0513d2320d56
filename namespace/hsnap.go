package namespace

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/blockfs/blockfs/errs"
)

// Namespace snapshots, HDFS's "snapshots" (not the namenode's Raft
// snapshots, which are the image of this tree: view.go, image.go).
//
// A superuser makes a directory snapshottable (AllowSnapshot); its owner
// may then take snapshots of it (CreateSnapshot), each a frozen copy of
// the directory's subtree as it was, readable under
// "<dir>/.snapshot/<name>" and never changed again. A snapshot is a copy
// of the subtree's inodes (96 bytes each, plus each directory's children
// chunks); the files' block lists are shared with the live files when
// they have two blocks or more, since block slices are copy-on-write
// (package comment). A file under construction is frozen at the length
// the namespace had recorded for it (an hflush updates it) and is closed
// in the snapshot; an empty last block being written is left out.
//
// Snapshot inodes carry hdrSnap, keep the ids of the live inodes they
// copy, are in neither the id nor the block index, and no mutation
// reaches them: resolve refuses any path through a snapshottable
// directory's ".snapshot" ("Modification on a read-only snapshot is
// disallowed") and ".snapshot" is a reserved name nowhere creatable;
// only the read operations (Stat, File, List, ContentSummary,
// QuotaUsage) resolve through it (resolveRead).
//
// Blocks: snapRefs counts, per block id, the snapshot files that list
// it. A live file that lets go of such a block (delete, overwrite,
// abandon, a recovery that drops it) moves it to held with the last
// generation stamp and replication it had, so the block map keeps
// expecting its replicas (ForEachBlock yields it; HeldBySnapshot tells the
// FSM not to forget it); DeleteSnapshot returns the blocks whose last
// reference it removed and that no live file has, for the caller to
// release. A snapshot file reads its blocks at their current generation
// stamp (a live append or pipeline recovery moves it), at the length it
// had in the snapshot.

// DotSnapshot is the reserved path component under which a snapshottable
// directory's snapshots appear.
const DotSnapshot = ".snapshot"

// ReadOnlySnapshot is the message of every write refused under a
// snapshottable directory's .snapshot (a Permission error), HDFS's
// SnapshotAccessControlException's: doors match it to name that exception.
const ReadOnlySnapshot = "Modification on a read-only snapshot is disallowed"

// MaxSnapshots is the most snapshots one directory may have (HDFS's
// default snapshot quota).
const MaxSnapshots = 65536

// snapDir is a snapshottable directory's snapshots. It is never changed
// once published: every change replaces the directory's snaps pointer
// (after touch), so an open View reads a consistent one.
type snapDir struct {
	snaps []snapshot // sorted by name
}

// snapshot is one namespace snapshot of a directory.
type snapshot struct {
	// root is the frozen copy of the directory: its name is the
	// snapshot's name and its mtime the time the snapshot was taken.
	root *inode
	// inodes is the number of inodes in the snapshot, root included.
	inodes int
}

// heldBlock is a block that only snapshots hold: the generation stamp,
// file and replication it had when the last live file let it go.
type heldBlock struct {
	gs    uint64
	inode ID
	repl  uint8
}

// snapDir returns the snapshots of directory n, nil unless snapshottable.
func (n *inode) snapDir() *snapDir {
	if n.ext == nil {
		return nil
	}
	return n.ext.snaps
}

// find returns the index of the snapshot called name, or where it would go.
func (sd *snapDir) find(name string) (int, bool) {
	return slices.BinarySearchFunc(sd.snaps, name, func(s snapshot, name string) int { return cmp.Compare(s.root.name, name) })
}

// enterDotSnapshot is walk's step into the ".snapshot" of n, found at at:
// for a read, a directory made for it whose children are n's snapshots;
// for anything else the refusal.
func (t *Tree) enterDotSnapshot(op, p string, n *inode, at string, read bool) (*inode, error) {
	sd := n.snapDir()
	if !read && sd != nil {
		return nil, errs.New(errs.Permission, op, p, ReadOnlySnapshot)
	}
	if !read {
		return nil, errs.Newf(errs.Invalid, op, p, "%q is a reserved name: %s is not a snapshottable directory", DotSnapshot, at)
	}
	dot := &inode{id: n.id, parent: n, name: DotSnapshot, og: n.og, mtime: n.mtime,
		hdr: hdr(0).withMode(uint32(n.mode())) | hdrDir | hdrSnap, ext: &inodeExt{}}
	for _, s := range sd.snaps {
		dot.ext.kids.push(s.root, 0)
	}
	return dot, nil
}

// reservedBelow refuses a path whose unresolved rest holds ".snapshot"
// (a name a mutation would create: reserved everywhere), or returns nil.
func reservedBelow(op, p, rest string) error {
	for comp := range components("/" + rest) {
		if comp == DotSnapshot {
			return errs.Newf(errs.Invalid, op, p, "%q is a reserved name", DotSnapshot)
		}
	}
	return nil
}

// snapshotStamps returns bs, blocks of a snapshot file, each with its
// current generation stamp: the live file's when one still has it, else
// the one it had when the last live file let it go. bs is not changed;
// a new slice is returned when a stamp differs.
func (t *Tree) snapshotStamps(bs []Block) []Block {
	var out []Block
	for i, b := range bs {
		gs := b.GenStamp
		if h, ok := t.held[b.ID]; ok {
			gs = h.gs
		} else if owner, ok := t.blocks.get(b.ID); ok {
			if lb, _, ok := t.blockOf(owner, b.ID); ok {
				gs = lb.GenStamp
			}
		}
		if gs != b.GenStamp {
			if out == nil {
				out = slices.Clone(bs)
			}
			out[i].GenStamp = gs
		}
	}
	if out == nil {
		return bs
	}
	return out
}

// blockOf returns block blockID of file id.
func (t *Tree) blockOf(id ID, blockID uint64) (Block, ID, bool) {
	f := t.inodes.get(id)
	if f == nil || f.dir() {
		return Block{}, 0, false
	}
	var one [1]Block
	for _, b := range f.blockList(&one) {
		if b.ID == blockID {
			return b, id, true
		}
	}
	return Block{}, 0, false
}

// dropBlock removes b, a block of live file f, from the block index; a
// block a snapshot still lists becomes held.
func (t *Tree) dropBlock(f *inode, b Block) {
	t.blocks.del(b.ID)
	if t.snapRefs[b.ID] > 0 {
		if t.held == nil {
			t.held = map[uint64]heldBlock{}
		}
		t.held[b.ID] = heldBlock{gs: b.GenStamp, inode: f.id, repl: f.repl()}
	}
}

// HeldBySnapshot reports whether a namespace snapshot lists block id: a
// live file that drops it must not have it deleted.
func (t *Tree) HeldBySnapshot(id uint64) bool { return t.snapRefs[id] > 0 }

// HeldBlocks returns the number of blocks only snapshots hold.
func (t *Tree) HeldBlocks() int { return len(t.held) }

// forEachHeld calls fn for every block only snapshots hold, by id.
func (t *Tree) forEachHeld(fn func(b Block, inode ID, replication uint32, complete bool)) {
	ids := make([]uint64, 0, len(t.held))
	for id := range t.held {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		h := t.held[id]
		fn(Block{ID: id, GenStamp: h.gs}, h.inode, uint32(h.repl), true)
	}
}

// freeze returns a frozen copy of n (and of everything below it) whose
// parent is parent, counting its inodes in *count and its blocks in
// t.snapRefs.
func (t *Tree) freeze(n, parent *inode, count *int) *inode {
	*count++
	c := &inode{}
	if n.dir() {
		c = newDir("", 0, nil, 0)
		ext := c.ext
		*c = *n
		c.ext = ext
		*ext = inodeExt{attrs: n.attrs()} // attrs are never changed in place
		for k := range n.kids().all() {
			ext.kids.push(t.freeze(k, c, count), 0)
		}
	} else {
		*c = *n
		c.ext = nil
		var one [1]Block
		bs := n.blockList(&one)
		var length uint64
		if n.state() == UnderConstruction && len(bs) > 0 && !committed(bs[len(bs)-1]) {
			bs = bs[:len(bs)-1] // the empty block being written: no bytes yet
		}
		for _, b := range bs {
			length += b.Length
			t.snapRefs[b.ID]++
		}
		c.hdr &^= hdrUC
		c.setInline(Block{})
		if len(bs) >= 2 {
			c.setBlocks(bs[:len(bs):len(bs)], length) // the live slice: copy-on-write, never written again
		} else {
			c.setBlocks(slices.Clone(bs), length)
		}
		if a := n.attrs(); a != nil {
			c.extForWrite().attrs = a // never changed in place: shared
		}
	}
	c.parent = parent
	c.hdr |= hdrSnap
	return c
}

// release takes the blocks of frozen inode n off t.snapRefs, appending to
// out each whose last reference it was and that only snapshots held.
func (t *Tree) release(n *inode, out []Block) []Block {
	if n.dir() {
		for k := range n.kids().all() {
			out = t.release(k, out)
		}
		return out
	}
	var one [1]Block
	for _, b := range n.blockList(&one) {
		if t.snapRefs[b.ID]--; t.snapRefs[b.ID] > 0 {
			continue
		}
		delete(t.snapRefs, b.ID)
		if h, ok := t.held[b.ID]; ok {
			delete(t.held, b.ID)
			out = append(out, Block{ID: b.ID, GenStamp: h.gs, Length: b.Length})
		}
	}
	return out
}

// SnapshottableDir is one row of GetSnapshottableDirListing.
type SnapshottableDir struct {
	Dir       FileInfo
	Snapshots int // how many it has
	Limit     int // how many it may have
}

// AllowSnapshot makes directory p snapshottable; one already is stays so.
// A directory above or below a snapshottable one may not be (HDFS refuses
// nested snapshottable directories). Only a superuser may.
func (s Session) AllowSnapshot(path Path) error {
	op, p, t := s.op, path.s, s.t
	n, err := s.snapTarget(path, true)
	if err != nil {
		return err
	}
	if n.snapDir() != nil {
		return nil
	}
	for _, d := range t.snapDirsSorted() {
		switch {
		case isAncestor(n, d):
			return errs.Newf(errs.Precondition, op, p, "Nested snapshottable directories not allowed: path=%s, the subdirectory %s is already a snapshottable directory.", p, pathOf(d))
		case isAncestor(d, n):
			return errs.Newf(errs.Precondition, op, p, "Nested snapshottable directories not allowed: path=%s, the ancestor %s is already a snapshottable directory.", p, pathOf(d))
		}
	}
	t.touch(n)
	n.extForWrite().snaps = &snapDir{}
	if t.snappable == nil {
		t.snappable = map[ID]*inode{}
	}
	t.snappable[n.id] = n
	return nil
}

// DisallowSnapshot makes directory p not snapshottable; one that is not
// stays so. A directory with snapshots is refused. Only a superuser may.
func (s Session) DisallowSnapshot(path Path) error {
	n, err := s.snapTarget(path, true)
	if err != nil {
		return err
	}
	sd := n.snapDir()
	if sd == nil {
		return nil
	}
	if len(sd.snaps) > 0 {
		return errs.Newf(errs.Precondition, s.op, path.s, "The directory %s has snapshot(s). Please redo the operation after removing all the snapshots.", path.s)
	}
	s.t.touch(n)
	n.ext.snaps = nil
	delete(s.t.snappable, n.id)
	return nil
}

// CreateSnapshot takes a snapshot of directory p called name (empty: "s"
// and the time, as HDFS names one) at time mtimeMs and returns its path,
// p/.snapshot/name. The directory must be snapshottable; the caller must
// own it or be a superuser.
func (s Session) CreateSnapshot(path Path, name string, mtimeMs int64) (string, error) {
	op, p, t := s.op, path.s, s.t
	n, sd, err := s.snapOwned(path)
	if err != nil {
		return "", err
	}
	if name == "" {
		name = "s" + time.UnixMilli(mtimeMs).UTC().Format("20060102-150405.000")
	}
	if err := t.checkSnapshotName(op, p, name); err != nil {
		return "", err
	}
	at, dup := sd.find(name)
	switch {
	case dup:
		return "", errs.Newf(errs.Exist, op, p, "Failed to add snapshot: there is already a snapshot with the same name %q.", name)
	case len(sd.snaps) >= MaxSnapshots:
		return "", errs.Newf(errs.Exhausted, op, p, "Failed to add snapshot: there are already %d snapshot(s) and the snapshot quota is %d", len(sd.snaps), MaxSnapshots)
	}
	if t.snapRefs == nil {
		t.snapRefs = map[uint64]int32{}
	}
	var count int
	root := t.freeze(n, n, &count)
	root.name, root.mtime = strings.Clone(name), mtimeMs
	t.touch(n)
	n.ext.snaps = &snapDir{snaps: slices.Insert(slices.Clone(sd.snaps), at, snapshot{root: root, inodes: count})}
	return joinPath(p, DotSnapshot+"/"+name), nil
}

// DeleteSnapshot deletes snapshot name of directory p and returns the
// blocks no snapshot and no live file holds any more, for the caller to
// release. The caller must own the directory or be a superuser.
func (s Session) DeleteSnapshot(path Path, name string) ([]Block, error) {
	n, sd, err := s.snapOwned(path)
	if err != nil {
		return nil, err
	}
	at, ok := sd.find(name)
	if !ok {
		return nil, errs.Newf(errs.NotFound, s.op, path.s, "Cannot delete snapshot %s from path %s: the snapshot does not exist.", name, path.s)
	}
	released := s.t.release(sd.snaps[at].root, nil)
	s.t.touch(n)
	n.ext.snaps = &snapDir{snaps: slices.Delete(slices.Clone(sd.snaps), at, at+1)}
	return released, nil
}

// RenameSnapshot renames snapshot from of directory p to to. The caller
// must own the directory or be a superuser.
func (s Session) RenameSnapshot(path Path, from, to string) error {
	op, p, t := s.op, path.s, s.t
	n, sd, err := s.snapOwned(path)
	if err != nil {
		return err
	}
	at, ok := sd.find(from)
	switch {
	case !ok:
		return errs.Newf(errs.NotFound, op, p, "The snapshot %s does not exist for directory %s", from, p)
	case from == to:
		return nil
	}
	if err := t.checkSnapshotName(op, p, to); err != nil {
		return err
	}
	if _, dup := sd.find(to); dup {
		return errs.Newf(errs.Exist, op, p, "The snapshot %s already exists for directory %s", to, p)
	}
	snaps := slices.Delete(slices.Clone(sd.snaps), at, at+1)
	old := sd.snaps[at]
	root := *old.root // a new root: the old one may be held by a reader or a view
	root.name = strings.Clone(to)
	to2, _ := (&snapDir{snaps: snaps}).find(to)
	t.touch(n)
	n.ext.snaps = &snapDir{snaps: slices.Insert(snaps, to2, snapshot{root: &root, inodes: old.inodes})}
	return nil
}

// SnapshottableDirs lists the snapshottable directories the caller may
// see (a superuser: all; anyone else: those they own), by path.
func (s Session) SnapshottableDirs() []SnapshottableDir {
	var out []SnapshottableDir
	for _, d := range s.t.snapDirsSorted() {
		if s.c != nil && !s.c.Super && s.c.User != d.og.owner {
			continue
		}
		out = append(out, SnapshottableDir{Dir: d.info(pathOf(d)), Snapshots: len(d.snapDir().snaps), Limit: MaxSnapshots})
	}
	return out
}

// snapDirsSorted returns the snapshottable directories by path.
func (t *Tree) snapDirsSorted() []*inode {
	out := make([]*inode, 0, len(t.snappable))
	paths := make(map[*inode]string, len(t.snappable))
	for _, d := range t.snappable {
		out = append(out, d)
		paths[d] = pathOf(d)
	}
	slices.SortFunc(out, func(a, b *inode) int { return cmp.Compare(paths[a], paths[b]) })
	return out
}

// isAncestor reports whether a is a proper ancestor of n.
func isAncestor(a, n *inode) bool {
	for p := n.parent; p != nil; p = p.parent {
		if p == a {
			return true
		}
	}
	return false
}

// checkNoSnapshots refuses to delete or move away n, found at p, when n
// or a directory below it is snapshottable and has snapshots (HDFS).
func (t *Tree) checkNoSnapshots(op, p string, n *inode) error {
	if len(t.snappable) == 0 || !n.dir() {
		return nil
	}
	for _, d := range t.snapDirsSorted() {
		if len(d.snapDir().snaps) > 0 && (d == n || isAncestor(n, d)) {
			return errs.Newf(errs.Precondition, op, p, "The directory %s cannot be deleted since %s is snapshottable and already has snapshots", p, pathOf(d))
		}
	}
	return nil
}

// snapTarget resolves directory p for AllowSnapshot and DisallowSnapshot
// (super: only a superuser may) and the snapshot operations.
func (s Session) snapTarget(path Path, super bool) (*inode, error) {
	op, p := s.op, path.s
	if super && s.c != nil && !s.c.Super {
		return nil, errs.Newf(errs.Permission, op, p, "Access denied for user %s. Superuser privilege is required", s.c.User)
	}
	n, err := s.t.lookupAs(s.c, op, path)
	if err != nil {
		return nil, err
	}
	if !n.dir() {
		return nil, errs.Newf(errs.NotDir, op, p, "Path is not a directory: %s", p)
	}
	return n, nil
}

// snapOwned resolves snapshottable directory p, which the caller must own
// (or be a superuser), and returns its snapshots.
func (s Session) snapOwned(path Path) (*inode, *snapDir, error) {
	n, err := s.snapTarget(path, false)
	if err != nil {
		return nil, nil, err
	}
	if err := s.c.checkOwner(s.op, path.s, n); err != nil {
		return nil, nil, err
	}
	sd := n.snapDir()
	if sd == nil {
		return nil, nil, errs.Newf(errs.Precondition, s.op, path.s, "Directory is not a snapshottable directory: %s", path.s)
	}
	return n, sd, nil
}

// checkSnapshotName refuses a name that could not be a path component.
func (t *Tree) checkSnapshotName(op, p, name string) error {
	switch {
	case strings.IndexByte(name, '/') >= 0:
		return errs.Newf(errs.Invalid, op, p, "Snapshot name cannot contain %q: %q", "/", name)
	case name == DotSnapshot:
		return errs.Newf(errs.Invalid, op, p, "%q is a reserved name.", DotSnapshot)
	case strings.IndexByte(name, 0) >= 0:
		return errs.New(errs.Invalid, op, p, "snapshot name contains a NUL byte")
	}
	if msg := checkComponent(name, t.lim); msg != "" {
		return errs.New(errs.Invalid, op, p, "snapshot name: "+msg)
	}
	return nil
}
