package namespace

import (
	"strings"

	"github.com/blockfs/blockfs/errs"
)

// Append reopens the closed file p for writing by the system (no writer
// recorded) and returns it. See Session.Append.
func (t *Tree) Append(p Path, mtimeMs int64) (FileInfo, error) {
	return t.append(nil, "namespace.Tree.Append", p, mtimeMs, false)
}

// append reopens the closed file p for caller c with HDFS's NEW_BLOCK
// semantics: the file's blocks stay as they are, committed (a later
// AddBlock or Complete may not change their lengths or CRCs), and the
// writer's next AddBlock starts a new block after the last one, however
// short that is. c needs Exec on every ancestor and Write on the file.
// The file becomes UnderConstruction with c (client id and user) as its
// writer, as Create records it, so only c may add blocks, abandon them and
// complete it. Errors: NotFound (no such file), IsDir, Permission,
// Precondition (the file is already being written, by anyone).
//
// With reopen, the caller (AppendLast) will reopen a last block shorter
// than the block size: the quota check counts that block at the full
// block size, as HDFS charges the block an append reopens.
func (t *Tree) append(c *Caller, op string, path Path, mtimeMs int64, reopen bool) (FileInfo, error) {
	if err := t.admit(op, path); err != nil {
		return FileInfo{}, err
	}
	p := path.s
	w := &Writer{}
	if c != nil {
		if err := checkUserName(op, p, "writer client id", c.Client); err != nil {
			return FileInfo{}, err
		}
		if err := checkUserName(op, p, "writer user", c.User); err != nil {
			return FileInfo{}, err
		}
		w = &Writer{Client: strings.Clone(c.Client), User: strings.Clone(c.User)}
	}
	n, rest, err := t.resolve(c, op, path)
	if err != nil {
		return FileInfo{}, err
	}
	switch {
	case rest != "" && !n.dir():
		return FileInfo{}, errs.Newf(errs.NotDir, op, p, "%s is a file, not a directory", prefixOf(p, rest))
	case rest != "":
		return FileInfo{}, errs.New(errs.NotFound, op, p, "file does not exist")
	case n.dir():
		return FileInfo{}, errs.New(errs.IsDir, op, p, "path is a directory, not a file")
	}
	if err := c.check(op, p, n, p, Write, "append"); err != nil {
		return FileInfo{}, err
	}
	if n.state() == UnderConstruction {
		holder := ""
		if w := n.writer(); w != nil {
			holder = w.User
		}
		return FileInfo{}, errs.Newf(errs.Precondition, op, p,
			"failed to append to %s: the file is already being written (by user %s); it must be closed first", p, holder)
	}
	if n.nblocks() >= t.lim.MaxBlocksPerFile {
		return FileInfo{}, errs.Newf(errs.Exhausted, op, p, "file has the maximum of %d blocks", t.lim.MaxBlocksPerFile)
	}
	after := spaceWith(n, n.repl(), true)
	if l := n.length(); reopen && n.nblocks() > 0 && n.lastBlock().Length > 0 && n.lastBlock().Length < n.blockSize {
		after = int64(n.repl()) * int64(l-n.lastBlock().Length+n.blockSize)
	}
	before := fileSpace(n)
	if err := checkQuota(op, p, n.parent, nil, 0, after-before); err != nil {
		return FileInfo{}, err
	}
	t.touch(n)
	n.open(w)
	chargeSpace(n, before)
	n.mtime = mtimeMs
	return n.info(p), nil
}

// committed reports whether block b was committed by a writer: its
// length or CRC is recorded. A block AddBlock just allocated is neither
// until the writer's next AddBlock or Complete commits it.
func committed(b Block) bool { return b.Length != 0 || b.HasCRC }

// lengthConflict reports whether got would change the length of the
// committed block have.
func lengthConflict(got, have Block) bool { return committed(have) && got.Length != have.Length }

// lastLengthConflict is lengthConflict for the last block of a file under
// construction: one whose CRC is recorded is final, as any committed
// block; without one it may grow (an hflush, a reopened block) but never
// shrink below the length recorded.
func lastLengthConflict(got, have Block) bool {
	if have.HasCRC {
		return got.Length != have.Length
	}
	return got.Length < have.Length
}
