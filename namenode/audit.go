package namenode

import (
	"context"
	"time"

	"google.golang.org/grpc/peer"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/audit"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/security"
)

// audited records one namespace operation in the audit log (package
// audit), on the namenode that served the call: a follower that forwarded
// a write logs the outcome the leader's log gave it, so each call is one
// line in the cluster. cmd is HDFS's name of the operation; st, if set, is
// the inode the operation made or changed. As in HDFS, an operation is
// logged when it was allowed (err nil) or refused for who the caller is
// (Permission, Unauthenticated); one that failed for another reason (no
// such file, a bad argument) is not.
func (n *Namenode) audited(ctx context.Context, cmd, src, dst string, st *api.FileStatus, err error) {
	if n.audit == nil {
		return
	}
	allowed := err == nil
	if !allowed {
		if k := errs.KindOf(err); k != errs.Permission && k != errs.Unauthenticated {
			return
		}
	}
	e := audit.Event{Time: time.Now(), Allowed: allowed, Cmd: cmd, Src: src, Dst: dst, Auth: n.auditAuth}
	if id, ok := security.IdentityFromContext(ctx); ok {
		e.User = id.Name
	} else {
		e.User, _ = n.reader(ctx)
	}
	if o, ok := security.OriginFromContext(ctx); ok {
		e.Proto, e.Addr = o.Proto, o.Addr
	} else if p, ok := peer.FromContext(ctx); ok {
		e.Proto, e.Addr = "rpc", p.Addr
	}
	if st != nil {
		e.Perm = audit.Perm{Owner: st.Owner, Group: st.Group, Mode: st.Mode}
	}
	n.audit.Log(e)
}

// openAudit starts the audit log the configuration asks for (none: nil).
func (n *Namenode) openAudit() error {
	cfg := n.cfg.Audit
	cfg.Registerer, cfg.Log = n.reg, n.log
	l, err := audit.New(cfg)
	if err != nil {
		return err
	}
	n.audit = l
	n.auditAuth = "MTLS"
	if n.cfg.Auth.Mode == AuthSimple {
		n.auditAuth = "SIMPLE"
	}
	return nil
}
