package namespace

import (
	"strings"

	"github.com/blockfs/blockfs/errs"
)

// MkdirsOpts are the arguments of Mkdirs. Owner and Group default (when
// empty) to those of the parent directory; HDFS likewise takes the group of
// a new inode from its parent.
type MkdirsOpts struct {
	Perm         uint32 // 0..01777
	Parents      bool   // create missing ancestors (mode Perm|0300, like HDFS)
	Owner, Group string
	MtimeMs      int64
}

// Mkdirs creates directory p. Without Parents the parent must exist
// (NotFound) and p must not (Exist); with Parents missing ancestors are
// created and an existing directory is success. A file at p is Exist; a
// file above p is NotDir. Each new directory and the existing directory
// that receives the first of them take mtime MtimeMs.
func (t *Tree) Mkdirs(p string, o MkdirsOpts) error {
	const op = "mkdirs"
	if err := t.checkNewInode(op, p, o.Perm, o.Owner, o.Group); err != nil {
		return err
	}
	n, rest := t.walk(p)
	if rest == "" {
		if !n.dir {
			return errs.New(errs.Exist, op, p, "a file already exists at this path")
		}
		if o.Parents {
			return nil
		}
		return errs.New(errs.Exist, op, p, "directory already exists")
	}
	if !n.dir {
		return errs.Newf(errs.NotDir, op, p, "%s is a file, not a directory", prefixOf(p, rest))
	}
	if !o.Parents && strings.IndexByte(rest, '/') >= 0 {
		return errs.Newf(errs.NotFound, op, p, "parent directory %s does not exist", parentPath(p))
	}
	if len(n.kids) >= t.lim.MaxDirItems {
		return t.fullDir(op, p, prefixOf(p, rest))
	}
	t.mkdirChain(n, rest, o.Perm, o.Owner, o.Group, o.MtimeMs)
	return nil
}

// mkdirChain creates every component of rest below n (none exists) and
// returns the last. Intermediate directories get perm|0300, the last perm.
func (t *Tree) mkdirChain(n *inode, rest string, perm uint32, owner, group string, mtime int64) *inode {
	n.mtime = mtime
	for {
		comp, tail, more := cutComp(rest)
		mode := perm
		if more {
			mode |= 0300
		}
		d := &inode{
			name: strings.Clone(comp), dir: true, state: Complete, mode: mode, mtime: mtime,
			owner: orInherit(owner, n.owner), group: orInherit(group, n.group),
		}
		t.newInode(n, d)
		n = d
		if !more {
			return n
		}
		rest = tail
	}
}

// checkNewInode runs the argument checks shared by Mkdirs and Create.
func (t *Tree) checkNewInode(op, p string, perm uint32, owner, group string) error {
	if err := validatePath(op, p, t.lim); err != nil {
		return err
	}
	if err := checkPerm(op, p, perm); err != nil {
		return err
	}
	if err := checkUserName(op, p, "owner", owner); err != nil {
		return err
	}
	return checkUserName(op, p, "group", group)
}

func (t *Tree) fullDir(op, p, dir string) error {
	return errs.Newf(errs.Exhausted, op, p, "directory %s is full: limit %d items", dir, t.lim.MaxDirItems)
}

// CreateOpts are the arguments of Create. Owner and Group default to the
// parent directory's, as in MkdirsOpts.
type CreateOpts struct {
	Perm         uint32 // 0..01777
	Overwrite    bool   // replace an existing file (a new inode id)
	CreateParent bool   // create missing ancestors (mode Perm|0300)
	Replication  uint32 // 1..32
	BlockSize    uint64 // > 0
	Owner, Group string
	MtimeMs      int64
}

// Create makes an empty file at p, UnderConstruction, and returns it with
// the blocks of the file it replaced (Overwrite), which the caller must
// invalidate. Errors: Exist (file exists, no Overwrite), IsDir (p is a
// directory), NotFound (parent missing, no CreateParent), NotDir (a file
// above p), Invalid (arguments), Exhausted (directory full).
func (t *Tree) Create(p string, o CreateOpts) (FileInfo, []Block, error) {
	const op = "create"
	if err := t.checkNewInode(op, p, o.Perm, o.Owner, o.Group); err != nil {
		return FileInfo{}, nil, err
	}
	if err := checkReplication(op, p, o.Replication); err != nil {
		return FileInfo{}, nil, err
	}
	if o.BlockSize == 0 {
		return FileInfo{}, nil, errs.New(errs.Invalid, op, p, "block size must be positive")
	}
	n, rest := t.walk(p)
	var old *inode
	switch {
	case rest == "" && n.dir:
		return FileInfo{}, nil, errs.New(errs.IsDir, op, p, "path is a directory")
	case rest == "" && !o.Overwrite:
		return FileInfo{}, nil, errs.New(errs.Exist, op, p, "file already exists")
	case rest == "":
		old = n
	case !n.dir:
		return FileInfo{}, nil, errs.Newf(errs.NotDir, op, p, "%s is a file, not a directory", prefixOf(p, rest))
	case !o.CreateParent && strings.IndexByte(rest, '/') >= 0:
		return FileInfo{}, nil, errs.Newf(errs.NotFound, op, p, "parent directory %s does not exist", parentPath(p))
	case len(n.kids) >= t.lim.MaxDirItems:
		return FileInfo{}, nil, t.fullDir(op, p, prefixOf(p, rest))
	}

	// Valid: change the tree.
	var removed []Block
	parent := n
	if old != nil {
		parent = old.parent
		removed = t.removeSubtree(old, nil)
		parent.removeChild(old)
	} else if i := strings.LastIndexByte(rest, '/'); i >= 0 {
		parent = t.mkdirChain(n, rest[:i], o.Perm|0300, o.Owner, o.Group, o.MtimeMs)
	}
	f := &inode{
		name: strings.Clone(baseName(p)), mode: o.Perm, mtime: o.MtimeMs,
		owner: orInherit(o.Owner, parent.owner), group: orInherit(o.Group, parent.group),
		state: UnderConstruction, repl: o.Replication, blockSize: o.BlockSize,
	}
	t.newInode(parent, f)
	parent.mtime = o.MtimeMs
	return f.info(p), removed, nil
}

