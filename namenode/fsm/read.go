package fsm

import (
	"crypto/sha256"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/leases"
	"github.com/blockfs/blockfs/namespace"
)

// View runs fn with a Reader of the state under the FSM's read lock: every
// read fn makes sees one applied index. Applies wait until fn returns, so
// fn must be quick and must not propose, wait for an index, or call View
// or another FSM method that takes the lock.
func (f *FSM) View(fn func(Reader)) {
	defer f.mu.RLock().RUnlock()
	fn(Reader{f: f})
}

// Reader reads the state inside View. It is valid only during the call of
// the function it was given to and must not be kept; what it returns is
// read only (slices of blocks may be shared with the state).
type Reader struct{ f *FSM }

// As returns the read session of caller c for op (nil: the namenode
// itself, which passes every check). A caller without a user name is
// refused, with op and p in the error; the session's errors name op.
func (r Reader) As(c *api.Caller, op, p string) (ReadSession, error) {
	s, err := r.f.as(c, op, p)
	return ReadSession{s}, err
}

// AsUser is As for a read by user with groups, building the namespace
// caller in *nc, which the reader provides so that the session needs no
// heap allocation (GetBlockLocations' hot path).
func (r Reader) AsUser(nc *namespace.Caller, user string, groups []string, op, p string) (ReadSession, error) {
	s, err := r.f.asIn(nc, user, groups, "", op, p)
	return ReadSession{s}, err
}

// Stat stats p as the namenode itself (no permission checks).
func (r Reader) Stat(p namespace.Path) (namespace.FileInfo, error) { return r.f.st.tree.Stat(p) }

// FileByID returns file id and its blocks.
func (r Reader) FileByID(id namespace.ID) (namespace.FileInfo, []namespace.Block, bool) {
	return r.f.st.tree.FileByID(id)
}

// Block returns the block with this id and the file holding it.
func (r Reader) Block(id uint64) (namespace.Block, namespace.ID, bool) { return r.f.st.tree.Block(id) }

// Recovering returns the recovery in progress of file id, if any.
func (r Reader) Recovering(id namespace.ID) (leases.Recovery, bool) {
	return r.f.st.leases.Recovering(id)
}

// Recoveries returns every recovery in progress, by file.
func (r Reader) Recoveries() map[namespace.ID]leases.Recovery { return r.f.st.leases.Recoveries() }

// Holders returns the lease holders with their files.
func (r Reader) Holders() []leases.Holder { return r.f.st.leases.Holders() }

// ReadSession is a caller's read-only session on the namespace: every read
// checks the caller's permissions on the inodes it resolves.
type ReadSession struct{ s namespace.Session }

// Stat returns p's FileInfo.
func (s ReadSession) Stat(p namespace.Path) (namespace.FileInfo, error) { return s.s.Stat(p) }

// List returns up to limit entries of directory p after startAfter, and
// whether more follow.
func (s ReadSession) List(p namespace.Path, startAfter string, limit int) ([]namespace.FileInfo, bool, error) {
	return s.s.List(p, startAfter, limit)
}

// FileInto returns file p and its blocks in one walk; a file of one block
// returns it in *one (no allocation). The blocks are read only, and valid
// only inside View.
func (s ReadSession) FileInto(p namespace.Path, one *[1]namespace.Block) (namespace.FileInfo, []namespace.Block, error) {
	return s.s.FileInto(p, one)
}

// ContentSummary returns p's content summary (HDFS's getContentSummary:
// a walk of p's tree).
func (s ReadSession) ContentSummary(p namespace.Path) (*api.ContentSummary, error) {
	cs, err := s.s.ContentSummary(p)
	if err != nil {
		return nil, err
	}
	return &api.ContentSummary{
		Length: cs.Length, FileCount: cs.FileCount, DirectoryCount: cs.DirectoryCount,
		Quota: cs.Quota, SpaceConsumed: cs.SpaceConsumed, SpaceQuota: cs.SpaceQuota,
	}, nil
}

// QuotaUsage returns p's quota usage (HDFS's getQuotaUsage: no walk when
// p has a quota).
func (s ReadSession) QuotaUsage(p namespace.Path) (*api.QuotaUsage, error) {
	qu, err := s.s.QuotaUsage(p)
	if err != nil {
		return nil, err
	}
	return &api.QuotaUsage{
		FileAndDirectoryCount: qu.FileAndDirectoryCount, Quota: qu.Quota,
		SpaceConsumed: qu.SpaceConsumed, SpaceQuota: qu.SpaceQuota,
	}, nil
}

// ContentSummary returns the content summary of path as caller c for op,
// under the read lock (HDFS's getContentSummary: a walk of its tree).
func (f *FSM) ContentSummary(c *api.Caller, op, path string) (cs *api.ContentSummary, err error) {
	err = f.readPath(c, op, path, func(s ReadSession, p namespace.Path) (err error) {
		cs, err = s.ContentSummary(p)
		return err
	})
	return cs, err
}

