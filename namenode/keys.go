package namenode

import (
	"context"
	"encoding/binary"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/security"
)

// Token-signing keys. Every namenode signs with its own Ed25519 key (any
// namenode may serve GetBlockLocations). It publishes the public half
// through Raft (cmdRegisterKey) before signing with it, so every namenode
// holds every key and hands the set to datanodes in heartbeat replies; the
// leader prunes keys that can no longer have signed a live token.

func (f *fsm) applyRegisterKey(c *api.RegisterKeyCommand) error {
	var pk security.PublicKey
	if err := pk.UnmarshalBinary(c.PublicKey); err != nil {
		return errs.Wrap(errs.Invalid, "register key", "", err)
	}
	if owner := keyOwner(pk.KID); c.Proposer == "" || owner != c.Proposer {
		return errs.Newf(errs.Permission, "register key", pk.KID, "key of namenode %q proposed by %q: a namenode may only publish its own keys", owner, c.Proposer)
	}
	if old, ok := f.st.keys[pk.KID]; ok && string(old) != string(c.PublicKey) {
		return errs.New(errs.Exist, "register key", pk.KID, "a different key has this kid")
	}
	f.st.keys[pk.KID] = slices.Clone(c.PublicKey)
	f.keysVersion.Add(1)
	return nil
}

// keyOwner is the namenode whose key kid is: kids are "<node id>-<hex>"
// (security.GenerateKeyPair).
func keyOwner(kid string) string {
	if i := strings.LastIndexByte(kid, '-'); i > 0 {
		return kid[:i]
	}
	return ""
}

func (f *fsm) applyPruneKeys(c *api.PruneKeysCommand) {
	cutoff := time.UnixMilli(c.CutoffUnixMs)
	for kid, b := range f.st.keys {
		var pk security.PublicKey
		if err := pk.UnmarshalBinary(b); err != nil || pk.NotAfter.Before(cutoff) {
			delete(f.st.keys, kid)
			f.keysVersion.Add(1)
		}
	}
}

// publicKeys returns the published keys, sorted by kid.
func (f *fsm) publicKeys() [][]byte {
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

// hasKeyIDs reports whether ids includes every published key (a datanode
// may still hold keys pruned here; it prunes them by time itself).
func (f *fsm) hasKeyIDs(ids []string) bool {
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

func (f *fsm) hasKey(kid string) bool {
	defer f.mu.RLock().RUnlock()
	_, ok := f.st.keys[kid]
	return ok
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
	corrupt := func(msg string) error { return errs.New(errs.Corrupt, "restore snapshot", "", msg) }
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

// keyLoop keeps this node's signing key current: it makes a key, publishes
// it through Raft, and only then signs with it; it rotates on schedule.
// The leader also prunes dead keys. Datanodes that meet a token signed by a
// key they have not heard of yet fetch the key set again (GetKeys), so a
// fresh key is usable at once.
func (n *Namenode) keyLoop() {
	defer n.wg.Done()
	cfg := n.cfg.Security
	retry := 50 * time.Millisecond
	for {
		now := time.Now()
		if n.rotationDue(now) {
			if err := n.rotateKey(now); err != nil {
				n.log.Debug("key rotation not done yet", "err", err)
				select {
				case <-n.stop:
					return
				case <-time.After(retry):
				}
				retry = min(2*retry, 2*time.Second, cfg.KeyRotation/16)
				continue
			}
			retry = 50 * time.Millisecond
		}
		if n.isReadyLeader() {
			n.pruneKeys(now, cfg)
		}
		wait := time.Until(n.rotateAt())
		select {
		case <-n.stop:
			return
		case <-time.After(min(max(wait, time.Millisecond), time.Minute)):
		}
	}
}

// rotateAt is when the current key is replaced: at three quarters of
// KeyRotation, so the new key is published through Raft well before the
// old one stops being usable (a token's exp must fit in its key's window).
func (n *Namenode) rotateAt() time.Time {
	kp := n.keys.Current()
	if kp == nil {
		return time.Time{}
	}
	return kp.NotBefore.Add(n.cfg.Security.KeyRotation * 3 / 4)
}

func (n *Namenode) rotationDue(now time.Time) bool { return !now.Before(n.rotateAt()) }

func (n *Namenode) rotateKey(now time.Time) error {
	cfg := n.cfg.Security
	kp, err := security.GenerateKeyPair(cfg.NodeID, now, cfg.KeyRotation, cfg.TokenLifetime)
	if err != nil {
		return err
	}
	pub, err := kp.PublicKey().MarshalBinary()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.ApplyTimeout)
	defer cancel()
	if _, _, err := n.propose(ctx, cmdRegisterKey, &api.RegisterKeyCommand{PublicKey: pub, Proposer: n.cfg.ID}); err != nil {
		return err
	}
	if err := n.keys.Install(kp); err != nil {
		return err
	}
	n.log.Info("token signing key rotated", "kid", kp.KID)
	return nil
}

func (n *Namenode) pruneKeys(now time.Time, cfg security.Config) {
	cutoff := now.Add(-(cfg.TokenLifetime + cfg.ClockSkew))
	stale := false
	for _, b := range n.fsm.publicKeys() {
		var pk security.PublicKey
		if pk.UnmarshalBinary(b) == nil && pk.NotAfter.Before(cutoff) {
			stale = true
			break
		}
	}
	if !stale {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.ApplyTimeout)
	defer cancel()
	if _, _, err := n.propose(ctx, cmdPruneKeys, &api.PruneKeysCommand{CutoffUnixMs: cutoff.UnixMilli()}); err != nil {
		n.log.Warn("prune keys", "err", err)
	}
}

// TokensReady reports whether this node has a published signing key.
func (n *Namenode) TokensReady() bool {
	kp := n.keys.Current()
	return kp != nil && n.fsm.hasKey(kp.KID)
}

// TokenMode returns the configured token mode.
func (n *Namenode) TokenMode() security.Mode { return n.cfg.Security.Mode }

// fillReadTokens signs the read token(s) of a GetBlockLocations response,
// per the token mode. It runs after the FSM lock is released: a thousand
// per-block signatures must not hold up writers.
func (n *Namenode) fillReadTokens(user string, out *api.GetBlockLocationsResponse) error {
	if n.cfg.Security.Mode == security.PerBlock {
		toks := out.BlockTokens[:0] // a recycled reply's array (replies.go)
		for i, id := range out.BlockIds {
			tok, err := n.issuer.BlockToken(user, out.InodeId, id, out.GenStamps[i], security.Read)
			if err != nil {
				return err
			}
			toks = append(toks, tok)
		}
		out.BlockTokens = toks
		return nil
	}
	tok, err := n.issuer.FileToken(user, out.InodeId, security.Read)
	if err != nil {
		return err
	}
	out.Token = tok
	return nil
}
