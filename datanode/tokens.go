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
// heartbeat replies and from a background loop that asks every namenode
// (GetKeys) at start and every KeyRefreshPeriod, merges what every namenode
// sends (namenodes may be at different Raft indexes), and prunes by time.
//
// A token naming a key it has not heard of asks the loop for a refresh and
// waits for it, at most KeyRefreshWait, before refusing (a key is published
// through Raft before it signs, but the heartbeat carrying it may not have
// arrived yet; HDFS-17383 is what happens without this). Such requests
// share one refresh per KeyRefreshInterval, and the refresh runs on the
// loop, never on the caller's goroutine: a namenode that hangs delays no
// read beyond KeyRefreshWait.
type tokens struct {
	d      *Datanode
	keys   *security.KeySet
	verify *security.Verifier
	now    func() time.Time

	period, interval, timeout, wait time.Duration

	wake chan struct{} // capacity 1: a refresh was asked for

	mu        sync.Mutex
	started   uint64        // refresh rounds begun
	done      uint64        // refresh rounds finished
	pending   bool          // a round was asked for and has not begun
	lastAsked time.Time     // when an unknown key last got a round granted
	changed   chan struct{} // closed (and replaced) when keys arrive or a round ends
	// revoked is each namenode's deny list, by its address, as it last
	// answered GetKeys; the datanode refuses the union of them.
	revoked map[string][]*api.RevokedEntry
}

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
	c := &d.cfg
	return &tokens{d: d, keys: keys, verify: v, now: now,
		period: c.KeyRefreshPeriod, interval: c.KeyRefreshInterval, timeout: c.KeyRefreshTimeout, wait: c.KeyRefreshWait,
		wake: make(chan struct{}, 1), changed: make(chan struct{}), revoked: map[string][]*api.RevokedEntry{}}, nil
}

// merge adds encoded public keys to the key set and prunes expired ones.
func (t *tokens) merge(encoded [][]byte) {
	added := false
	defer func() {
		if added {
			t.broadcast()
		}
	}()
	for _, b := range encoded {
		var pk security.PublicKey
		if err := pk.UnmarshalBinary(b); err != nil {
			t.d.log.Warn("namenode sent a malformed key", "err", err)
			continue
		}
		switch err := t.keys.Add(pk); {
		case err == nil:
			added = true
		case !errs.Is(err, errs.Exist):
			t.d.log.Warn("namenode sent a key that does not fit", "kid", pk.KID, "err", err)
		}
	}
	t.keys.Prune(t.now())
}

// mergeRevoked records the deny list namenode addr sent and publishes the
// union of every namenode's last list: an entry is in force here as soon
// as one namenode has it (they may be at different Raft indexes), and
// lifted once none has it.
func (t *tokens) mergeRevoked(addr string, entries []*api.RevokedEntry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.revoked[addr] = entries
	var all []*api.RevokedEntry
	for _, list := range t.revoked {
		for _, e := range list {
			if n, _, err := security.NormalizeRevoked(e); err == nil {
				all = append(all, n)
			}
		}
	}
	t.d.revoked.Store(security.NewDenyList(all))
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

// broadcast wakes every check waiting for keys.
func (t *tokens) broadcast() {
	t.mu.Lock()
	close(t.changed)
	t.changed = make(chan struct{})
	t.mu.Unlock()
}

// loop refreshes the key set at start, every period, and when a check
// asks (see ask); it returns when ctx is done. Rounds never overlap.
func (t *tokens) loop(ctx context.Context) {
	defer t.d.wg.Done()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.wake:
		case <-timer.C:
		}
		t.refresh(ctx)
		timer.Reset(t.period)
	}
}

// refresh is one round: every namenode is asked in parallel, each within
// the timeout, and what each answers is merged as it arrives.
func (t *tokens) refresh(ctx context.Context) {
	t.mu.Lock()
	t.started++
	t.pending = false
	t.mu.Unlock()
	var wg sync.WaitGroup
	for _, a := range t.d.actors {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nn, err := a.client("GetKeys")
			if err != nil {
				return
			}
			cctx, cancel := context.WithTimeout(ctx, t.timeout)
			resp, err := nn.GetKeys(cctx, &api.GetKeysRequest{})
			cancel()
			if err != nil {
				t.d.log.Debug("key refresh", "namenode", a.addr, "err", err)
				return
			}
			t.merge(resp.Keys)
			t.mergeRevoked(a.addr, resp.Revoked)
		}()
	}
	wg.Wait()
	t.mu.Lock()
	t.done++
	t.mu.Unlock()
	t.broadcast()
}

