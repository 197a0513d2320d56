package fsm

import (
	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/namespace"
)

// The HDFS snapshot commands: namespace snapshots of snapshottable
// directories (namespace/hsnap.go), not the Raft snapshots of snapshot.go.
// Each runs as its caller; the session checks who may (AllowSnapshot and
// DisallowSnapshot: a superuser; the others: the directory's owner or a
// superuser).

func (f *FSM) applyAllowSnapshot(c *api.AllowSnapshotCommand) (*api.CommandResult, error) {
	s, p, err := f.asPath(c.Caller, "AllowSnapshot", c.Path)
	if err != nil {
		return nil, err
	}
	return nil, s.AllowSnapshot(p)
}

func (f *FSM) applyDisallowSnapshot(c *api.DisallowSnapshotCommand) (*api.CommandResult, error) {
	s, p, err := f.asPath(c.Caller, "DisallowSnapshot", c.Path)
	if err != nil {
		return nil, err
	}
	return nil, s.DisallowSnapshot(p)
}

// applyCreateSnapshot answers the snapshot's path in status.path.
func (f *FSM) applyCreateSnapshot(c *api.CreateSnapshotCommand) (*api.CommandResult, error) {
	s, p, err := f.asPath(c.Caller, "CreateSnapshot", c.Path)
	if err != nil {
		return nil, err
	}
	sp, err := s.CreateSnapshot(p, c.Name, c.MtimeUnixMs)
	if err != nil {
		return nil, err
	}
	return &api.CommandResult{Status: &api.FileStatus{Path: sp, IsDir: true}}, nil
}

// applyDeleteSnapshot releases the blocks whose last holder the snapshot
// was (no live file has them): the block map forgets them and their
// replicas are deleted. They are in the result's removed.
func (f *FSM) applyDeleteSnapshot(c *api.DeleteSnapshotCommand) (*api.CommandResult, error) {
	s, p, err := f.asPath(c.Caller, "DeleteSnapshot", c.Path)
	if err != nil {
		return nil, err
	}
	released, err := s.DeleteSnapshot(p, c.Name)
	if err != nil {
		return nil, err
	}
	f.forget(released)
	out := &api.CommandResult{Removed: make([]*api.Block, len(released))}
	for i, b := range released {
		out.Removed[i] = ToAPIBlock(b)
	}
	return out, nil
}

func (f *FSM) applyRenameSnapshot(c *api.RenameSnapshotCommand) (*api.CommandResult, error) {
	s, p, err := f.asPath(c.Caller, "RenameSnapshot", c.Path)
	if err != nil {
		return nil, err
	}
	return nil, s.RenameSnapshot(p, c.OldName, c.NewName)
}

// SnapshottableDirs lists the snapshottable directories caller c may see
// (HDFS's getSnapshottableDirListing), under the read lock.
func (f *FSM) SnapshottableDirs(c *api.Caller, op string) ([]namespace.SnapshottableDir, error) {
	defer f.mu.RLock().RUnlock()
	s, err := f.as(c, op, "")
	if err != nil {
		return nil, err
	}
	return s.SnapshottableDirs(), nil
}