// Delete removes p and, with recursive, everything below it, returning
// every block removed (walk order) for the caller to invalidate. Errors:
// NotFound, Invalid for "/", NotEmpty for a non-empty directory without
// recursive. The parent's mtime becomes mtimeMs.
func (t *Tree) Delete(p string, recursive bool, mtimeMs int64) ([]Block, error) {
	const op = "delete"
	n, err := t.lookup(op, p)
	if err != nil {
		return nil, err
	}
	if n.parent == nil {
		return nil, errs.New(errs.Invalid, op, p, "cannot delete the root directory")
	}
	if n.dir && len(n.kids) > 0 && !recursive {
		return nil, errs.Newf(errs.NotEmpty, op, p, "directory has %d children and recursive is not set", len(n.kids))
	}
	removed := t.removeSubtree(n, nil)
	n.parent.removeChild(n)
	n.parent.mtime = mtimeMs
	return removed, nil
}

// Rename moves src to dst with the HDFS rename rules: if dst is an existing
// directory, src moves into it as dst/base(src) (which must not exist);
// otherwise dst's parent must exist and be a directory, and dst must not
// exist. src == dst (or a move into src's own parent under its own name)
// is a successful no-op. Inode ids are kept; both parents get mtimeMs.
func (t *Tree) Rename(src, dst string, mtimeMs int64) error {
	const op = "rename"
	if err := validatePath(op, dst, t.lim); err != nil {
		return err
	}
	s, err := t.lookup(op, src)
	if err != nil {
		return err
	}
	if s.parent == nil {
		return errs.New(errs.Invalid, op, src, "cannot rename the root directory")
	}
	if src == dst {
		return nil
	}
	d, rest := t.walk(dst)
	var newParent *inode
	var newName string
	switch {
	case rest == "" && !d.dir:
		return errs.Newf(errs.Exist, op, src, "destination %s is an existing file", dst)
	case rest == "":
		newParent, newName = d, s.name
		if c := d.lookupChild(s.name); c == s {
			return nil
		} else if c != nil {
			return errs.Newf(errs.Exist, op, src, "destination %s already exists", joinPath(dst, s.name))
		}
		if l := len(dst) + 1 + len(s.name); l > t.lim.MaxPathLen {
			return errs.Newf(errs.Invalid, op, src, "destination path too long: %d bytes, limit %d", l, t.lim.MaxPathLen)
		}
	case !d.dir:
		return errs.Newf(errs.NotDir, op, src, "destination parent %s is a file, not a directory", prefixOf(dst, rest))
	case strings.IndexByte(rest, '/') >= 0:
		return errs.Newf(errs.NotFound, op, src, "destination parent %s does not exist", parentPath(dst))
	default:
		newParent, newName = d, rest
	}
	if s.dir {
		for a := newParent; a != nil; a = a.parent {
			if a == s {
				return errs.Newf(errs.Invalid, op, src, "rename into own subtree: %s is below %s", dst, src)
			}
		}
	}
	if newParent != s.parent && len(newParent.kids) >= t.lim.MaxDirItems {
		return t.fullDir(op, src, pathOf(newParent))
	}

	oldParent := s.parent
	oldParent.removeChild(s)
	if newName != s.name {
		s.name = strings.Clone(newName)
	}
	newParent.insertChild(s)
	oldParent.mtime = mtimeMs
	newParent.mtime = mtimeMs
	return nil
}

// SetPermission sets the mode bits (0..01777) of p and its mtime.
func (t *Tree) SetPermission(p string, perm uint32, mtimeMs int64) error {
	const op = "setPermission"
	n, err := t.lookup(op, p)
	if err != nil {
		return err
	}
	if err := checkPerm(op, p, perm); err != nil {
		return err
	}
	n.mode = perm
	n.mtime = mtimeMs
	return nil
}

// SetOwner sets the owner and group of p; an empty string leaves that
// field unchanged.
func (t *Tree) SetOwner(p, owner, group string) error {
	const op = "setOwner"
	n, err := t.lookup(op, p)
	if err != nil {
		return err
	}
	if err := checkUserName(op, p, "owner", owner); err != nil {
		return err
	}
	if err := checkUserName(op, p, "group", group); err != nil {
		return err
	}
	n.owner = orInherit(owner, n.owner)
	n.group = orInherit(group, n.group)
	return nil
}

// SetReplication sets the replication factor (1..32) of file p; IsDir for
// a directory.
func (t *Tree) SetReplication(p string, r uint32) error {
	const op = "setReplication"
	n, err := t.lookup(op, p)
	if err != nil {
		return err
	}
	if n.dir {
		return errs.New(errs.IsDir, op, p, "cannot set replication of a directory")
	}
	if err := checkReplication(op, p, r); err != nil {
		return err
	}
	n.repl = r
	return nil
}
