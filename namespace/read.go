package namespace

import (
	"cmp"
	"crypto/sha256"
	"slices"

	"github.com/blockfs/blockfs/errs"
)

// Stat describes p.
func (t *Tree) Stat(p Path) (FileInfo, error) { return t.stat(nil, "namespace.Tree.Stat", p) }

// stat is Stat for caller c, who needs Exec on every ancestor of p.
func (t *Tree) stat(c *Caller, op string, p Path) (FileInfo, error) {
	n, err := t.lookupAs(c, op, p)
	if err != nil {
		return FileInfo{}, err
	}
	return n.info(p.s), nil
}

// File describes file p and returns its blocks. For two or more blocks
// the slice is the tree's own: read it only, and only under the lock the
// call was made under (no mutation ever writes into it, but it stops being
// current). A one-block file's block is copied into a new slice (it lives
// in the inode, which mutations change in place). IsDir for a directory.
func (t *Tree) File(p Path) (FileInfo, []Block, error) {
	return t.file(nil, "namespace.Tree.File", p, nil)
}

// file is File for caller c, who needs Exec on every ancestor and Read on
// the file. With one non-nil, a one-block file's block is returned in one
// rather than in a new slice (FileInto).
func (t *Tree) file(c *Caller, op string, path Path, one *[1]Block) (FileInfo, []Block, error) {
	n, err := t.lookupAs(c, op, path)
	p := path.s
	if err != nil {
		return FileInfo{}, nil, err
	}
	if n.dir() {
		return FileInfo{}, nil, errs.New(errs.IsDir, op, p, "path is a directory")
	}
	if err := c.check(op, p, n, p, Read, "read"); err != nil {
		return FileInfo{}, nil, err
	}
	if c.unreadableBy(n) {
		return FileInfo{}, nil, errs.Newf(errs.Permission, op, p, "Access is denied for %s since the superuser is not allowed to perform this operation.", c.User)
	}
	if one != nil {
		return n.info(p), n.blockList(one), nil
	}
	return n.info(p), n.publicBlocks(), nil
}

// FileByID is File by inode id; ok is false if id is not a file. The path
// in the FileInfo is rebuilt from the inode's ancestors.
func (t *Tree) FileByID(id ID) (FileInfo, []Block, bool) {
	n := t.inodes.get(id)
	if n == nil || n.dir() {
		return FileInfo{}, nil, false
	}
	return n.info(pathOf(n)), n.publicBlocks(), true
}

// List returns the children of directory p whose names sort after
// startAfter (byte order), at most limit of them (limit <= 0: all), and
// whether more follow. Listing a file returns that file alone (nothing
// when startAfter is set).
func (t *Tree) List(p Path, startAfter string, limit int) ([]FileInfo, bool, error) {
	return t.list(nil, "namespace.Tree.List", p, startAfter, limit)
}

// list is List for caller c, who needs Exec on every ancestor and, for a
// directory, Read and Exec on it (a file needs no more than Stat does).
func (t *Tree) list(c *Caller, op string, path Path, startAfter string, limit int) ([]FileInfo, bool, error) {
	n, err := t.lookupAs(c, op, path)
	p := path.s
	if err != nil {
		return nil, false, err
	}
	if !n.dir() {
		if startAfter != "" {
			return nil, false, nil
		}
		return []FileInfo{n.info(p)}, false, nil
	}
	if err := c.check(op, p, n, p, Read|Exec, "list"); err != nil {
		return nil, false, err
	}
	kids := n.kids()
	k, at := kids.find(startAfter)
	if k != nil {
		at = kids.next(at)
	}
	size := kids.len()
	if limit > 0 {
		size = min(size, limit)
	}
	out := make([]FileInfo, 0, size)
	more := false
	for k := range kids.from(at) {
		if limit > 0 && len(out) == limit {
			more = true
			break
		}
		out = append(out, k.info(joinPath(p, k.name)))
	}
	return out, more, nil
}

// BlockInode returns the file that owns block blockID.
func (t *Tree) BlockInode(blockID uint64) (ID, bool) {
	id, ok := t.blocks.get(blockID)
	return id, ok
}

// Block returns block blockID as the namespace records it (generation
// stamp, length, CRC) and the file that owns it. A file's block ids
// increase along the file (AddBlock allocates them from a counter), so the
// block is found by binary search; a file whose ids are not in order (only
// Tree.AddBlock with ids chosen by its caller makes one) is scanned.
func (t *Tree) Block(blockID uint64) (Block, ID, bool) {
	id, ok := t.blocks.get(blockID)
	if !ok {
		return Block{}, 0, false
	}
	f := t.inodes.get(id)
	if f == nil {
		return Block{}, 0, false
	}
	var one [1]Block
	bs := f.blockList(&one)
	i, found := slices.BinarySearchFunc(bs, blockID, func(b Block, id uint64) int { return cmp.Compare(b.ID, id) })
	if !found {
		i = slices.IndexFunc(bs, func(b Block) bool { return b.ID == blockID })
		if i < 0 {
			return Block{}, 0, false
		}
	}
	return bs[i], id, true
}

// ForEachBlock calls fn for every block, in tree order (depth first,
// children by name, each file's blocks in order). complete is false only
// for the last block of an under-construction file, and not for that one
// when it is committed (a file reopened by Append whose writer has not
// added a block yet). fn must not modify the tree.
func (t *Tree) ForEachBlock(fn func(b Block, inode ID, replication uint32, complete bool)) {
	var walk func(n *inode)
	walk = func(n *inode) {
		if n.dir() {
			for c := range n.kids().all() {
				walk(c)
			}
			return
		}
		var one [1]Block
		bs := n.blockList(&one)
		last := len(bs) - 1
		for i, b := range bs {
			fn(b, n.id, uint32(n.repl()), n.state() == Complete || i < last || b.HasCRC)
		}
	}
	walk(t.root)
}

// Counts returns the number of files, directories (the root included) and
// blocks.
func (t *Tree) Counts() (files, dirs, blocks int) {
	return t.numFiles, t.numDirs, t.numBlocks
}

// Hash returns the SHA-256 of the tree's image (see WriteImage). The image
// is canonical (children in name order, every field and counter included),
// so equal trees hash equal however they were built.
func (t *Tree) Hash() [32]byte {
	h := sha256.New()
	_ = t.newView().Encode(h) // a hash.Hash never fails a write
	var out [32]byte
	h.Sum(out[:0])
	return out
}
