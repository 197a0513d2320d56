package namespace

import (
	"slices"
	"strings"

	"github.com/blockfs/blockfs/errs"
)

// Extended attributes and access times, with HDFS's rules
// (FSDirXAttrOp, XAttrPermissionFilter, FSDirAttrOp.setTimes):
//
//   - A name is a namespace prefix, a dot and the rest: user., trusted.,
//     system., security. or raw. The prefix is matched without regard to
//     case and kept lower case; the rest is kept as given.
//   - user.* may be read by whoever may read the inode, and set or
//     removed by whoever may write it; on a directory with the sticky bit
//     only its owner (or a superuser) may set or remove them.
//   - trusted.* is the superuser's alone, and invisible to everyone else
//     in a listing.
//   - system.* and raw.* are never set, read or listed by a caller (HDFS
//     keeps system.* to itself and shows raw.* only under /.reserved/raw,
//     which blockfs has not). security.* is refused too, except
//     security.hdfs.unreadable.by.superuser: set without a value on a
//     file, never removed, it forbids the superuser the file's data.
//   - An inode has at most XAttrLimits.MaxPerInode user-visible (user.
//     and trusted.) attributes, and each at most XAttrLimits.MaxSize bytes
//     of name (without its prefix) and value.
//
// An access time is kept only once SetTimes set one: blockfs does not
// change it on reads (HDFS's dfs.namenode.accesstime.precision = 0). Until
// then a file reports its mtime and a directory 0, as HDFS's do.

// XAttr is one extended attribute: its name, prefix lower case, and value.
type XAttr struct {
	Name  string
	Value []byte
}

// XAttrFlag is a set of HDFS's XAttrSetFlag bits.
type XAttrFlag uint32

// The flags, with HDFS's values (XAttrSetFlag).
const (
	XAttrCreate  XAttrFlag = 1 // the attribute may be new
	XAttrReplace XAttrFlag = 2 // the attribute may exist already
)

// XAttrLimits are HDFS's dfs.namenode.fs-limits.max-xattrs-per-inode and
// max-xattr-size.
type XAttrLimits struct {
	MaxPerInode int
	MaxSize     int
}

// UnreadableBySuperuser is the one security.* attribute a caller may set.
const UnreadableBySuperuser = "security.hdfs.unreadable.by.superuser"

// The messages HDFS's clients match on.
const (
	MsgXAttrNotFound       = "At least one of the attributes provided was not found."
	MsgXAttrRemoveNotFound = "No matching attributes found for remove operation"
)

var xattrPrefixes = []string{"user", "trusted", "system", "security", "raw"}

// attrs is what an inode keeps beyond the common fields once it has
// extended attributes or an access time. It is never changed in place
// (a view may hold it): a change makes a new one.
type attrs struct {
	xattrs   []XAttr // sorted by name
	atime    int64
	hasATime bool
}

func (n *inode) attrs() *attrs {
	if n.ext == nil {
		return nil
	}
	return n.ext.attrs
}

// atime returns n's access time (see above).
func (n *inode) atime() int64 {
	if a := n.attrs(); a != nil && a.hasATime {
		return a.atime
	}
	if n.dir() {
		return 0
	}
	return n.mtime
}

// setAttrs makes a (nil or empty: none) n's attrs. The caller has touched n.
func (n *inode) setAttrs(a *attrs) {
	if a != nil && len(a.xattrs) == 0 && !a.hasATime {
		a = nil
	}
	if a == nil && n.ext == nil {
		return
	}
	n.extForWrite().attrs = a
	if a == nil && !n.dir() {
		n.dropEmptyExt()
	}
}

// copyAttrs returns a copy of n's attrs to change.
func (n *inode) copyAttrs() *attrs {
	a := &attrs{}
	if old := n.attrs(); old != nil {
		*a = *old
		a.xattrs = slices.Clone(old.xattrs)
	}
	return a
}

// NormalizeXAttrName returns name with its prefix lower case, or an
// Invalid error naming op and path p.
func NormalizeXAttrName(op, p, name string) (string, error) {
	prefix, rest, ok := strings.Cut(name, ".")
	if name == "" {
		return "", errs.New(errs.Invalid, op, p, "XAttr name cannot be empty.")
	}
	lower := strings.ToLower(prefix)
	if !ok || !slices.Contains(xattrPrefixes, lower) {
		return "", errs.Newf(errs.Invalid, op, p, "An XAttr name must be prefixed with user/trusted/security/system/raw, followed by a '.' (got %q)", name)
	}
	if rest == "" {
		return "", errs.Newf(errs.Invalid, op, p, "XAttr name cannot be empty (got %q).", name)
	}
	return lower + "." + rest, nil
}

