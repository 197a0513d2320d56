package namespace

import (
	"strings"

	"github.com/blockfs/blockfs/errs"
)

// Delete removes p and, with recursive, everything below it, returning
// every block removed (walk order) for the caller to invalidate. Errors:
// NotFound, Invalid for "/", NotEmpty for a non-empty directory without
// recursive. The parent's mtime becomes mtimeMs.
func (t *Tree) Delete(p Path, recursive bool, mtimeMs int64) ([]Block, error) {
	return t.delete(nil, "namespace.Tree.Delete", p, recursive, mtimeMs)
}

// delete is Delete for caller c, who needs Exec on every ancestor, Write
// on the parent, to pass the parent's sticky bit and, for a directory
// with contents, rwx on every non-empty directory in the subtree.
func (t *Tree) delete(c *Caller, op string, path Path, recursive bool, mtimeMs int64) ([]Block, error) {
	n, err := t.lookupAs(c, op, path)
	p := path.s
	if err != nil {
		return nil, err
	}
	if n.parent == nil {
		return nil, errs.New(errs.Invalid, op, p, "cannot delete the root directory")
	}
	if err := c.checkRemove(op, p, n, p); err != nil {
		return nil, err
	}
	if n.dir() && n.kids().len() > 0 && !recursive {
		return nil, errs.Newf(errs.NotEmpty, op, p, "directory has %d children and recursive is not set", n.kids().len())
	}
	if err := c.checkSubtree(op, p, n, All); err != nil {
		return nil, err
	}
	if err := t.checkNoSnapshots(op, p, n); err != nil {
		return nil, err
	}
	removed := t.removeSubtree(n, nil)
	t.removeChild(n.parent, n)
	n.parent.mtime = mtimeMs
	return removed, nil
}

// Rename moves src to dst with the HDFS rename rules: if dst is an existing
// directory, src moves into it as dst/base(src) (which must not exist);
// otherwise dst's parent must exist and be a directory, and dst must not
// exist. src == dst (or a move into src's own parent under its own name)
// is a successful no-op. Inode ids are kept; both parents get mtimeMs.
func (t *Tree) Rename(src, dst Path, mtimeMs int64) error {
	return t.rename(nil, "namespace.Tree.Rename", src, dst, mtimeMs)
}

// rename is Rename for caller c, who needs Exec on the ancestors of both
// paths, Write on both parents, and to pass the sticky bit of the source's
// parent and, for an existing destination, of the destination's parent.
func (t *Tree) rename(c *Caller, op string, srcPath, dstPath Path, mtimeMs int64) error {
	if err := t.admit(op, dstPath); err != nil {
		return err
	}
	src, dst := srcPath.s, dstPath.s
	s, err := t.lookupAs(c, op, srcPath)
	if err != nil {
		return err
	}
	if s.parent == nil {
		return errs.New(errs.Invalid, op, src, "cannot rename the root directory")
	}
	if err := c.checkRemove(op, src, s, src); err != nil {
		return err
	}
	if src == dst {
		return nil
	}
	d, rest, err := t.resolve(c, op, dstPath)
	if err != nil {
		return err
	}
	var newParent *inode
	var newName string
	switch {
	case rest == "" && !d.dir():
		if err := c.checkRemove(op, src, d, dst); err != nil {
			return err
		}
		return errs.Newf(errs.Exist, op, src, "destination %s is an existing file", dst)
	case rest == "":
		if err := c.check(op, src, d, dst, Write|Exec, "destination parent"); err != nil {
			return err
		}
		newParent, newName = d, s.name
		if k := d.lookupChild(s.name); k == s {
			return nil
		} else if k != nil {
			if err := c.checkSticky(op, src, k, joinPath(dst, s.name)); err != nil {
				return err
			}
			return errs.Newf(errs.Exist, op, src, "destination %s already exists", joinPath(dst, s.name))
		}
		if l := len(dst) + 1 + len(s.name); l > t.lim.MaxPathLen {
			return errs.Newf(errs.Invalid, op, src, "destination path too long: %d bytes, limit %d", l, t.lim.MaxPathLen)
		}
	case !d.dir():
		return errs.Newf(errs.NotDir, op, src, "destination parent %s is a file, not a directory", prefixOf(dst, rest))
	default:
		if err := c.check(op, src, d, prefixOf(dst, rest), Write|Exec, "destination parent"); err != nil {
			return err
		}
		if strings.IndexByte(rest, '/') >= 0 {
			return errs.Newf(errs.NotFound, op, src, "destination parent %s does not exist", parentPath(dst))
		}
		newParent, newName = d, rest
	}
	if s.dir() {
		for a := newParent; a != nil; a = a.parent {
			if a == s {
				return errs.Newf(errs.Invalid, op, src, "rename into own subtree: %s is below %s", dst, src)
			}
		}
	}
	if err := t.checkNoSnapshots(op, src, s); err != nil {
		return err
	}
	if newParent != s.parent && newParent.kids().len() >= t.lim.MaxDirItems {
		return t.fullDir(op, src, pathOf(newParent))
	}

	// Quotas: the moved tree leaves the directories above the old parent
	// and enters those above the new one, up to their common ancestor
	// (HDFS's verifyQuotaForRename). Its usage is needed only when one of
	// them has a quota.
	oldParent := s.parent
	common := commonAncestor(oldParent, newParent)
	var u usage
	if anyQuota(oldParent, common) || anyQuota(newParent, common) {
		u = subtreeUsage(s, true)
		if err := checkQuota(op, src, newParent, common, u.ns, u.ds); err != nil {
			return err
		}
	}
	chargeTo(oldParent, common, -u.ns, -u.ds)
	chargeTo(newParent, common, u.ns, u.ds)
	t.removeChild(oldParent, s)
	t.touch(s)
	if newName != s.name {
		s.name = strings.Clone(newName)
	}
	t.insertChild(newParent, s)
	oldParent.mtime = mtimeMs
	newParent.mtime = mtimeMs
	return nil
}

// checkRemove checks that c may unlink n, found at path at, from its
// parent: Write and Exec on the parent, and the parent's sticky bit.
func (c *Caller) checkRemove(op, p string, n *inode, at string) error {
	if err := c.check(op, p, n.parent, parentPath(at), Write|Exec, "parent"); err != nil {
		return err
	}
	return c.checkSticky(op, p, n, at)
}
