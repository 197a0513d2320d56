package namespace

import (
	"slices"

	"github.com/blockfs/blockfs/errs"
)

// Access is a set of permission bits, as in a mode's rwx triple.
type Access uint8

// The access bits.
const (
	Exec  Access = 1
	Write Access = 2
	Read  Access = 4
)

// String renders a as "rwx" with dashes for missing bits.
func (a Access) String() string {
	b := []byte("---")
	if a&Read != 0 {
		b[0] = 'r'
	}
	if a&Write != 0 {
		b[1] = 'w'
	}
	if a&Exec != 0 {
		b[2] = 'x'
	}
	return string(b)
}

// User is the caller of an operation.
type User struct {
	Name   string
	Groups []string
}

func isSuper(u User, superuser string) bool { return superuser != "" && u.Name == superuser }

// permits reports whether u has access a on n: the owner bits if u owns n,
// else the group bits if u is in n's group, else the other bits.
func (n *inode) permits(u User, a Access) bool {
	var bits uint32
	switch {
	case u.Name == n.owner:
		bits = n.mode >> 6
	case slices.Contains(u.Groups, n.group):
		bits = n.mode >> 3
	default:
		bits = n.mode
	}
	return Access(bits&7)&a == a
}

// modeString renders n's type and mode as ls does ("drwxr-xr-t").
func (n *inode) modeString() string {
	b := []byte("-rwxrwxrwx")
	if n.dir {
		b[0] = 'd'
	}
	for i := 0; i < 9; i++ {
		if n.mode&(1<<(8-i)) == 0 {
			b[1+i] = '-'
		}
	}
	if n.mode&stickyBit != 0 {
		if b[9] == 'x' {
			b[9] = 't'
		} else {
			b[9] = 'T'
		}
	}
	return string(b)
}

func denied(op, p string, u User, a Access, n *inode, at, why string) error {
	return errs.Newf(errs.Permission, op, p, "user=%s access=%s inode=%q:%s:%s:%s (%s)",
		u.Name, a, at, n.owner, n.group, n.modeString(), why)
}

// CheckAccess checks that u may resolve p (Exec on every ancestor
// directory) and then has access a on p itself (a may be 0 to check
// traversal only). The superuser passes without looking. Errors:
// Permission naming the user, the inode and the access needed; NotFound or
// NotDir if p does not resolve (only after the traversal checks that
// precede the missing component).
func (t *Tree) CheckAccess(u User, superuser string, p string, a Access) error {
	const op = "checkAccess"
	if err := validatePath(op, p, t.lim); err != nil {
		return err
	}
	if isSuper(u, superuser) {
		return nil
	}
	n := t.root
	rest := p[1:]
	for rest != "" {
		if !n.dir {
			return errs.Newf(errs.NotDir, op, p, "%s is a file, not a directory", prefixOf(p, rest))
		}
		if !n.permits(u, Exec) {
			return denied(op, p, u, Exec, n, prefixOf(p, rest), "traverse")
		}
		comp, tail, _ := cutComp(rest)
		c := n.lookupChild(comp)
		if c == nil {
			return t.walkErr(op, p, n, rest)
		}
		n, rest = c, tail
	}
	if !n.permits(u, a) {
		return denied(op, p, u, a, n, p, "target")
	}
	return nil
}

// CheckParentAccess checks that u may resolve the parent directory of p
// and has access a on it: the check before creating, deleting or renaming
// p. If the parent does not exist (mkdirs -p, create with CreateParent) the
// nearest existing ancestor is checked instead, as HDFS does. The parent
// of "/" is "/" itself.
func (t *Tree) CheckParentAccess(u User, superuser string, p string, a Access) error {
	const op = "checkParentAccess"
	if err := validatePath(op, p, t.lim); err != nil {
		return err
	}
	if isSuper(u, superuser) {
		return nil
	}
	n := t.root
	rest := p[1:]
	for {
		comp, tail, more := cutComp(rest)
		if !more {
			break // n is the parent
		}
		c := n.lookupChild(comp)
		if c == nil {
			break // n is the nearest existing ancestor
		}
		if !n.permits(u, Exec) {
			return denied(op, p, u, Exec, n, prefixOf(p, rest), "traverse")
		}
		if !c.dir {
			return errs.Newf(errs.NotDir, op, p, "%s is a file, not a directory", joinPath(prefixOf(p, rest), comp))
		}
		n, rest = c, tail
	}
	if !n.permits(u, a) {
		return denied(op, p, u, a, n, prefixOf(p, rest), "parent")
	}
	return nil
}

// CheckStickyBit applies the sticky-bit rule to deleting or renaming p: in
// a directory with mode bit 01000 only the superuser, the owner of the
// directory or the owner of the entry may remove the entry.
func (t *Tree) CheckStickyBit(u User, superuser string, p string) error {
	const op = "checkStickyBit"
	n, err := t.lookup(op, p)
	if err != nil {
		return err
	}
	par := n.parent
	if par == nil || par.mode&stickyBit == 0 || isSuper(u, superuser) || u.Name == par.owner || u.Name == n.owner {
		return nil
	}
	return errs.Newf(errs.Permission, op, p, "user=%s may not remove or rename %s owned by %s: sticky bit set on %s owned by %s",
		u.Name, p, n.owner, pathOf(par), par.owner)
}

// CheckOwner checks that u owns p or is the superuser: the rule for
// SetPermission and SetOwner (HDFS additionally lets only the superuser
// give a file away, and an owner set only a group it belongs to; the
// namenode enforces those with the FileInfo it has).
func (t *Tree) CheckOwner(u User, superuser string, p string) error {
	const op = "checkOwner"
	n, err := t.lookup(op, p)
	if err != nil {
		return err
	}
	if isSuper(u, superuser) || u.Name == n.owner {
		return nil
	}
	return errs.Newf(errs.Permission, op, p, "user=%s is not the owner %s of %s", u.Name, n.owner, p)
}
