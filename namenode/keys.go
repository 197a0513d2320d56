package namenode

import (
	"context"
	"time"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/namenode/fsm"
	"github.com/blockfs/blockfs/security"
)

// keyLoop keeps this node's signing key current: it makes a key, publishes
// it through Raft, and only then signs with it; it rotates on schedule.
// The leader also prunes dead keys. Datanodes that meet a token signed by a
// key they have not heard of yet fetch the key set again (GetKeys), so a
// fresh key is usable at once.
func (n *Namenode) keyLoop() {
	defer n.wg.Done()
	cfg := n.cfg.Tokens
	retry := 50 * time.Millisecond
	for {
		now := n.now()
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
	return kp.NotBefore.Add(n.cfg.Tokens.KeyRotation * 3 / 4)
}

func (n *Namenode) rotationDue(now time.Time) bool { return !now.Before(n.rotateAt()) }

func (n *Namenode) rotateKey(now time.Time) error {
	cfg := n.cfg.Tokens
	kp, err := security.GenerateKeyPair(cfg.NodeID, now, cfg.KeyRotation, cfg.TokenLifetime)
	if err != nil {
		return err
	}
	pub, err := kp.PublicKey().MarshalBinary()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.Raft.ApplyTimeout)
	defer cancel()
	if _, _, err := n.propose(ctx, "RegisterKey", fsm.CmdRegisterKey, &api.RegisterKeyCommand{PublicKey: pub, Proposer: n.cfg.ID}); err != nil {
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
	for _, b := range n.fsm.PublicKeys() {
		var pk security.PublicKey
		if pk.UnmarshalBinary(b) == nil && pk.NotAfter.Before(cutoff) {
			stale = true
			break
		}
	}
	if !stale {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.Raft.ApplyTimeout)
	defer cancel()
	if _, _, err := n.propose(ctx, "PruneKeys", fsm.CmdPruneKeys, &api.PruneKeysCommand{CutoffUnixMs: cutoff.UnixMilli()}); err != nil {
		n.log.Warn("prune keys", "err", err)
	}
}

// TokensReady reports whether this node has a published signing key.
func (n *Namenode) TokensReady() bool {
	kp := n.keys.Current()
	if kp == nil {
		return false
	}
	_, ok := n.fsm.PublicKey(kp.KID)
	return ok
}

// TokenMode returns the configured token mode.
func (n *Namenode) TokenMode() security.Mode { return n.cfg.Tokens.Mode }

// fillReadTokens signs the read token(s) of a GetBlockLocations response,
// per the token mode. It runs after the FSM lock is released: a thousand
// per-block signatures must not hold up writers.
func (n *Namenode) fillReadTokens(user string, out *api.GetBlockLocationsResponse) error {
	if n.cfg.Tokens.Mode == security.PerBlock {
		toks := out.BlockTokens[:0] // a recycled reply's array (package locreply)
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
