package fsm

import (
	"encoding/binary"
	"io"
	"slices"
	"sort"
	"time"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/security"
)

// Token-signing keys. Every namenode signs with its own Ed25519 key (any
// namenode may serve GetBlockLocations). It publishes the public half
// through Raft (CmdRegisterKey) before signing with it, so every namenode
// holds every key and hands the set to datanodes in heartbeat replies; the
// leader prunes keys that can no longer have signed a live token.

func (f *FSM) applyRegisterKey(c *api.RegisterKeyCommand) (*api.CommandResult, error) {
	const op = "RegisterKey"
	var pk security.PublicKey
	if err := pk.UnmarshalBinary(c.PublicKey); err != nil {
		return nil, errs.Wrap(errs.Invalid, op, "", err)
	}
	if owner := security.KeyOwner(pk.KID); c.Proposer == "" || owner != c.Proposer {
		return nil, errs.Newf(errs.Permission, op, pk.KID, "key of namenode %q proposed by %q: a namenode may only publish its own keys", owner, c.Proposer)
	}
	if old, ok := f.st.keys[pk.KID]; ok && string(old) != string(c.PublicKey) {
		return nil, errs.New(errs.Exist, op, pk.KID, "a different key has this kid")
	}
	f.st.keys[pk.KID] = slices.Clone(c.PublicKey)
	return nil, nil
}

func (f *FSM) applyPruneKeys(c *api.PruneKeysCommand) (*api.CommandResult, error) {
	cutoff := time.UnixMilli(c.CutoffUnixMs)
	for kid, b := range f.st.keys {
		var pk security.PublicKey
		if err := pk.UnmarshalBinary(b); err != nil || pk.NotAfter.Before(cutoff) {
			delete(f.st.keys, kid)
		}
	}
	return nil, nil
}

// PublicKeys returns the published keys, sorted by kid, each in
// security.PublicKey binary encoding.
func (f *FSM) PublicKeys() [][]byte {
	defer f.mu.RLock().RUnlock()
	kids := make([]string, 0, len(f.st.keys))
	for kid := range f.st.keys {
		kids = append(kids, kid)
	}
	sort.Strings(kids)
	out := make([][]byte, len(kids))
	for i, kid := range kids {
		out[i] = f.st.keys[kid]
	}
	return out
}

// HasKeyIDs reports whether ids includes every published key (a datanode
// may still hold keys pruned here; it prunes them by time itself).
func (f *FSM) HasKeyIDs(ids []string) bool {
	defer f.mu.RLock().RUnlock()
	if len(ids) < len(f.st.keys) {
		return false
	}
	for kid := range f.st.keys {
		if !slices.Contains(ids, kid) {
			return false
		}
	}
	return true
}

// PublicKey returns the published key kid, in security.PublicKey binary
// encoding (shared: the caller must not change it).
func (f *FSM) PublicKey(kid string) ([]byte, bool) {
	defer f.mu.RLock().RUnlock()
	b, ok := f.st.keys[kid]
	return b, ok
}

// writeKeys appends the key section of a snapshot: count (u32), then per
// key (sorted by kid) length (u32) and the encoding.
func writeKeys(w io.Writer, keys map[string][]byte) error {
	kids := make([]string, 0, len(keys))
	for kid := range keys {
		kids = append(kids, kid)
	}
	sort.Strings(kids)
	var hdr [4]byte
	binary.LittleEndian.PutUint32(hdr[:], uint32(len(kids)))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	for _, kid := range kids {
		binary.LittleEndian.PutUint32(hdr[:], uint32(len(keys[kid])))
		if _, err := w.Write(hdr[:]); err != nil {
			return err
		}
		if _, err := w.Write(keys[kid]); err != nil {
			return err
		}
	}
	return nil
}

func readKeys(r io.Reader) (map[string][]byte, error) {
	corrupt := func(msg string) error { return errs.New(errs.Corrupt, "fsm.FSM.Restore", "", msg) }
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, corrupt("truncated key count")
	}
	n := binary.LittleEndian.Uint32(hdr[:])
	if n > 1<<16 {
		return nil, corrupt("implausible key count")
	}
	keys := make(map[string][]byte, n)
	for range n {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return nil, corrupt("truncated key")
		}
		size := binary.LittleEndian.Uint32(hdr[:])
		if size > 4096 {
			return nil, corrupt("implausible key size")
		}
		b := make([]byte, size)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, corrupt("truncated key")
		}
		var pk security.PublicKey
		if err := pk.UnmarshalBinary(b); err != nil {
			return nil, corrupt("bad key: " + err.Error())
		}
		keys[pk.KID] = b
	}
	return keys, nil
}