// CheckXAttrSize returns an Invalid error if x, a normalized attribute,
// is over max bytes of name (without its prefix) and value.
func CheckXAttrSize(op, p string, x XAttr, max int) error {
	_, rest, _ := strings.Cut(x.Name, ".")
	if size := len(rest) + len(x.Value); size > max {
		return errs.Newf(errs.Invalid, op, p, "The XAttr is too big. The maximum combined size of the name and value is %d, but the total size is %d", max, size)
	}
	return nil
}

func xattrSpace(name string) string {
	prefix, _, _ := strings.Cut(name, ".")
	return prefix
}

// userVisible reports whether name counts against MaxPerInode.
func userVisible(name string) bool {
	s := xattrSpace(name)
	return s == "user" || s == "trusted"
}

// checkXAttrAPI applies HDFS's namespace rule to caller c naming
// attribute name (with a value, when set says it is being set).
func (c *Caller) checkXAttrAPI(op, p, name string, value []byte, set bool) error {
	if c == nil {
		return nil
	}
	switch s := xattrSpace(name); {
	case s == "user", s == "trusted" && c.Super:
		return nil
	case name == UnreadableBySuperuser:
		if set && len(value) > 0 {
			return errs.Newf(errs.Permission, op, p, "Attempt to set a value for '%s'. Values are not allowed for this xattr.", UnreadableBySuperuser)
		}
		return nil
	}
	return errs.Newf(errs.Permission, op, p, "User doesn't have permission for xattr: %s", name)
}

// visible reports whether c sees attribute name in a listing.
func (c *Caller) visible(name string) bool {
	if c == nil {
		return true
	}
	s := xattrSpace(name)
	return s == "user" || (s == "trusted" && c.Super) || name == UnreadableBySuperuser
}

// checkXAttrChange: set or remove needs Write on n, or, on a directory
// with the sticky bit, to own it.
func (c *Caller) checkXAttrChange(op, p string, n *inode) error {
	if n.dir() && n.mode()&stickyBit != 0 {
		return c.checkOwner(op, p, n)
	}
	return c.check(op, p, n, p, Write, "changing extended attributes needs write access")
}

// SetXAttr sets attribute x (its name normalized) on p, with HDFS's flags
// (at least one of XAttrCreate and XAttrReplace) and limits.
func (s Session) SetXAttr(path Path, x XAttr, flags XAttrFlag, lim XAttrLimits) error {
	op, p, c := s.op, path.s, s.c
	name, err := NormalizeXAttrName(op, p, x.Name)
	if err != nil {
		return err
	}
	x.Name = name
	if flags&(XAttrCreate|XAttrReplace) == 0 || flags&^(XAttrCreate|XAttrReplace) != 0 {
		return errs.Newf(errs.Invalid, op, p, "A flag must be specified (CREATE 1, REPLACE 2 or both; got %d).", flags)
	}
	if err := CheckXAttrSize(op, p, x, lim.MaxSize); err != nil {
		return err
	}
	if err := c.checkXAttrAPI(op, p, name, x.Value, true); err != nil {
		return err
	}
	n, err := s.t.lookupAs(c, op, path)
	if err != nil {
		return err
	}
	if err := c.checkXAttrChange(op, p, n); err != nil {
		return err
	}
	if name == UnreadableBySuperuser && n.dir() {
		return errs.Newf(errs.IsDir, op, p, "Can only set '%s' on a file.", UnreadableBySuperuser)
	}
	a := n.copyAttrs()
	i, found := slices.BinarySearchFunc(a.xattrs, name, func(e XAttr, t string) int { return strings.Compare(e.Name, t) })
	switch {
	case found && flags&XAttrReplace == 0:
		return errs.Newf(errs.Exist, op, p, "XAttr: %s already exists. The REPLACE flag must be specified.", name)
	case !found && flags&XAttrCreate == 0:
		return errs.Newf(errs.NotFound, op, p, "XAttr: %s does not exist. The CREATE flag must be specified.", name)
	}
	x.Value = slices.Clone(x.Value)
	if found {
		a.xattrs[i] = x
	} else {
		if userVisible(name) {
			k := 0
			for _, e := range a.xattrs {
				if userVisible(e.Name) {
					k++
				}
			}
			if k >= lim.MaxPerInode {
				return errs.Newf(errs.Exhausted, op, p, "Cannot add additional XAttr to inode, would exceed limit of %d", lim.MaxPerInode)
			}
		}
		a.xattrs = slices.Insert(a.xattrs, i, x)
	}
	s.t.touch(n)
	n.setAttrs(a)
	return nil
}

