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
func (t *Tree) Mkdirs(p Path, o MkdirsOpts) error {
	return t.mkdirs(nil, "namespace.Tree.Mkdirs", p, o)
}

// mkdirs is Mkdirs for caller c, who needs Exec on every existing
// ancestor and, when something is created, Write on the last existing
// one.
func (t *Tree) mkdirs(c *Caller, op string, path Path, o MkdirsOpts) error {
	if err := t.checkNewInode(op, path, o.Perm, o.Owner, o.Group); err != nil {
		return err
	}
	p := path.s
	n, rest, err := t.resolve(c, op, path)
	if err != nil {
		return err
	}
	if rest == "" {
		if !n.dir() {
			return errs.New(errs.Exist, op, p, "a file already exists at this path")
		}
		if o.Parents {
			return nil
		}
		return errs.New(errs.Exist, op, p, "directory already exists")
	}
	if !n.dir() {
		return errs.Newf(errs.NotDir, op, p, "%s is a file, not a directory", prefixOf(p, rest))
	}
	if err := c.check(op, p, n, prefixOf(p, rest), Write|Exec, "last existing ancestor"); err != nil {
		return err
	}
	if !o.Parents && strings.IndexByte(rest, '/') >= 0 {
		return errs.Newf(errs.NotFound, op, p, "parent directory %s does not exist", parentPath(p))
	}
	if n.kids().len() >= t.lim.MaxDirItems {
		return t.fullDir(op, p, prefixOf(p, rest))
	}
	if err := checkQuota(op, p, n, nil, int64(strings.Count(rest, "/")+1), 0); err != nil {
		return err
	}
	t.mkdirChain(n, rest, o.Perm, o.Owner, o.Group, o.MtimeMs)
	return nil
}

// mkdirChain creates every component of rest below n (none exists) and
// returns the last. Intermediate directories get perm|0300, the last perm.
func (t *Tree) mkdirChain(n *inode, rest string, perm uint32, owner, group string, mtime int64) *inode {
	t.touch(n)
	n.mtime = mtime
	for {
		comp, tail, more := cutComp(rest)
		mode := perm
		if more {
			mode |= 0300
		}
		d := newDir(strings.Clone(comp), mode, t.ownerGroup(orInherit(owner, n.og.owner), orInherit(group, n.og.group)), mtime)
		t.newInode(n, d)
		n = d
		if !more {
			return n
		}
		rest = tail
	}
}

// checkNewInode runs the argument checks shared by Mkdirs and Create.
func (t *Tree) checkNewInode(op string, path Path, perm uint32, owner, group string) error {
	if err := t.admit(op, path); err != nil {
		return err
	}
	p := path.s
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
	// id and space are PutFile's: the file's reserved inode id (0:
	// allocate one) and the space its block takes, checked against the
	// quotas with the name.
	id    ID
	space int64
	// UnderConstruction, if set, is asked about an existing file at p that
	// is under construction and that the caller may write, before anything
	// else is decided about it: an error it returns is Create's (the
	// namenode refuses another client's file while its lease is held).
	UnderConstruction func(FileInfo) error
}

// Create makes an empty file at p, UnderConstruction, and returns it with
// the blocks of the file it replaced (Overwrite), which the caller must
// invalidate. Errors: Exist (file exists, no Overwrite), IsDir (p is a
// directory), NotFound (parent missing, no CreateParent), NotDir (a file
// above p), Invalid (arguments), Exhausted (directory full).
func (t *Tree) Create(p Path, o CreateOpts) (FileInfo, []Block, error) {
	return t.create(nil, "namespace.Tree.Create", p, o)
}

