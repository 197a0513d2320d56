package fsm

import (
	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/namespace"
)

// Permission checks run inside the FSM (and under its read lock for
// reads), on the inodes each operation resolves, so they are atomic with
// the change they guard; package namespace implements HDFS's rules
// (docs/SECURITY.md). Everything they use is in the command (user, groups,
// client id) or the configuration (superuser, supergroup), so every
// namenode decides alike.

// policy says who is a superuser: the configured superuser and the members
// of the configured supergroup.
func (f *FSM) policy() namespace.Policy {
	return namespace.Policy{Superuser: f.superuser, Supergroup: f.supergroup}
}

// as returns the namespace session of caller c. A nil caller is the
// namenode itself, which passes every check; a caller without a user name
// (one the server could not identify) is refused everything.
func (f *FSM) as(c *api.Caller, op, p string) (namespace.Session, error) {
	if c == nil {
		return f.st.tree.As(nil, op), nil
	}
	return f.asIn(new(namespace.Caller), c.User, c.Groups, c.ClientId, op, p)
}

// asReader is as for a read by user with groups (no client id), building
// the namespace caller in *nc, which the read provides so that its session
// needs no heap allocation.
func (f *FSM) asReader(nc *namespace.Caller, user string, groups []string, op, p string) (namespace.Session, error) {
	return f.asIn(nc, user, groups, "", op, p)
}

// asIn builds the namespace caller of user in *nc and returns its session;
// an empty user (one the server could not identify) is refused.
func (f *FSM) asIn(nc *namespace.Caller, user string, groups []string, clientID, op, p string) (namespace.Session, error) {
	if user == "" {
		return namespace.Session{}, errs.New(errs.Unauthenticated, op, p, "the caller has no user name")
	}
	*nc = *f.policy().Caller(user, groups, clientID)
	return f.st.tree.As(nc, op), nil
}

// asPath parses p, a command's path, as the command applies (the log is
// input too; the error is the one the RPC edge gives) and returns it with
// the session of caller c for op.
func (f *FSM) asPath(c *api.Caller, op, p string) (namespace.Session, namespace.Path, error) {
	pp, err := namespace.ParsePath(p)
	if err != nil {
		return namespace.Session{}, namespace.Path{}, errs.WithOp(err, op)
	}
	s, err := f.as(c, op, p)
	return s, pp, err
}

// writerCommand is a command of a file's writer on its open file, named
// by path and inode.
type writerCommand interface {
	GetCaller() *api.Caller
	GetPath() string
	GetInodeId() uint64
}

// asWriter is the prologue of a writer's command: refused while the file's
// lease is being recovered (the recovery owns the last block), then the
// caller's session for op and the parsed path.
func (f *FSM) asWriter(op string, c writerCommand) (namespace.Session, namespace.Path, error) {
	if err := f.notRecovering(op, c.GetPath(), c.GetInodeId()); err != nil {
		return namespace.Session{}, namespace.Path{}, err
	}
	return f.asPath(c.GetCaller(), op, c.GetPath())
}
