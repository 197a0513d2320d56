package namenode

import (
	"path"
	"slices"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/namespace"
)

// Permission checks run inside the FSM, so they are atomic with the change
// they guard. A nil caller is the namenode itself (superuser).

func (f *fsm) user(c *api.Caller) (namespace.User, bool) {
	if c == nil || c.User == "" {
		return namespace.User{}, false
	}
	return namespace.User{Name: c.User, Groups: c.Groups}, true
}

func (f *fsm) groupOf(c *api.Caller) string {
	if c == nil || len(c.Groups) == 0 {
		return f.supergroup
	}
	return c.Groups[0]
}

// checkParent checks access a on the parent directory of p.
func (f *fsm) checkParent(c *api.Caller, p string, a namespace.Access) error {
	u, ok := f.user(c)
	if !ok {
		return nil
	}
	return f.st.tree.CheckParentAccess(u, f.superuser, p, a)
}

// checkAncestorWrite checks write access on the deepest existing ancestor of
// p, which is the directory mkdirs -p or create-with-parents modifies.
func (f *fsm) checkAncestorWrite(c *api.Caller, p string) error {
	u, ok := f.user(c)
	if !ok {
		return nil
	}
	if err := namespace.ValidatePath(p, namespace.DefaultLimits()); err != nil {
		return err
	}
	dir := path.Dir(p)
	for dir != "/" {
		if _, err := f.st.tree.Stat(dir); err == nil {
			break
		} else if !errs.Is(err, errs.NotFound) {
			return err
		}
		dir = path.Dir(dir)
	}
	return f.st.tree.CheckAccess(u, f.superuser, dir, namespace.Write|namespace.Exec)
}

// checkRemove checks that c may unlink p from its parent (delete or rename
// source), including the sticky-bit rule.
func (f *fsm) checkRemove(c *api.Caller, p string) error {
	u, ok := f.user(c)
	if !ok {
		return nil
	}
	return f.st.tree.CheckParentAccess(u, f.superuser, p, namespace.Write|namespace.Exec)
}

// checkTraverse checks that c may look p up: exec on every ancestor.
func (f *fsm) checkTraverse(c *api.Caller, p string) error {
	u, ok := f.user(c)
	if !ok || p == "/" {
		return nil
	}
	return f.st.tree.CheckParentAccess(u, f.superuser, p, namespace.Exec)
}

// checkOwner checks that c owns p (or is the superuser): chmod.
func (f *fsm) checkOwner(c *api.Caller, p string) error {
	u, ok := f.user(c)
	if !ok {
		return nil
	}
	return f.st.tree.CheckOwner(u, f.superuser, p)
}

// checkChown applies HDFS's chown rules: only the superuser may change the
// owner; the owner may change the group to one of their own groups.
func (f *fsm) checkChown(c *api.Caller, p, owner, group string) error {
	u, ok := f.user(c)
	if !ok || u.Name == f.superuser {
		return nil
	}
	if owner != "" {
		return errs.Newf(errs.Permission, "chown", p, "only the superuser may change the owner (caller %s)", u.Name)
	}
	if err := f.st.tree.CheckOwner(u, f.superuser, p); err != nil {
		return err
	}
	if group != "" && !slices.Contains(u.Groups, group) {
		return errs.Newf(errs.Permission, "chown", p, "user %s is not in group %s", u.Name, group)
	}
	return nil
}