// ask is called by a check that met an unknown key. It returns the round
// whose end the check should wait for, or ok=false if there is none to
// wait for: one round is granted per interval (the callers in between
// share it), and a check arriving after that may still wait for a round
// under way.
func (t *tokens) ask() (round uint64, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch now := time.Now(); {
	case t.pending:
		return t.started + 1, true
	case now.Sub(t.lastAsked) >= t.interval:
		t.lastAsked, t.pending = now, true
		select {
		case t.wake <- struct{}{}:
		default:
		}
		return t.started + 1, true
	case t.started > t.done:
		return t.started, true
	}
	return 0, false
}

// check verifies token for want. If it names an unknown key, check asks
// for a refresh and waits (awaitKeys) and verifies again; a key still
// unknown is refused as Unauthenticated.
func (t *tokens) check(ctx context.Context, token []byte, want security.Request) (security.Claims, error) {
	var c security.Claims
	var err error
	t.awaitKeys(ctx, func() bool {
		c, err = t.verify.Verify(token, want)
		return err != nil && errs.KindOf(err) == errs.Unauthenticated && isUnknownKey(err)
	})
	return c, err
}

// awaitKeys runs try, which reports whether it failed for want of a key.
// If it did, awaitKeys asks for a refresh and waits, at most the
// configured wait (or until ctx ends), for that round or for new keys,
// running try again each time keys arrive, until it no longer fails for
// want of a key.
func (t *tokens) awaitKeys(ctx context.Context, try func() (unknownKey bool)) {
	if !try() {
		return
	}
	round, ok := t.ask()
	if !ok {
		return
	}
	timer := time.NewTimer(t.wait)
	defer timer.Stop()
	for {
		t.mu.Lock()
		finished, changed := t.done >= round, t.changed
		t.mu.Unlock()
		if finished {
			try()
			return
		}
		select {
		case <-changed:
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
		if !try() {
			return
		}
	}
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

// checkWrite checks a WriteBlock header from caller: a write token for
// this block (a client, or an upstream datanode forwarding its pipeline),
// or, for a namenode-ordered replication, a copy token that names this
// datanode among its targets, presented by a datanode.
func (t *tokens) checkWrite(ctx context.Context, caller security.Identity, h *api.WriteBlockHeader) error {
	want := security.Request{Inode: h.InodeId, BlockID: h.Block.GetId(), GenStamp: h.Block.GetGenStamp(), Access: security.Write}
	if !h.Replication {
		_, err := t.check(ctx, h.Token, want)
		return err
	}
	const op = "WriteBlock"
	if caller.Role != security.RoleDatanode {
		return errs.Newf(errs.Permission, op, blockName(want.BlockID), "%s may not write a replica: replication writes come from datanodes", caller)
	}
	want.Access = security.Copy
	c, err := t.check(ctx, h.Token, want)
	if err != nil {
		return err
	}
	if !security.CopyTargets(c.User, t.d.id) {
		return errs.Newf(errs.Permission, op, blockName(want.BlockID), "copy token is for %q, not for datanode %s", c.User, t.d.id)
	}
	return nil
}

// checkRead checks a read of a replica owned by inode (the inode recorded
// when the block was written, not what the caller claims).
func (t *tokens) checkRead(ctx context.Context, token []byte, inode uint64, b *api.Block) error {
	_, err := t.check(ctx, token, security.Request{Inode: inode, BlockID: b.GetId(), GenStamp: b.GetGenStamp(), Access: security.Read})
	return err
}

// checkCopy checks a transfer of a replica owned by inode.
func (t *tokens) checkCopy(ctx context.Context, token []byte, inode uint64, b *api.Block) error {
	_, err := t.check(ctx, token, security.Request{Inode: inode, BlockID: b.GetId(), GenStamp: b.GetGenStamp(), Access: security.Copy})
	return err
}
