package fsm

import (
	"crypto/sha256"
	"io"
	"sort"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
)

// The replicated datanode admin-state table (docs/ARCHITECTURE.md,
// "Datanode states"): one row per datanode that is not Normal, by
// datanode id, changed only by CmdSetAdminState. After every change and
// every restore the FSM tells its BlockEvents the whole table, if they
// are an AdminStateRecorder, so every namenode's block map counts the
// same replicas as the leader's.

// maxAdminStates bounds the table (a snapshot with more is corrupt, a
// command that would exceed it is refused).
const maxAdminStates = 1 << 16

// AdminStateRecorder is a BlockEvents that also learns the admin-state
// table. AdminStates is called with the FSM's write lock held.
type AdminStateRecorder interface {
	AdminStates(entries []*api.AdminStateEntry)
}

// AdminStateCommand builds a CmdSetAdminState command for entries,
// stamped with the proposer's caller by and clock now so that every
// namenode applies the same rows. from, if non-nil, is the state every
// named datanode must be in for the command to apply.
func AdminStateCommand(entries []*api.AdminStateEntry, from *api.AdminState, by string, now time.Time) *api.SetAdminStateCommand {
	c := &api.SetAdminStateCommand{Entries: make([]*api.AdminStateEntry, len(entries))}
	for i, e := range entries {
		e = proto.Clone(e).(*api.AdminStateEntry)
		e.SetBy, e.SetUnixMs = by, now.UnixMilli()
		c.Entries[i] = e
	}
	if from != nil {
		c.CheckFrom, c.From = true, *from
	}
	return c
}

func (f *FSM) applySetAdminState(c *api.SetAdminStateCommand) (*api.CommandResult, error) {
	const op = "SetAdminState"
	if len(c.Entries) == 0 {
		return nil, errs.New(errs.Invalid, op, "", "no datanode named")
	}
	seen := make(map[string]bool, len(c.Entries))
	added := 0
	for _, e := range c.Entries {
		if err := checkAdminEntry(op, e); err != nil {
			return nil, err
		}
		if seen[e.DatanodeId] {
			return nil, errs.New(errs.Invalid, op, e.DatanodeId, "named twice")
		}
		seen[e.DatanodeId] = true
		cur := f.st.admin[e.DatanodeId].GetState() // NORMAL when absent
		if c.CheckFrom && cur != c.From {
			return nil, errs.Newf(errs.Precondition, op, e.DatanodeId, "datanode is %v, not %v", cur, c.From)
		}
		if _, ok := f.st.admin[e.DatanodeId]; !ok && e.State != api.AdminState_ADMIN_NORMAL {
			added++
		}
	}
	if len(f.st.admin)+added > maxAdminStates {
		return nil, errs.Newf(errs.Exhausted, op, "", "the admin-state table holds %d datanodes, the most it may", maxAdminStates)
	}
	for _, e := range c.Entries {
		if e.State == api.AdminState_ADMIN_NORMAL {
			delete(f.st.admin, e.DatanodeId)
		} else {
			f.st.admin[e.DatanodeId] = proto.Clone(e).(*api.AdminStateEntry)
		}
	}
	f.publishAdmin()
	return nil, nil
}

// checkAdminEntry checks one row as a command or a snapshot carries it.
func checkAdminEntry(op string, e *api.AdminStateEntry) error {
	switch {
	case e == nil || e.DatanodeId == "":
		return errs.New(errs.Invalid, op, "", "an entry without a datanode id")
	case len(e.DatanodeId) > 1024:
		return errs.New(errs.Invalid, op, "", "datanode id too long")
	case api.AdminState_name[int32(e.State)] == "":
		return errs.Newf(errs.Invalid, op, e.DatanodeId, "unknown admin state %d", e.State)
	case e.SetBy == "" || e.SetUnixMs <= 0:
		return errs.New(errs.Invalid, op, e.DatanodeId, "an entry needs who set it and when")
	}
	maint := e.State == api.AdminState_ADMIN_ENTERING_MAINTENANCE || e.State == api.AdminState_ADMIN_IN_MAINTENANCE
	if maint && (e.ExpiryUnixMs <= 0 || e.MinReplicas < 1) {
		return errs.New(errs.Invalid, op, e.DatanodeId, "a maintenance needs an expiry and min replicas of at least 1")
	}
	if !maint && (e.ExpiryUnixMs != 0 || e.MinReplicas != 0) {
		return errs.New(errs.Invalid, op, e.DatanodeId, "only a maintenance has an expiry and min replicas")
	}
	return nil
}

// publishAdmin tells the block events the table. With f.mu held.
func (f *FSM) publishAdmin() {
	if r, ok := f.events.(AdminStateRecorder); ok {
		r.AdminStates(f.adminList())
	}
}

// adminList returns the table's rows sorted by datanode id (copies).
// With f.mu held.
func (f *FSM) adminList() []*api.AdminStateEntry {
	ids := make([]string, 0, len(f.st.admin))
	for id := range f.st.admin {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	out := make([]*api.AdminStateEntry, len(ids))
	for i, id := range ids {
		out[i] = proto.Clone(f.st.admin[id]).(*api.AdminStateEntry)
	}
	return out
}

// AdminStates returns the admin-state table's rows, sorted by datanode
// id: every datanode that is not Normal.
func (f *FSM) AdminStates() []*api.AdminStateEntry {
	defer f.mu.RLock().RUnlock()
	return f.adminList()
}

// writeAdmin appends the admin-state section of a snapshot (BFSNAP05):
// count (u32), then per row, sorted by datanode id, length (u32) and the
// deterministic protobuf of the api.AdminStateEntry.
func writeAdmin(w io.Writer, m map[string]*api.AdminStateEntry) error { return writeTable(w, m) }

func readAdmin(r io.Reader) (map[string]*api.AdminStateEntry, error) {
	corrupt := func(msg string) error { return errs.New(errs.Corrupt, "fsm.FSM.Restore", "", msg) }
	m := map[string]*api.AdminStateEntry{}
	err := readTable(r, "admin-state", maxAdminStates, func() *api.AdminStateEntry { return &api.AdminStateEntry{} }, func(e *api.AdminStateEntry) error {
		if err := checkAdminEntry("fsm.FSM.Restore", e); err != nil || e.State == api.AdminState_ADMIN_NORMAL {
			return corrupt("bad admin-state entry for " + e.DatanodeId)
		}
		if _, dup := m[e.DatanodeId]; dup {
			return corrupt("admin-state entry twice for " + e.DatanodeId)
		}
		m[e.DatanodeId] = e
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// adminHash is the SHA-256 of the admin-state section, mixed into Hash
// when the table is not empty.
func adminHash(m map[string]*api.AdminStateEntry) [32]byte {
	var b byteBuffer
	_ = writeAdmin(&b, m) // a byteBuffer never fails
	return sha256.Sum256(b.b)
}
