package fsm

import (
	"crypto/sha256"
	"io"
	"sort"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/security"
)

// The replicated deny list (security/revoke.go, docs/SECURITY.md
// "Revoking a certificate"): entries by key ("serial:…", "sha256:…",
// "identity:<role>/<name>"), changed only by CmdRevoke and CmdUnrevoke.
// After every change and every restore the FSM publishes the list as an
// immutable security.DenyList through Config.Revocations, which every
// handshake and call of the node checks with one atomic load.

// maxRevoked bounds the deny list (a snapshot with more is corrupt, a
// command that would exceed it is refused).
const maxRevoked = 1 << 16

// RevokeCommand builds the command of Admin.Revoke (t is CmdRevoke) or
// Admin.Unrevoke (CmdUnrevoke) for e: the entry normalized, stamped with
// the proposer's caller by and clock now, so that every namenode applies
// the same entry.
func RevokeCommand(t CmdType, e *api.RevokedEntry, by string, now time.Time) (proto.Message, error) {
	n, _, err := security.NormalizeRevoked(e)
	if err != nil {
		return nil, err
	}
	if t == CmdUnrevoke {
		return &api.UnrevokeCommand{Entry: n}, nil
	}
	n.RevokedBy, n.RevokedUnixMs = by, now.UnixMilli()
	return &api.RevokeCommand{Entry: n}, nil
}

func (f *FSM) applyRevoke(c *api.RevokeCommand) (*api.CommandResult, error) {
	const op = "Revoke"
	e, key, err := security.NormalizeRevoked(c.GetEntry())
	if err != nil {
		return nil, errs.WithOp(err, op)
	}
	if e.RevokedBy == "" || e.RevokedUnixMs <= 0 {
		return nil, errs.New(errs.Invalid, op, key, "an entry needs who revoked it and when")
	}
	if _, ok := f.st.revoked[key]; !ok && len(f.st.revoked) >= maxRevoked {
		return nil, errs.Newf(errs.Exhausted, op, key, "the deny list holds %d entries, the most it may", maxRevoked)
	}
	f.st.revoked[key] = e
	f.publishRevoked()
	return nil, nil
}

func (f *FSM) applyUnrevoke(c *api.UnrevokeCommand) (*api.CommandResult, error) {
	const op = "Unrevoke"
	_, key, err := security.NormalizeRevoked(c.GetEntry())
	if err != nil {
		return nil, errs.WithOp(err, op)
	}
	if _, ok := f.st.revoked[key]; !ok {
		return nil, errs.New(errs.NotFound, op, key, "not on the deny list")
	}
	delete(f.st.revoked, key)
	f.publishRevoked()
	return nil, nil
}

// publishRevoked makes the state's deny list the one the node checks. It
// runs under the write lock, after every change and restore.
func (f *FSM) publishRevoked() {
	if f.revocations == nil {
		return
	}
	list := make([]*api.RevokedEntry, 0, len(f.st.revoked))
	for _, e := range f.st.revoked {
		list = append(list, e)
	}
	f.revocations.Store(security.NewDenyList(list))
}

// Revoked returns the deny list's entries, sorted by key (copies).
func (f *FSM) Revoked() []*api.RevokedEntry {
	defer f.mu.RLock().RUnlock()
	keys := sortedKeys(f.st.revoked)
	out := make([]*api.RevokedEntry, len(keys))
	for i, k := range keys {
		out[i] = proto.Clone(f.st.revoked[k]).(*api.RevokedEntry)
	}
	return out
}

// Revocations is where the FSM publishes its deny list (Config.Revocations).
func (f *FSM) Revocations() *security.Revocations { return f.revocations }

func sortedKeys(m map[string]*api.RevokedEntry) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// writeRevoked appends the deny-list section of a snapshot (BFSNAP04):
// count (u32), then per entry, sorted by key, length (u32) and the
// deterministic protobuf of the api.RevokedEntry.
func writeRevoked(w io.Writer, m map[string]*api.RevokedEntry) error { return writeTable(w, m) }

func readRevoked(r io.Reader) (map[string]*api.RevokedEntry, error) {
	m := map[string]*api.RevokedEntry{}
	err := readTable(r, "deny-list", maxRevoked, func() *api.RevokedEntry { return &api.RevokedEntry{} }, func(e *api.RevokedEntry) error {
		ne, key, err := security.NormalizeRevoked(e)
		if err != nil {
			return errs.New(errs.Corrupt, "fsm.FSM.Restore", "", "bad deny-list entry: "+err.Error())
		}
		m[key] = ne
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// revokedHash is the SHA-256 of the deny-list section, mixed into Hash
// when the list is not empty.
func revokedHash(m map[string]*api.RevokedEntry) [32]byte {
	var b byteBuffer
	_ = writeRevoked(&b, m) // a byteBuffer never fails
	return sha256.Sum256(b.b)
}