// RemoveXAttr removes attribute name from p.
func (s Session) RemoveXAttr(path Path, name string) error {
	op, p, c := s.op, path.s, s.c
	name, err := NormalizeXAttrName(op, p, name)
	if err != nil {
		return err
	}
	if err := c.checkXAttrAPI(op, p, name, nil, false); err != nil {
		return err
	}
	n, err := s.t.lookupAs(c, op, path)
	if err != nil {
		return err
	}
	if err := c.checkXAttrChange(op, p, n); err != nil {
		return err
	}
	if name == UnreadableBySuperuser {
		return errs.Newf(errs.Permission, op, p, "The xattr '%s' can not be deleted.", UnreadableBySuperuser)
	}
	a := n.copyAttrs()
	i := slices.IndexFunc(a.xattrs, func(e XAttr) bool { return e.Name == name })
	if i < 0 {
		return errs.New(errs.NotFound, op, p, MsgXAttrRemoveNotFound)
	}
	a.xattrs = slices.Delete(a.xattrs, i, i+1)
	s.t.touch(n)
	n.setAttrs(a)
	return nil
}

// GetXAttrs returns the named attributes of p (every one the caller may
// see, when names is empty). The caller needs Read on p; a name that is
// not there is a NotFound error with HDFS's message.
func (s Session) GetXAttrs(path Path, names []string) ([]XAttr, error) {
	op, p, c := s.op, path.s, s.c
	want := make([]string, len(names))
	for i, nm := range names {
		name, err := NormalizeXAttrName(op, p, nm)
		if err != nil {
			return nil, err
		}
		if err := c.checkXAttrAPI(op, p, name, nil, false); err != nil {
			return nil, err
		}
		want[i] = name
	}
	n, err := s.t.lookupRead(c, op, path)
	if err != nil {
		return nil, err
	}
	if err := c.check(op, p, n, p, Read, "reading extended attributes needs read access"); err != nil {
		return nil, err
	}
	var have []XAttr
	if a := n.attrs(); a != nil {
		have = a.xattrs
	}
	var out []XAttr
	if len(want) == 0 {
		for _, x := range have {
			if c.visible(x.Name) {
				out = append(out, XAttr{Name: x.Name, Value: slices.Clone(x.Value)})
			}
		}
		return out, nil
	}
	for _, name := range want {
		i := slices.IndexFunc(have, func(e XAttr) bool { return e.Name == name })
		if i < 0 || !c.visible(name) {
			return nil, errs.New(errs.NotFound, op, p, MsgXAttrNotFound)
		}
		if !slices.ContainsFunc(out, func(e XAttr) bool { return e.Name == name }) {
			out = append(out, XAttr{Name: name, Value: slices.Clone(have[i].Value)})
		}
	}
	return out, nil
}

// ListXAttrs returns the attributes of p the caller may see: their names
// (Exec on the ancestors is enough, as in HDFS), with their values too
// when the caller may read p (HDFS's listXAttrs reply carries them).
func (s Session) ListXAttrs(path Path) ([]XAttr, error) {
	c := s.c
	n, err := s.t.lookupRead(c, s.op, path)
	if err != nil {
		return nil, err
	}
	a := n.attrs()
	if a == nil {
		return nil, nil
	}
	read := c.permits(n, Read)
	var out []XAttr
	for _, x := range a.xattrs {
		if !c.visible(x.Name) {
			continue
		}
		e := XAttr{Name: x.Name}
		if read {
			e.Value = slices.Clone(x.Value)
		}
		out = append(out, e)
	}
	return out, nil
}

// SetTimes sets p's mtime and access time (ms since the epoch); -1 leaves
// one as it is. The caller needs Write on p (HDFS's rule; a superuser
// passes).
func (s Session) SetTimes(path Path, mtimeMs, atimeMs int64) error {
	op, p, c := s.op, path.s, s.c
	if mtimeMs < -1 || atimeMs < -1 {
		return errs.Newf(errs.Invalid, op, p, "times %d and %d: want -1 (unchanged) or ms since the epoch", mtimeMs, atimeMs)
	}
	n, err := s.t.lookupAs(c, op, path)
	if err != nil {
		return err
	}
	if err := c.check(op, p, n, p, Write, "setting times needs write access"); err != nil {
		return err
	}
	s.t.touch(n)
	if atimeMs == -1 && mtimeMs != -1 && !n.dir() {
		if a := n.attrs(); a == nil || !a.hasATime {
			atimeMs = n.mtime // the access time a file reported stays
		}
	}
	if mtimeMs != -1 {
		n.mtime = mtimeMs
	}
	if atimeMs != -1 {
		a := n.copyAttrs()
		a.atime, a.hasATime = atimeMs, true
		n.setAttrs(a)
	}
	return nil
}

// unreadableBy reports whether the superuser c may not read file n's data.
func (c *Caller) unreadableBy(n *inode) bool {
	if c == nil || !c.Super {
		return false
	}
	a := n.attrs()
	return a != nil && slices.ContainsFunc(a.xattrs, func(e XAttr) bool { return e.Name == UnreadableBySuperuser })
}
