package namespace

import (
	"strings"

	"github.com/blockfs/blockfs/errs"
)

// Rename2 moves src to exactly dst with HDFS's rename2 (Options.Rename)
// rules: dst is never moved into; an existing dst is an error unless
// overwrite is set, and then it must be of src's kind (file for a file,
// directory for a directory), an empty directory if one, and removable by
// the caller; it is replaced and its blocks are returned for the caller to
// invalidate. src == dst is an Exist error, as HDFS answers it. Inode ids
// are kept; both parents get mtimeMs.
func (t *Tree) Rename2(src, dst Path, overwrite bool, mtimeMs int64) ([]Block, error) {
	return t.rename2(nil, "namespace.Tree.Rename2", src, dst, overwrite, mtimeMs)
}

// Rename2 is Tree.Rename2 for the session's caller, with Rename's
// permission checks, and the destination's removal checks when it is
// replaced.
func (s Session) Rename2(src, dst Path, overwrite bool, mtimeMs int64) ([]Block, error) {
	return s.t.rename2(s.c, s.op, src, dst, overwrite, mtimeMs)
}

func (t *Tree) rename2(c *Caller, op string, srcPath, dstPath Path, overwrite bool, mtimeMs int64) ([]Block, error) {
	if err := t.admit(op, dstPath); err != nil {
		return nil, err
	}
	src, dst := srcPath.s, dstPath.s
	s, err := t.lookupAs(c, op, srcPath)
	if err != nil {
		return nil, err
	}
	switch {
	case s.parent == nil:
		return nil, errs.New(errs.Invalid, op, src, "cannot rename the root directory")
	case src == dst:
		return nil, errs.Newf(errs.Exist, op, src, "The source %s and destination %s are the same", src, dst)
	case strings.HasPrefix(dst, src+"/"):
		return nil, errs.Newf(errs.Invalid, op, src, "rename destination %s is a directory or file under source %s", dst, src)
	}
	d, rest, err := t.resolve(c, op, dstPath)
	if err != nil {
		return nil, err
	}
	if rest != "" || d.parent == nil {
		if d.parent == nil && rest == "" {
			return nil, errs.Newf(errs.Exist, op, src, "rename destination cannot be the root")
		}
		// No destination: Rename's own rules (its parent must exist).
		if !d.dir() {
			return nil, errs.Newf(errs.NotDir, op, src, "rename destination parent %s is a file, not a directory", prefixOf(dst, rest))
		}
		if strings.IndexByte(rest, '/') >= 0 {
			return nil, errs.Newf(errs.NotFound, op, src, "rename destination parent %s not found", parentPath(dst))
		}
		return nil, t.rename(c, op, srcPath, dstPath, mtimeMs)
	}
	switch {
	case s.dir() && !d.dir():
		return nil, errs.Newf(errs.Exist, op, src, "Source %s is a directory but destination %s is a file", src, dst)
	case !s.dir() && d.dir():
		return nil, errs.Newf(errs.Exist, op, src, "Source %s is a file but destination %s is a directory", src, dst)
	case !overwrite:
		return nil, errs.Newf(errs.Exist, op, src, "rename destination %s already exists", dst)
	case d.dir() && d.kids().len() > 0:
		return nil, errs.Newf(errs.NotEmpty, op, src, "rename destination directory is not empty: %s", dst)
	}
	if err := c.checkRemove(op, src, d, dst); err != nil {
		return nil, err
	}
	// Detach the destination, then rename onto its free name; a refused
	// rename puts it back, so nothing changes unless both succeed. Its
	// usage is still charged while the rename checks quotas, which can
	// only make that check stricter.
	parent := d.parent
	t.removeChild(parent, d)
	if err := t.rename(c, op, srcPath, dstPath, mtimeMs); err != nil {
		t.insertChild(parent, d)
		return nil, err
	}
	d.parent = parent
	return t.removeSubtree(d, nil), nil
}
