package namenode

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/blockfs/blockfs/security"
)

// authEnv answers the authorizer's questions (security.Env) from this
// node's configuration, group mapping and Raft configuration.
type authEnv struct{ n *Namenode }

// IsSuperuser: the configured superuser, or a member of the supergroup by
// the namenode's own group mapping.
func (e authEnv) IsSuperuser(user string) bool {
	n := e.n
	return user == n.cfg.Namespace.Superuser || slices.Contains(n.groups.Groups(user), n.cfg.Namespace.Supergroup)
}

// IsMember: name is a server of the Raft configuration (voter or not)
// and not a revoked namenode identity.
func (e authEnv) IsMember(name string) bool {
	return e.n.members.has(e.n, name) && e.n.revoked.Check(nil, security.Identity{Role: security.RoleNamenode, Name: name}) == nil
}

// memberCache holds the ids of the Raft configuration for lock-free
// lookups on every NamenodeInternal call. Any lookup more than
// memberRefresh after the last reread rereads the configuration (one
// caller at a time; the others use what is cached), so a server removed
// from the configuration is refused within about memberRefresh, a newly
// added one admitted as soon, and no caller can make every call a Raft
// round trip.
type memberCache struct {
	ids  atomic.Pointer[[]string]
	last atomic.Int64 // unix nanos of the last reread
}

const memberRefresh = 100 * time.Millisecond

func (m *memberCache) has(n *Namenode, id string) bool {
	now := time.Now().UnixNano()
	if last := m.last.Load(); now-last >= int64(memberRefresh) && n.raft != nil && m.last.CompareAndSwap(last, now) {
		if f := n.raft.GetConfiguration(); f.Error() == nil {
			ids := make([]string, 0, len(f.Configuration().Servers))
			for _, s := range f.Configuration().Servers {
				ids = append(ids, string(s.ID))
			}
			m.ids.Store(&ids)
		}
	}
	p := m.ids.Load()
	return p != nil && slices.Contains(*p, id)
}

// ReloadGroups rereads the group mapping file (the namenode command calls
// it on SIGHUP). On error the old mapping stays in force.
func (n *Namenode) ReloadGroups() error {
	if err := n.groups.Reload(); err != nil {
		return err
	}
	n.log.Info("group mapping reloaded", "file", n.groups.File(), "users", n.groups.Users())
	return nil
}

var _ security.Env = authEnv{}
