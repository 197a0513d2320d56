package fsm

import (
	"google.golang.org/protobuf/proto"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/namespace"
)

// The handlers below run each namespace operation as the command's
// caller: the Session checks permissions on the inodes it resolves and
// changes nothing when a check fails. New inodes belong to the caller and
// take the group of their parent directory, as in HDFS.

func (f *FSM) applyMkdirs(c *api.MkdirsCommand) (*api.CommandResult, error) {
	s, p, err := f.asPath(c.Caller, "Mkdirs", c.Path)
	if err != nil {
		return nil, err
	}
	return nil, s.Mkdirs(p, namespace.MkdirsOpts{Perm: c.Perm, Parents: c.Parents, MtimeMs: c.MtimeUnixMs})
}

func (f *FSM) applyCreate(c *api.CreateCommand) (*api.CommandResult, error) {
	s, p, err := f.asPath(c.Caller, "Create", c.Path)
	if err != nil {
		return nil, err
	}
	// A Create refused by the namespace leaves its token unspent, as it
	// leaves the tree unchanged.
	if err := f.st.nonces.check("Create", c.Path, c.RedirectNonce, c.MtimeUnixMs); err != nil {
		return nil, err
	}
	fi, removed, err := s.Create(p, namespace.CreateOpts{
		Perm: c.Perm, Overwrite: c.Overwrite, CreateParent: c.CreateParent,
		Replication: c.Replication, BlockSize: c.BlockSize, MtimeMs: c.MtimeUnixMs,
		UnderConstruction: func(fi namespace.FileInfo) error {
			return f.checkTakeover(c.Caller, "Create", c.Path, fi.ID, fi.Writer, c.MtimeUnixMs, c.SoftLimitMs)
		},
	})
	if err != nil {
		return nil, err
	}
	if c.RedirectNonce != "" {
		f.st.nonces.spend(c.RedirectNonce, c.RedirectExpiresUnixMs)
	}
	f.forget(removed)
	if len(removed) > 0 {
		f.pruneLeases()
	}
	f.st.leases.Add(fi.ID, writerOf(c.Caller), c.MtimeUnixMs)
	res := &api.CommandResult{Status: ToFileStatus(fi)}
	if len(c.FirstBlockTargets) > 0 {
		// The file's first block, as the writer's AddBlock would allocate
		// it. A refusal (the space quota) is not the Create's: the file
		// stays created, and the writer's AddBlock hears why.
		ab, err := f.applyAddBlock(&api.AddBlockCommand{Caller: c.Caller, Path: c.Path, InodeId: uint64(fi.ID),
			MtimeUnixMs: c.MtimeUnixMs, Targets: c.FirstBlockTargets})
		if err == nil {
			res.Block, res.Offset = ab.Block, ab.Offset
		}
	}
	return res, nil
}

// applyAddBlock allocates the next block for the file's writer. A writer
// retrying an AddBlock whose answer it lost gets the same block again
// (namespace.Session.AddBlock), not a second allocation.
func (f *FSM) applyAddBlock(c *api.AddBlockCommand) (*api.CommandResult, error) {
	s, p, err := f.asWriter("AddBlock", c)
	if err != nil {
		return nil, err
	}
	var prev *namespace.Block
	if c.Previous != nil {
		b := FromAPIBlock(c.Previous)
		prev = &b
	}
	nb, err := s.AddBlock(p, namespace.ID(c.InodeId), prev, c.MtimeUnixMs)
	if err != nil {
		return nil, f.leaseError(err, c.Caller, namespace.ID(c.InodeId))
	}
	if !nb.Retried && f.events != nil {
		f.events.Expect(nb.Block, nb.File.ID, nb.File.Replication, false)
		f.pipeline(nb.Block, c.Targets)
	}
	return &api.CommandResult{Block: ToAPIBlock(nb.Block), Offset: nb.Offset, Status: ToFileStatus(nb.File)}, nil
}

func (f *FSM) applyComplete(c *api.CompleteCommand) (*api.CommandResult, error) {
	s, p, err := f.asWriter("Complete", c)
	if err != nil {
		return nil, err
	}
	bs := make([]namespace.Block, len(c.Blocks))
	for i, b := range c.Blocks {
		bs[i] = FromAPIBlock(b)
	}
	fi, err := s.Complete(p, namespace.ID(c.InodeId), bs, c.MtimeUnixMs)
	if err != nil {
		return nil, f.leaseError(err, c.Caller, namespace.ID(c.InodeId))
	}
	f.st.leases.Remove(fi.ID)
	if f.events != nil {
		for _, b := range bs {
			f.events.Expect(b, fi.ID, fi.Replication, true)
		}
	}
	return &api.CommandResult{Status: ToFileStatus(fi)}, nil
}

