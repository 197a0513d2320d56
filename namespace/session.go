package namespace

import "github.com/blockfs/blockfs/errs"

// Session is the tree as one caller sees and changes it: every operation
// resolves its path once, checks the caller's permissions on the inodes
// it resolved (HDFS's FSPermissionChecker rules, docs/SECURITY.md), and
// only then changes anything, so a refused call leaves the tree as it was.
// A Session with a nil caller is the system: no checks. A Session is a
// small value; make one per operation with Tree.As. Its read methods
// follow the Tree's read-lock rules, its others the write-lock rules.
//
// A Session also carries the operation it serves: op is the Op of every
// error its methods return, so an error names the operation the client
// called (the RPC method, "GetBlockLocations"), not a layer below it.
type Session struct {
	t  *Tree
	c  *Caller
	op string
}

// As returns the session of caller c on t (nil c: the system) for
// operation op, the Op its errors carry (see package errs for the names).
func (t *Tree) As(c *Caller, op string) Session { return Session{t: t, c: c, op: op} }

// Op returns the operation the session serves.
func (s Session) Op() string { return s.op }

// Stat is Tree.Stat; the caller needs Exec on every ancestor of p.
func (s Session) Stat(p Path) (FileInfo, error) { return s.t.stat(s.c, s.op, p) }

// File is Tree.File; the caller needs Exec on every ancestor and Read on
// the file.
func (s Session) File(p Path) (FileInfo, []Block, error) { return s.t.file(s.c, s.op, p, nil) }

// FileInto is File for a caller done with the blocks before it releases
// the read lock (GetBlockLocations): a one-block file's block comes back
// in *one, not in a new slice, so the call allocates nothing for it.
func (s Session) FileInto(p Path, one *[1]Block) (FileInfo, []Block, error) {
	return s.t.file(s.c, s.op, p, one)
}

// List is Tree.List; the caller needs Exec on every ancestor and, for a
// directory, Read and Exec on it.
func (s Session) List(p Path, startAfter string, limit int) ([]FileInfo, bool, error) {
	return s.t.list(s.c, s.op, p, startAfter, limit)
}

// Mkdirs is Tree.Mkdirs; the caller needs Exec on every existing ancestor
// and Write on the last existing one (when anything is created). The new
// directories belong to the caller unless o.Owner says otherwise.
func (s Session) Mkdirs(p Path, o MkdirsOpts) error {
	if s.c != nil && o.Owner == "" {
		o.Owner = s.c.User
	}
	return s.t.mkdirs(s.c, s.op, p, o)
}

// Create is Tree.Create; the caller needs Exec on every existing ancestor
// and Write on the parent (the last existing ancestor with CreateParent);
// overwriting also needs Write on the old file and passing the parent's
// sticky bit. The file belongs to the caller unless o.Owner says
// otherwise, and records the caller (client id and user) as its writer.
func (s Session) Create(p Path, o CreateOpts) (FileInfo, []Block, error) {
	if s.c != nil && o.Owner == "" {
		o.Owner = s.c.User
	}
	return s.t.create(s.c, s.op, p, o)
}

// Delete is Tree.Delete; the caller needs Exec on every ancestor, Write on
// the parent, to pass the parent's sticky bit, and for a directory with
// contents rwx on every non-empty directory of the subtree.
func (s Session) Delete(p Path, recursive bool, mtimeMs int64) ([]Block, error) {
	return s.t.delete(s.c, s.op, p, recursive, mtimeMs)
}

// Rename is Tree.Rename; the caller needs Write on both parents, Exec on
// their ancestors, and to pass the sticky bit of the source's parent and,
// for an existing destination, of the destination's parent.
func (s Session) Rename(src, dst Path, mtimeMs int64) error {
	return s.t.rename(s.c, s.op, src, dst, mtimeMs)
}

// SetPermission is Tree.SetPermission; only the owner or a superuser may.
func (s Session) SetPermission(p Path, perm uint32, mtimeMs int64) error {
	return s.t.setPermission(s.c, s.op, p, perm, mtimeMs)
}

// SetOwner is Tree.SetOwner; only a superuser may change the owner, and
// the owner may change the group to one they are a member of.
func (s Session) SetOwner(p Path, owner, group string) error {
	return s.t.setOwner(s.c, s.op, p, owner, group)
}

// Append is Tree.Append for the caller, who needs Exec on every ancestor
// and Write on the file, and becomes the writer of the reopened file
// (client id and user, as Create records them). The file must exist
// (NotFound), be a file (IsDir) and be closed (Precondition: someone is
// writing it). New blocks start after the file's last block (HDFS's
// NEW_BLOCK append): the existing blocks are never reopened.
func (s Session) Append(p Path, mtimeMs int64) (FileInfo, error) {
	return s.t.append(s.c, s.op, p, mtimeMs, false)
}

// Complete is Tree.Complete; only the file's writer may, except that the
// unchanged answer for an already complete file goes to anyone.
func (s Session) Complete(p Path, id ID, blocks []Block, mtimeMs int64) (FileInfo, error) {
	return s.t.complete(s.c, s.op, p, id, blocks, mtimeMs)
}

// AbandonBlock is Tree.AbandonBlock; only the file's writer may.
func (s Session) AbandonBlock(p Path, id ID, b Block) error {
	return s.t.abandonBlock(s.c, s.op, p, id, b)
}

// NewBlock is the answer of Session.AddBlock.
type NewBlock struct {
	Block  Block    // the new last block (length 0)
	Offset uint64   // where it starts in the file
	File   FileInfo // the file after the call
	// Retried is set when the call repeated the previous AddBlock (the
	// writer lost the answer): Block is the one that call allocated and
	// nothing changed.
	Retried bool
}

// AddBlock is Tree.AddBlock with the block id and generation stamp taken
// from the tree's counters (only once every check passed, so a refused
// call moves no counter). Only the file's writer may add a block. A writer
// retrying an AddBlock whose answer it lost (the file's last block is
// still empty and prev names the block before it, or is nil with one
// block) gets that last block again, as HDFS answers it.
func (s Session) AddBlock(path Path, id ID, prev *Block, mtimeMs int64) (NewBlock, error) {
	op, p, t := s.op, path.s, s.t
	f, err := t.openFile(s.c, op, path, id)
	if err != nil {
		return NewBlock{}, err
	}
	var one [1]Block
	if bs := f.blockList(&one); len(bs) > 0 && !committed(bs[len(bs)-1]) {
		k := len(bs)
		if (k == 1 && prev == nil) || (k >= 2 && prev != nil && prev.ID == bs[k-2].ID && prev.GenStamp == bs[k-2].GenStamp) {
			if k >= 2 && crcConflict(*prev, bs[k-2]) {
				return NewBlock{}, errs.Newf(errs.Precondition, op, p, "block %v CRC32C %08x differs from the recorded %08x", *prev, prev.CRC, bs[k-2].CRC)
			}
			return NewBlock{Block: bs[k-1], Offset: f.length(), File: f.info(p), Retried: true}, nil
		}
	}
	if err := t.checkAppend(op, p, f, prev); err != nil {
		return NewBlock{}, err
	}
	bid, gs := t.AllocBlock()
	b, off := t.appendBlock(f, prev, Block{ID: bid, GenStamp: gs}, mtimeMs)
	return NewBlock{Block: b, Offset: off, File: f.info(p)}, nil
}
