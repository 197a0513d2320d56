package datanode

import (
	"context"
	"sync"
	"time"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/security"
)

// tokens checks block access tokens on every ReadBlock, WriteBlock and
// TransferBlock. The datanode holds only public keys: it learns them from
// GetKeys at start and from heartbeat replies, merges what every namenode
// sends (namenodes may be at different Raft indexes), and prunes by time.
// A token naming a key it has not heard of makes it ask the namenodes
// again, at most once per refreshEvery, before refusing (a key is published
// through Raft before it signs, but the heartbeat carrying it may not have
// arrived yet; HDFS-17383 is what happens without this).
type tokens struct {
	d      *Datanode
	keys   *security.KeySet
	verify *security.Verifier
	now    func() time.Time

	refreshMu   sync.Mutex
	lastRefresh time.Time
}

const refreshEvery = 200 * time.Millisecond

func newTokens(d *Datanode, cfg security.Config) (*tokens, error) {
	keys := security.NewKeySet(cfg.TokenLifetime, cfg.ClockSkew)
	v, err := security.NewVerifier(cfg, keys, d.reg)
	if err != nil {
		return nil, err
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &tokens{d: d, keys: keys, verify: v, now: now}, nil
}

// merge adds encoded public keys to the key set and prunes expired ones.
func (t *tokens) merge(encoded [][]byte) {
	for _, b := range encoded {
		var pk security.PublicKey
		if err := pk.UnmarshalBinary(b); err != nil {
			t.d.log.Warn("namenode sent a malformed key", "err", err)
			continue
		}
		if err := t.keys.Add(pk); err != nil && !errs.Is(err, errs.Exist) {
			t.d.log.Warn("namenode sent a key that does not fit", "kid", pk.KID, "err", err)
		}
	}
	t.keys.Prune(t.now())
}

// keyIDs lists the kids held, for heartbeats.
func (t *tokens) keyIDs() []string {
	ks := t.keys.Keys()
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.KID
	}
	return out
}

// refresh asks every namenode for its key set. It reports whether it ran
// (false: one ran within refreshEvery).
func (t *tokens) refresh(ctx context.Context) bool {
	t.refreshMu.Lock()
	defer t.refreshMu.Unlock()
	if time.Since(t.lastRefresh) < refreshEvery {
		return false
	}
	t.lastRefresh = time.Now()
	for _, a := range t.d.actors {
		nn, err := a.client()
		if err != nil {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, t.d.cfg.RPCTimeout)
		resp, err := nn.GetKeys(cctx, &api.GetKeysRequest{})
		cancel()
		if err == nil {
			t.merge(resp.Keys)
		}
	}
	return true
}

// check verifies token for want, refreshing the key set once if the key
// is unknown.
func (t *tokens) check(ctx context.Context, token []byte, want security.Request) error {
	_, err := t.verify.Verify(token, want)
	if err != nil && errs.KindOf(err) == errs.Unauthenticated && isUnknownKey(err) && t.refresh(ctx) {
		_, err = t.verify.Verify(token, want)
	}
	return err
}

func isUnknownKey(err error) bool {
	var e *errs.Error
	for ; err != nil; err = e.Err {
		var ok bool
		if e, ok = err.(*errs.Error); !ok {
			return false
		}
		if e.Msg == "unknown key" {
			return true
		}
	}
	return false
}

// checkWrite checks a WriteBlock header: a write token for this block, or
// a copy token for a namenode-ordered replication.
func (t *tokens) checkWrite(ctx context.Context, h *api.WriteBlockHeader) error {
	want := security.Request{Inode: h.InodeId, BlockID: h.Block.GetId(), GenStamp: h.Block.GetGenStamp(), Access: security.Write}
	if h.Replication {
		want.Access = security.Copy
	}
	return t.check(ctx, h.Token, want)
}

// checkRead checks a read of a replica owned by inode (the inode recorded
// when the block was written, not what the caller claims).
func (t *tokens) checkRead(ctx context.Context, token []byte, inode uint64, b *api.Block) error {
	return t.check(ctx, token, security.Request{Inode: inode, BlockID: b.GetId(), GenStamp: b.GetGenStamp(), Access: security.Read})
}

// checkCopy checks a transfer of a replica owned by inode.
func (t *tokens) checkCopy(ctx context.Context, token []byte, inode uint64, b *api.Block) error {
	return t.check(ctx, token, security.Request{Inode: inode, BlockID: b.GetId(), GenStamp: b.GetGenStamp(), Access: security.Copy})
}