func (f *FSM) applyAbandonBlock(c *api.AbandonBlockCommand) (*api.CommandResult, error) {
	s, p, err := f.asWriter("AbandonBlock", c)
	if err != nil {
		return nil, err
	}
	b := FromAPIBlock(c.Block)
	if err := s.AbandonBlock(p, namespace.ID(c.InodeId), b); err != nil {
		return nil, err
	}
	f.forget([]namespace.Block{b})
	return nil, nil
}

func (f *FSM) applyDelete(c *api.DeleteCommand) (*api.CommandResult, error) {
	s, p, err := f.asPath(c.Caller, "Delete", c.Path)
	if err != nil {
		return nil, err
	}
	removed, err := s.Delete(p, c.Recursive, c.MtimeUnixMs)
	if err != nil {
		return nil, err
	}
	return f.removedResult(removed), nil
}

// removedResult forgets blocks a command removed from the namespace and
// returns them for the leader to invalidate on the datanodes.
func (f *FSM) removedResult(removed []namespace.Block) *api.CommandResult {
	removed = f.unheld(removed) // a namespace snapshot's blocks stay (hsnap.go)
	f.forget(removed)
	f.pruneLeases()
	out := &api.CommandResult{Removed: make([]*api.Block, len(removed))}
	for i, b := range removed {
		out.Removed[i] = ToAPIBlock(b)
	}
	return out
}

func (f *FSM) applyAppend(c *api.AppendCommand) (*api.CommandResult, error) {
	s, p, err := f.asPath(c.Caller, "Append", c.Path)
	if err != nil {
		return nil, err
	}
	if err := f.guardUnderConstruction(c.Caller, s, p, c.MtimeUnixMs, c.SoftLimitMs); err != nil {
		return nil, err
	}
	var fi namespace.FileInfo
	var reopened *namespace.Block
	if c.NewBlock {
		fi, err = s.Append(p, c.MtimeUnixMs)
	} else {
		// The stamp is taken only if the block is reopened.
		fi, reopened, err = s.AppendLast(p, f.st.tree.NextGenStamp(), c.MtimeUnixMs)
	}
	if err != nil {
		return nil, err
	}
	f.st.leases.Add(fi.ID, writerOf(c.Caller), c.MtimeUnixMs)
	_, bs, _ := f.st.tree.FileByID(fi.ID)
	out := &api.CommandResult{Status: ToFileStatus(fi), Blocks: make([]*api.Block, len(bs))}
	for i, b := range bs {
		out.Blocks[i] = ToAPIBlock(b)
	}
	if reopened != nil {
		out.Block = ToAPIBlock(*reopened)
		if f.events != nil {
			f.events.Expect(*reopened, fi.ID, fi.Replication, false)
		}
	}
	return out, nil
}

func (f *FSM) applyRename(c *api.RenameCommand) (*api.CommandResult, error) {
	s, src, err := f.asPath(c.Caller, "Rename", c.Src)
	if err != nil {
		return nil, err
	}
	dst, err := namespace.ParsePath(c.Dst)
	if err != nil {
		return nil, errs.WithOp(err, "Rename")
	}
	if !c.Exact {
		return nil, s.Rename(src, dst, c.MtimeUnixMs)
	}
	removed, err := s.Rename2(src, dst, c.Overwrite, c.MtimeUnixMs)
	if err != nil {
		return nil, err
	}
	return f.removedResult(removed), nil
}

func (f *FSM) applySetPermission(c *api.SetPermissionCommand) (*api.CommandResult, error) {
	s, p, err := f.asPath(c.Caller, "SetPermission", c.Path)
	if err != nil {
		return nil, err
	}
	return nil, s.SetPermission(p, c.Perm, c.MtimeUnixMs)
}

func (f *FSM) applySetOwner(c *api.SetOwnerCommand) (*api.CommandResult, error) {
	s, p, err := f.asPath(c.Caller, "SetOwner", c.Path)
	if err != nil {
		return nil, err
	}
	return nil, s.SetOwner(p, c.Owner, c.Group)
}

// applySetQuota sets a directory's quotas; the session refuses a caller
// who is not a superuser. Setting a first quota counts the directory's
// tree once, deterministically (namespace.Session.SetQuota).
func (f *FSM) applySetQuota(c *api.SetQuotaCommand) (*api.CommandResult, error) {
	s, p, err := f.asPath(c.Caller, "SetQuota", c.Path)
	if err != nil {
		return nil, err
	}
	return nil, s.SetQuota(p, c.NamespaceQuota, c.SpaceQuota)
}

func (f *FSM) applySetMember(c *api.SetMemberCommand) (*api.CommandResult, error) {
	m := proto.Clone(c.Member).(*api.Member)
	if m == nil || m.Id == "" {
		return nil, errs.New(errs.Invalid, "SetMember", "", "member id is required")
	}
	f.st.members[m.Id] = m
	return nil, nil
}

func (f *FSM) applyRemoveMember(c *api.RemoveMemberCommand) (*api.CommandResult, error) {
	delete(f.st.members, c.Id)
	return nil, nil
}
