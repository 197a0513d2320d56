package namenode

import (
	"context"
	"time"

	"github.com/blockfs/blockfs/security"
	"github.com/blockfs/blockfs/trash"
)

// trashLoop is the leader's trash emptier: every checkpoint interval,
// outside safe mode, it expunges the checkpoints older than the trash
// interval and checkpoints every user's Current (package trash). It
// calls this node's own ClientService handlers as the superuser, so each
// call is checked, replicated and audited like any other.
func (n *Namenode) trashLoop() {
	every := n.cfg.TrashCheckpoint
	if every == 0 {
		every = n.cfg.TrashInterval
	}
	n.every(every, func() {
		if !n.isReadyLeader() || n.safe.On() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), every)
		defer cancel()
		ctx = security.WithIdentity(ctx, security.Identity{Role: security.RoleUser, Name: n.cfg.Namespace.Superuser})
		expired, err := trash.EmptyAll(ctx, trash.ServerFS{S: n.ClientServer()}, n.cfg.TrashInterval, time.Now())
		if err != nil {
			n.log.Warn("trash emptier", "expired_checkpoints", expired, "err", err)
		} else if expired > 0 {
			n.log.Info("trash emptier", "expired_checkpoints", expired)
		}
	})
}
