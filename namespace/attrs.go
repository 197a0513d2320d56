package namespace

import "github.com/blockfs/blockfs/errs"

// SetPermission sets the mode bits (0..01777) of p and its mtime.
func (t *Tree) SetPermission(p Path, perm uint32, mtimeMs int64) error {
	return t.setPermission(nil, "namespace.Tree.SetPermission", p, perm, mtimeMs)
}

// setPermission is SetPermission for caller c, who needs Exec on every
// ancestor and to own p or be a superuser.
func (t *Tree) setPermission(c *Caller, op string, path Path, perm uint32, mtimeMs int64) error {
	n, err := t.lookupAs(c, op, path)
	p := path.s
	if err != nil {
		return err
	}
	if err := c.checkOwner(op, p, n); err != nil {
		return err
	}
	if err := checkPerm(op, p, perm); err != nil {
		return err
	}
	t.touch(n)
	n.setMode(perm)
	n.mtime = mtimeMs
	return nil
}

// SetOwner sets the owner and group of p; an empty string leaves that
// field unchanged.
func (t *Tree) SetOwner(p Path, owner, group string) error {
	return t.setOwner(nil, "namespace.Tree.SetOwner", p, owner, group)
}

// setOwner is SetOwner for caller c, who needs Exec on every ancestor and
// to own p; only a superuser may change the owner, and an owner may set
// only a group they belong to (HDFS's rules).
func (t *Tree) setOwner(c *Caller, op string, path Path, owner, group string) error {
	n, err := t.lookupAs(c, op, path)
	p := path.s
	if err != nil {
		return err
	}
	if err := c.checkOwner(op, p, n); err != nil {
		return err
	}
	if c != nil && !c.Super {
		if owner != "" && owner != c.User {
			return errs.Newf(errs.Permission, op, p, "user=%s access=chown inode=%q:%s:%s:%s (only a superuser may change the owner, here to %s)",
				c.User, p, n.og.owner, n.og.group, n.modeString(), owner)
		}
		if group != "" && !c.inGroup(group) {
			return errs.Newf(errs.Permission, op, p, "user=%s access=chgrp inode=%q:%s:%s:%s (user %s is not a member of group %s)",
				c.User, p, n.og.owner, n.og.group, n.modeString(), c.User, group)
		}
	}
	if err := checkUserName(op, p, "owner", owner); err != nil {
		return err
	}
	if err := checkUserName(op, p, "group", group); err != nil {
		return err
	}
	t.touch(n)
	n.og = t.ownerGroup(orInherit(owner, n.og.owner), orInherit(group, n.og.group))
	return nil
}

// SetReplication sets the replication factor (1..32) of file p; IsDir for
// a directory.
func (t *Tree) SetReplication(path Path, r uint32) error {
	const op = "namespace.Tree.SetReplication"
	n, err := t.lookup(op, path)
	p := path.s
	if err != nil {
		return err
	}
	if n.dir() {
		return errs.New(errs.IsDir, op, p, "cannot set replication of a directory")
	}
	if err := checkReplication(op, p, r); err != nil {
		return err
	}
	before := fileSpace(n)
	if err := checkQuota(op, p, n.parent, nil, 0, spaceWith(n, uint8(r), n.state() == UnderConstruction)-before); err != nil {
		return err
	}
	t.touch(n)
	n.hdr = n.hdr.withRepl(r)
	chargeSpace(n, before)
	return nil
}
