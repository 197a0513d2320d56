package namespace

import "github.com/blockfs/blockfs/errs"

// MaxReserve bounds the ids one Reserve takes.
const MaxReserve = 1 << 20

// Reserve moves the inode and block id counters past n ids each and takes
// one generation stamp, and returns where the two ranges start: ids for
// the files PutFile makes, which no other allocation hands out.
func (t *Tree) Reserve(n uint64) (firstInode ID, firstBlock, genStamp uint64, err error) {
	if n == 0 || n > MaxReserve {
		return 0, 0, 0, errs.Newf(errs.Invalid, "namespace.Tree.Reserve", "", "count %d: want 1..%d", n, MaxReserve)
	}
	firstInode, firstBlock, genStamp = t.nextID, t.nextBlockID, t.AllocGenStamp()
	t.nextID += ID(n)
	t.nextBlockID += n
	return firstInode, firstBlock, genStamp, nil
}

// PutFile makes p a complete file of the one block b (with its final
// length and CRC) under inode id: the Create, AddBlock and Complete of a
// one-block file in one step, all or nothing, with Create's options,
// permission checks and errors. id and b.ID must come from Reserve
// (ids below the counters, b's generation stamp taken) and be in use
// nowhere, else Precondition; b.Length is 1..BlockSize. It returns the
// file and the blocks of the file it replaced (Overwrite), which the
// caller must invalidate.
func (s Session) PutFile(p Path, o CreateOpts, id ID, b Block) (FileInfo, []Block, error) {
	if s.c != nil && o.Owner == "" {
		o.Owner = s.c.User
	}
	t, op, path := s.t, s.op, p.s
	_, used := t.blocks.get(b.ID)
	switch {
	case id <= RootID || id >= t.nextID:
		return FileInfo{}, nil, errs.Newf(errs.Precondition, op, path, "inode id %d was never reserved", id)
	case t.inodes.get(id) != nil:
		return FileInfo{}, nil, errs.Newf(errs.Precondition, op, path, "inode id %d is in use", id)
	case b.ID == 0 || b.ID >= t.nextBlockID || b.GenStamp == 0 || b.GenStamp >= t.nextGenStamp:
		return FileInfo{}, nil, errs.Newf(errs.Precondition, op, path, "block %v was never reserved", b)
	case used:
		return FileInfo{}, nil, errs.Newf(errs.Precondition, op, path, "block id %d is in use", b.ID)
	case !b.HasCRC:
		return FileInfo{}, nil, errs.Newf(errs.Invalid, op, path, "block %v has no CRC32C", b)
	case b.Length == 0 || b.Length > o.BlockSize:
		return FileInfo{}, nil, errs.Newf(errs.Invalid, op, path, "block %v length %d: want 1..%d (the block size)", b, b.Length, o.BlockSize)
	}
	o.id, o.space = id, int64(o.Replication)*int64(b.Length)
	fi, removed, err := t.create(s.c, op, p, o)
	if err != nil {
		return FileInfo{}, nil, err
	}
	f := t.inodes.get(fi.ID)
	before := fileSpace(f)
	f.setInline(b)
	t.blocks.put(b.ID, f.id)
	t.numBlocks++
	f.close()
	chargeSpace(f, before)
	return f.info(path), removed, nil
}
