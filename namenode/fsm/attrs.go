package fsm

import (
	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/leases"
	"github.com/blockfs/blockfs/namespace"
)

// Extended attributes, times and truncate (HDFS's setXAttr, removeXAttr,
// setTimes, truncate). The namespace session checks the caller's
// permissions and HDFS's rules; the limits come in the command, fixed by
// the proposer, so every namenode applies the same.

func (f *FSM) applySetXAttr(c *api.SetXAttrCommand) (*api.CommandResult, error) {
	s, p, err := f.asPath(c.Caller, "SetXAttr", c.Path)
	if err != nil {
		return nil, err
	}
	x := namespace.XAttr{Name: c.Xattr.GetName(), Value: c.Xattr.GetValue()}
	lim := namespace.XAttrLimits{MaxPerInode: int(c.MaxXattrsPerInode), MaxSize: int(c.MaxXattrSize)}
	return nil, s.SetXAttr(p, x, namespace.XAttrFlag(c.Flags), lim)
}

func (f *FSM) applyRemoveXAttr(c *api.RemoveXAttrCommand) (*api.CommandResult, error) {
	s, p, err := f.asPath(c.Caller, "RemoveXAttr", c.Path)
	if err != nil {
		return nil, err
	}
	return nil, s.RemoveXAttr(p, c.Name)
}

func (f *FSM) applySetTimes(c *api.SetTimesCommand) (*api.CommandResult, error) {
	s, p, err := f.asPath(c.Caller, "SetTimes", c.Path)
	if err != nil {
		return nil, err
	}
	return nil, s.SetTimes(p, c.MtimeUnixMs, c.AtimeUnixMs)
}

// applyTruncate cuts a closed file. Dropped blocks are forgotten (their
// replicas invalidated). Inside a block, the file reopens for the caller
// under a lease and a truncate's recovery of its last block starts: the
// primary cuts every replica to the new length under a new generation
// stamp, and its CommitBlockSynchronization closes the file. When a
// snapshot holds that block, the recovery instead makes the file's new
// last block from its prefix (copy-on-truncate; namespace.Truncated).
func (f *FSM) applyTruncate(c *api.TruncateCommand) (*api.CommandResult, error) {
	const op = "Truncate"
	s, p, err := f.asPath(c.Caller, op, c.Path)
	if err != nil {
		return nil, err
	}
	// Without a primary an in-block truncate could not finish: refuse it
	// before anything changes.
	if fi, bs, err := f.st.tree.File(p); err == nil && c.Primary == "" && c.NewLength >= 0 && uint64(c.NewLength) < fi.Length && !onBoundary(bs, uint64(c.NewLength)) {
		if fi.State == namespace.Complete && s.CheckWrite(p) == nil {
			return nil, errs.Newf(errs.Unavailable, op, c.Path, "no datanode to recover the block holding offset %d on", c.NewLength)
		}
	}
	tr, err := s.Truncate(p, c.NewLength, c.MtimeUnixMs)
	if err != nil {
		return nil, err
	}
	tr.Dropped = f.unheld(tr.Dropped) // a namespace snapshot's blocks stay (hsnap.go)
	f.forget(tr.Dropped)
	res := &api.CommandResult{Status: ToFileStatus(tr.File), Closed: tr.Done}
	for _, b := range tr.Dropped {
		res.Removed = append(res.Removed, ToAPIBlock(b))
	}
	if tr.Done {
		return res, nil
	}
	id := tr.File.ID
	f.st.leases.Add(id, writerOf(c.Caller), c.MtimeUnixMs)
	rid := f.st.tree.AllocGenStamp()
	// The lease table keeps no CRCs (leases/encode.go), so neither does
	// the copy's source: a restored table is the same.
	from := namespace.Block{ID: tr.CopyOf.ID, GenStamp: tr.CopyOf.GenStamp, Length: tr.CopyOf.Length}
	f.st.leases.StartRecovery(id, leases.Recovery{ID: rid, Block: tr.Last, Primary: c.Primary, Replicas: c.Replicas, StartedMs: c.MtimeUnixMs, Truncate: true, CopyFrom: from})
	if f.events != nil {
		f.events.Expect(tr.Last, id, tr.File.Replication, false)
	}
	res.RecoveryId = rid
	return res, nil
}

// onBoundary reports whether length is the end of one of bs (or 0).
func onBoundary(bs []namespace.Block, length uint64) bool {
	var off uint64
	for _, b := range bs {
		if off == length {
			return true
		}
		off += b.Length
	}
	return off == length
}

// GetXAttrs returns the named attributes of p (all the caller may see
// when names is empty).
func (s ReadSession) GetXAttrs(p namespace.Path, names []string) ([]*api.XAttr, error) {
	xs, err := s.s.GetXAttrs(p, names)
	return toAPIXAttrs(xs), err
}

// ListXAttrs returns the attributes of p the caller may see (values only
// when it may read p).
func (s ReadSession) ListXAttrs(p namespace.Path) ([]*api.XAttr, error) {
	xs, err := s.s.ListXAttrs(p)
	return toAPIXAttrs(xs), err
}

func toAPIXAttrs(xs []namespace.XAttr) []*api.XAttr {
	if len(xs) == 0 {
		return nil
	}
	out := make([]*api.XAttr, len(xs))
	for i, x := range xs {
		out[i] = &api.XAttr{Name: x.Name, Value: x.Value}
	}
	return out
}
