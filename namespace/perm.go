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
	All          = Read | Write | Exec
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

// Caller is the identity an operation runs as (see Session). A nil
// *Caller is the system itself, the namenode applying its own commands: it
// passes every check.
type Caller struct {
	User   string
	Groups []string
	// Client is the id of the client process making the call. Create
	// records it, with User, as the writer of the new file; AddBlock,
	// Complete and AbandonBlock accept only that writer.
	Client string
	// Super marks a superuser, who passes every permission check (not
	// the writer check). Policy.Caller sets it.
	Super bool
}

// Policy says who is a superuser: the user named Superuser and every
// member of the group Supergroup, as in HDFS. An empty name matches
// nobody.
type Policy struct {
	Superuser, Supergroup string
}

// Caller returns the caller for user, a member of groups, calling from
// client, with Super set as the policy says. groups is kept, not copied.
func (p Policy) Caller(user string, groups []string, client string) *Caller {
	super := (p.Superuser != "" && user == p.Superuser) ||
		(p.Supergroup != "" && slices.Contains(groups, p.Supergroup))
	return &Caller{User: user, Groups: groups, Client: client, Super: super}
}

// inGroup reports whether c is a member of group g.
func (c *Caller) inGroup(g string) bool { return slices.Contains(c.Groups, g) }

// permits reports whether c has access a on n: the superuser always; else
// the owner bits if c owns n, else the group bits if c is in n's group,
// else the other bits (only the first class that matches counts).
func (c *Caller) permits(n *inode, a Access) bool {
	if c == nil || c.Super {
		return true
	}
	var bits uint16
	switch {
	case c.User == n.og.owner:
		bits = n.mode() >> 6
	case c.inGroup(n.og.group):
		bits = n.mode() >> 3
	default:
		bits = n.mode()
	}
	return Access(bits&7)&a == a
}

// check returns a Permission error unless c has access a on n, found at
// path at while running op on p. why says which rule asked.
func (c *Caller) check(op, p string, n *inode, at string, a Access, why string) error {
	if c.permits(n, a) {
		return nil
	}
	return errs.Newf(errs.Permission, op, p, "user=%s access=%s inode=%q:%s:%s:%s (%s)",
		c.User, a, at, n.og.owner, n.og.group, n.modeString(), why)
}

// checkSticky applies the sticky-bit rule to removing or replacing n
// (found at path at): when n's parent has mode bit 01000, only the owner
// of n, the owner of the parent or a superuser may do it.
func (c *Caller) checkSticky(op, p string, n *inode, at string) error {
	par := n.parent
	if c == nil || c.Super || par == nil || par.mode()&stickyBit == 0 || c.User == n.og.owner || c.User == par.og.owner {
		return nil
	}
	return errs.Newf(errs.Permission, op, p,
		"user=%s access=%s inode=%q:%s:%s:%s (sticky bit on parent %q:%s:%s:%s: only the owner of the entry or of the directory may remove, rename or replace it)",
		c.User, Write|Exec, at, n.og.owner, n.og.group, n.modeString(), pathOf(par), par.og.owner, par.og.group, par.modeString())
}

// checkOwner returns a Permission error unless c owns n or is a superuser.
func (c *Caller) checkOwner(op, p string, n *inode) error {
	if c == nil || c.Super || c.User == n.og.owner {
		return nil
	}
	return errs.Newf(errs.Permission, op, p, "user=%s access=owner inode=%q:%s:%s:%s (only the owner or a superuser may change it)",
		c.User, p, n.og.owner, n.og.group, n.modeString())
}

// checkSubtree checks that c has access a on every non-empty directory in
// the subtree at n (n included): the rule for deleting a directory with
// its contents. Empty directories lose no entries, so, as in HDFS, they
// are not checked.
func (c *Caller) checkSubtree(op, p string, n *inode, a Access) error {
	if c == nil || c.Super || !n.dir() || n.kids().len() == 0 {
		return nil
	}
	if !c.permits(n, a) {
		return c.check(op, p, n, pathOf(n), a, "recursive delete needs it on every directory beneath")
	}
	for k := range n.kids().all() {
		if err := c.checkSubtree(op, p, k, a); err != nil {
			return err
		}
	}
	return nil
}

// checkWriter returns a Permission error unless c is the writer of the
// under-construction file f (a nil c, the system, always is). The
// superuser is no exception: a second writer would corrupt the file.
func (c *Caller) checkWriter(op, p string, f *inode) error {
	w := f.writer()
	if c == nil || (w != nil && c.User == w.User && (w.Client == "" || w.Client == c.Client)) {
		return nil
	}
	holder := ""
	if w != nil {
		holder = w.User
	}
	return errs.Newf(errs.Permission, op, p,
		"user=%s access=%s inode=%q:%s:%s:%s (not the writer: the file is open for writing by user %s on another client)",
		c.User, Write, p, f.og.owner, f.og.group, f.modeString(), holder)
}

// modeString renders n's type and mode as ls does ("drwxr-xr-t").
func (n *inode) modeString() string {
	b := []byte("-rwxrwxrwx")
	if n.dir() {
		b[0] = 'd'
	}
	for i := 0; i < 9; i++ {
		if n.mode()&(1<<(8-i)) == 0 {
			b[1+i] = '-'
		}
	}
	if n.mode()&stickyBit != 0 {
		if b[9] == 'x' {
			b[9] = 't'
		} else {
			b[9] = 'T'
		}
	}
	return string(b)
}