// QuotaUsage returns the quota usage of path as caller c for op, under
// the read lock.
func (f *FSM) QuotaUsage(c *api.Caller, op, path string) (qu *api.QuotaUsage, err error) {
	err = f.readPath(c, op, path, func(s ReadSession, p namespace.Path) (err error) {
		qu, err = s.QuotaUsage(p)
		return err
	})
	return qu, err
}

// readPath parses path and runs fn on caller c's read session for op,
// under the read lock.
func (f *FSM) readPath(c *api.Caller, op, path string, fn func(ReadSession, namespace.Path) error) error {
	p, err := namespace.ParsePath(path)
	if err != nil {
		return errs.WithOp(err, op)
	}
	defer f.mu.RLock().RUnlock()
	s, err := Reader{f: f}.As(c, op, path)
	if err != nil {
		return err
	}
	return fn(s, p)
}

// Member returns member id (shared: the caller must not change it).
func (f *FSM) Member(id string) (*api.Member, bool) {
	defer f.mu.RLock().RUnlock()
	m, ok := f.st.members[id]
	return m, ok
}

// Members returns the member table, a copy of the map whose entries are
// shared (the caller must not change them).
func (f *FSM) Members() map[string]*api.Member {
	defer f.mu.RLock().RUnlock()
	out := make(map[string]*api.Member, len(f.st.members))
	for id, m := range f.st.members {
		out[id] = m
	}
	return out
}

// Counts are the sizes of the replicated state.
type Counts struct {
	Files, Directories, Blocks int
	// LeaseHolders are clients holding a lease, on FilesUnderConstruction
	// files; Recoveries are block recoveries started and not committed.
	LeaseHolders, FilesUnderConstruction, Recoveries int
}

// Counts returns the state's sizes at one index.
func (f *FSM) Counts() Counts {
	defer f.mu.RLock().RUnlock()
	var c Counts
	c.Files, c.Directories, c.Blocks = f.st.tree.Counts()
	c.LeaseHolders, c.FilesUnderConstruction, c.Recoveries = f.st.leases.Counts()
	return c
}

// Hash is a digest of the replicated namespace: the tree's, the lease
// table's when any file is open for write or being recovered, and the
// deny list's and the admin-state table's when they are not empty. Namenodes at the same applied index
// have the same Hash.
func (f *FSM) Hash() [32]byte {
	_, h := f.HashAt()
	return h
}

// HashAt is Hash with the applied index of the state it digests, taken
// together under the lock: two namenodes that answer one index with
// different hashes have diverged.
func (f *FSM) HashAt() (uint64, [32]byte) {
	defer f.mu.RLock().RUnlock()
	return f.applied.Load(), f.hashLocked()
}

func (f *FSM) hashLocked() [32]byte {
	h := f.st.tree.Hash()
	if _, files, recs := f.st.leases.Counts(); files != 0 || recs != 0 {
		l := f.st.leases.Hash()
		h = sha256.Sum256(append(h[:], l[:]...))
	}
	if len(f.st.revoked) != 0 {
		r := revokedHash(f.st.revoked)
		h = sha256.Sum256(append(h[:], r[:]...))
	}
	if len(f.st.admin) != 0 {
		a := adminHash(f.st.admin)
		h = sha256.Sum256(append(h[:], a[:]...))
	}
	return h
}

// CommittedCRC returns the CRC32C the namespace recorded for block blockID
// at generation stamp genStamp, if it has one.
func (f *FSM) CommittedCRC(blockID, genStamp uint64) (uint32, bool) {
	defer f.mu.RLock().RUnlock()
	b, _, ok := f.st.tree.Block(blockID)
	if !ok || b.GenStamp != genStamp || !b.HasCRC {
		return 0, false
	}
	return b.CRC, true
}

// FileOfBlock returns the path and inode id of the file holding block id
// (HDFS's clients name only the block in their pipeline calls), under the
// read lock; ok is false when no file holds it.
func (f *FSM) FileOfBlock(id uint64) (path string, inode uint64, ok bool) {
	f.View(func(r Reader) {
		var ino namespace.ID
		if _, ino, ok = r.Block(id); !ok {
			return
		}
		var fi namespace.FileInfo
		if fi, _, ok = r.FileByID(ino); ok {
			path, inode = fi.Path, uint64(ino)
		}
	})
	return path, inode, ok
}

// FileBlocks returns the path and blocks (id, generation stamp, length
// as recorded) of file inode, under the read lock; ok is false when there
// is no such file. HDFS's writers name only a file's last block in
// complete and fsync; the door takes the others from here, not from a
// GetBlockLocations that would need read permission and sign tokens.
func (f *FSM) FileBlocks(inode uint64) (path string, blocks []*api.Block, ok bool) {
	f.View(func(r Reader) {
		fi, bs, found := r.FileByID(namespace.ID(inode))
		if !found || fi.IsDir {
			return
		}
		path, ok = fi.Path, true
		blocks = make([]*api.Block, len(bs))
		for i, b := range bs {
			blocks[i] = &api.Block{Id: b.ID, GenStamp: b.GenStamp, Length: b.Length}
		}
	})
	return path, blocks, ok
}