// create is Create for caller c, who needs Exec on every existing ancestor
// and Write on the parent (the last existing ancestor with CreateParent).
// Overwriting a file also needs Write on the file (HDFS) and passing the
// parent's sticky bit. The new file records c as its writer.
func (t *Tree) create(c *Caller, op string, path Path, o CreateOpts) (FileInfo, []Block, error) {
	if err := t.checkNewInode(op, path, o.Perm, o.Owner, o.Group); err != nil {
		return FileInfo{}, nil, err
	}
	p := path.s
	w := &Writer{}
	if c != nil {
		if err := checkUserName(op, p, "writer client id", c.Client); err != nil {
			return FileInfo{}, nil, err
		}
		if err := checkUserName(op, p, "writer user", c.User); err != nil {
			return FileInfo{}, nil, err
		}
		w = &Writer{Client: strings.Clone(c.Client), User: strings.Clone(c.User)}
	}
	if err := checkReplication(op, p, o.Replication); err != nil {
		return FileInfo{}, nil, err
	}
	if o.BlockSize == 0 {
		return FileInfo{}, nil, errs.New(errs.Invalid, op, p, "block size must be positive")
	}
	n, rest, err := t.resolve(c, op, path)
	if err != nil {
		return FileInfo{}, nil, err
	}
	old, err := t.checkCreate(c, op, p, o, n, rest)
	if err != nil {
		return FileInfo{}, nil, err
	}
	if old == nil {
		// The file and the missing directories above it; an overwrite
		// replaces one name by another and frees the old file's space.
		if err := checkQuota(op, p, n, nil, int64(strings.Count(rest, "/")+1), o.space); err != nil {
			return FileInfo{}, nil, err
		}
	} else if err := checkQuota(op, p, old.parent, nil, 0, o.space-fileSpace(old)); err != nil {
		return FileInfo{}, nil, err
	}

	// Valid: change the tree.
	var removed []Block
	parent := n
	if old != nil {
		parent = old.parent
		removed = t.removeSubtree(old, nil)
		t.removeChild(parent, old)
	} else if i := strings.LastIndexByte(rest, '/'); i >= 0 {
		parent = t.mkdirChain(n, rest[:i], o.Perm|0300, o.Owner, o.Group, o.MtimeMs)
	}
	f := newFile(strings.Clone(baseName(p)), o.Perm, o.Replication, o.BlockSize,
		t.ownerGroup(orInherit(o.Owner, parent.og.owner), orInherit(o.Group, parent.og.group)), o.MtimeMs, w)
	f.id = o.id
	t.newInode(parent, f)
	parent.mtime = o.MtimeMs
	return f.info(p), removed, nil
}

// checkCreate decides whether c may create p, which resolved to n with
// rest unresolved, and returns the file it replaces (nil if none).
// Permission is checked before the state of p is reported.
func (t *Tree) checkCreate(c *Caller, op, p string, o CreateOpts, n *inode, rest string) (*inode, error) {
	switch {
	case rest == "" && n.dir():
		return nil, errs.New(errs.IsDir, op, p, "path is a directory")
	case rest == "":
		if err := c.check(op, p, n.parent, parentPath(p), Write|Exec, "parent"); err != nil {
			return nil, err
		}
		if o.UnderConstruction != nil && n.state() == UnderConstruction && c.check(op, p, n, p, Write, "overwrite") == nil {
			if err := o.UnderConstruction(n.info(p)); err != nil {
				return nil, err
			}
		}
		if !o.Overwrite {
			return nil, errs.New(errs.Exist, op, p, "file already exists")
		}
		if err := c.checkSticky(op, p, n, p); err != nil {
			return nil, err
		}
		return n, c.check(op, p, n, p, Write, "overwrite")
	case !n.dir():
		return nil, errs.Newf(errs.NotDir, op, p, "%s is a file, not a directory", prefixOf(p, rest))
	}
	if err := c.check(op, p, n, prefixOf(p, rest), Write|Exec, "parent"); err != nil {
		return nil, err
	}
	switch {
	case !o.CreateParent && strings.IndexByte(rest, '/') >= 0:
		return nil, errs.Newf(errs.NotFound, op, p, "parent directory %s does not exist", parentPath(p))
	case n.kids().len() >= t.lim.MaxDirItems:
		return nil, t.fullDir(op, p, prefixOf(p, rest))
	}
	return nil, nil
}
