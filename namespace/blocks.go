package namespace

import (
	"strconv"

	"github.com/blockfs/blockfs/errs"
)

// NextBlockID returns the id AllocBlockID would hand out next.
func (t *Tree) NextBlockID() uint64 { return t.nextBlockID }

// NextGenStamp returns the generation stamp AllocGenStamp would hand out next.
func (t *Tree) NextGenStamp() uint64 { return t.nextGenStamp }

// AllocBlockID returns the next block id and advances the counter.
func (t *Tree) AllocBlockID() uint64 {
	id := t.nextBlockID
	t.nextBlockID++
	return id
}

// AllocGenStamp returns the next generation stamp and advances the counter.
func (t *Tree) AllocGenStamp() uint64 {
	gs := t.nextGenStamp
	t.nextGenStamp++
	return gs
}

// AllocBlock allocates a block id and a generation stamp for AddBlock.
func (t *Tree) AllocBlock() (id, genStamp uint64) {
	return t.AllocBlockID(), t.AllocGenStamp()
}

// writableFile resolves, for caller c, the file p that a writer opened as
// inode id.
func (t *Tree) writableFile(c *Caller, op string, path Path, id ID) (*inode, error) {
	if err := t.admit(op, path); err != nil {
		return nil, err
	}
	p := path.s
	n, rest, err := t.resolve(c, op, path)
	if err != nil {
		return nil, err
	}
	if rest != "" {
		return nil, errs.Newf(errs.NotFound, op, p, "file was replaced or deleted: no inode at path (expected inode %d)", id)
	}
	if n.id != id {
		return nil, errs.Newf(errs.NotFound, op, p, "file was replaced or deleted: path is inode %d, expected %d", n.id, id)
	}
	if n.dir() {
		return nil, errs.New(errs.IsDir, op, p, "path is a directory")
	}
	// Every caller may change the file: keep it as open views see it.
	t.touch(n)
	return n, nil
}

// openFile resolves p for caller c and checks that it is still inode id,
// under construction, and that c is its writer.
func (t *Tree) openFile(c *Caller, op string, path Path, id ID) (*inode, error) {
	f, err := t.writableFile(c, op, path, id)
	if err != nil {
		return nil, err
	}
	p := path.s
	if f.state() != UnderConstruction {
		return nil, errs.New(errs.Precondition, op, p, "file is not under construction")
	}
	return f, c.checkWriter(op, p, f)
}

// AddBlock appends block (newBlockID, genStamp) to the under-construction
// file p, which must still be inode id. When the file has blocks, prev
// must name its last block (id and generation stamp) and carries that
// block's final length; prev is nil only for the first block. It returns
// the new block (length 0) and its offset in the file. newBlockID and
// genStamp come from the caller (normally AllocBlock); the counters move
// past them if they are not already. The file's mtime becomes mtimeMs.
func (t *Tree) AddBlock(path Path, id ID, prev *Block, newBlockID, genStamp uint64, mtimeMs int64) (Block, uint64, error) {
	const op = "namespace.Tree.AddBlock"
	p := path.s
	f, err := t.openFile(nil, op, path, id)
	if err != nil {
		return Block{}, 0, err
	}
	if newBlockID == 0 || genStamp == 0 {
		return Block{}, 0, errs.Newf(errs.Invalid, op, p, "block id and generation stamp must be non-zero (got blk_%d_%d)", newBlockID, genStamp)
	}
	if owner, used := t.blocks.get(newBlockID); used {
		return Block{}, 0, errs.Newf(errs.Exist, op, p, "block id %d already in use by inode %d", newBlockID, owner)
	}
	if err := t.checkAppend(op, p, f, prev); err != nil {
		return Block{}, 0, err
	}
	b, off := t.appendBlock(f, prev, Block{ID: newBlockID, GenStamp: genStamp}, mtimeMs)
	return b, off, nil
}

// checkAppend checks that prev fits the end of f's block list and that f
// may take another block.
func (t *Tree) checkAppend(op, p string, f *inode, prev *Block) error {
	n := f.nblocks()
	var last Block
	if n > 0 {
		last = f.lastBlock()
	}
	switch {
	case n == 0 && prev != nil:
		return errs.Newf(errs.Precondition, op, p, "previous block %v given but the file has no blocks", *prev)
	case n > 0 && prev == nil:
		return errs.Newf(errs.Precondition, op, p, "previous block missing: the file has %d blocks, last %v", n, last)
	case n > 0 && (prev.ID != last.ID || prev.GenStamp != last.GenStamp):
		return errs.Newf(errs.Precondition, op, p, "previous block %v is not the last block %v", *prev, last)
	case n > 0 && prev.Length > f.blockSize:
		return errs.Newf(errs.Invalid, op, p, "block %v length %d exceeds block size %d", *prev, prev.Length, f.blockSize)
	case n > 0 && crcConflict(*prev, last):
		return errs.Newf(errs.Precondition, op, p, "block %v CRC32C %08x differs from the recorded %08x", *prev, prev.CRC, last.CRC)
	case n > 0 && lastLengthConflict(*prev, last):
		return errs.Newf(errs.Precondition, op, p, "block %v length %d differs from its committed length %d", *prev, prev.Length, last.Length)
	case n >= t.lim.MaxBlocksPerFile:
		return errs.Newf(errs.Exhausted, op, p, "file has the maximum of %d blocks", t.lim.MaxBlocksPerFile)
	}
	// The previous block takes its real length and the new one is
	// charged in full (HDFS charges a whole block at addBlock).
	after := f.length() + f.blockSize
	if n > 0 {
		after = after - last.Length + prev.Length
	}
	return checkQuota(op, p, f.parent, nil, 0, int64(f.repl())*int64(after)-fileSpace(f))
}

// appendBlock appends nb to f (checkAppend passed), setting the previous
// block's length (and CRC, when prev carries one) from prev, and returns nb
// with its offset in the file.
func (t *Tree) appendBlock(f *inode, prev *Block, nb Block, mtimeMs int64) (Block, uint64) {
	defer chargeSpace(f, fileSpace(f))
	switch n := f.nblocks(); {
	case n == 0:
		f.setInline(nb)
	case n == 1:
		// The first block moves from the inode to a new slice.
		b := f.inline()
		b.Length = prev.Length
		if prev.HasCRC {
			b = b.WithCRC(prev.CRC)
		}
		f.setBlocks([]Block{b, nb}, b.Length+nb.Length)
	case f.ext.blocks[n-1].Length != prev.Length || (prev.HasCRC && !f.ext.blocks[n-1].HasCRC):
		// A reader may hold f.ext.blocks: never write into it. Copy.
		e := f.ext
		fresh := make([]Block, n+1, n+1+n/8)
		copy(fresh, e.blocks)
		e.length = e.length - fresh[n-1].Length + prev.Length
		fresh[n-1].Length = prev.Length
		if prev.HasCRC {
			fresh[n-1] = fresh[n-1].WithCRC(prev.CRC)
		}
		fresh[n] = nb
		e.blocks = fresh
	default:
		// Spare capacity was never part of a published slice (AbandonBlock
		// caps the slice it shrinks), so appending in place is safe.
		f.ext.blocks = append(f.ext.blocks, nb)
	}
	t.blocks.put(nb.ID, f.id)
	t.numBlocks++
	t.nextBlockID = max(t.nextBlockID, nb.ID+1)
	t.nextGenStamp = max(t.nextGenStamp, nb.GenStamp+1)
	f.mtime = mtimeMs
	return nb, f.length()
}

// Complete closes file p (still inode id). blocks must equal the file's
// blocks by (ID, GenStamp), in order: after Append too, the list starts
// with the blocks the file had when it was reopened. Their lengths become
// the file's (a committed block's length may not change), and
// so do the CRCs they carry (a block without one keeps what AddBlock
// recorded). A CRC that differs from one already recorded for that block
// is refused (Precondition): a block is committed once. A file already
// complete with the same blocks and lengths, and no CRC it lacks or
// records differently, is success and unchanged.
func (t *Tree) Complete(p Path, id ID, blocks []Block, mtimeMs int64) (FileInfo, error) {
	return t.complete(nil, "namespace.Tree.Complete", p, id, blocks, mtimeMs)
}

// complete is Complete for caller c, who must be the file's writer. A
// file already complete has no writer: the unchanged-success answer to a
// retried Complete goes to any caller who can traverse to it, as in HDFS
// (HDFS-3031), since it changes nothing.
func (t *Tree) complete(c *Caller, op string, path Path, id ID, blocks []Block, mtimeMs int64) (FileInfo, error) {
	p := path.s
	f, err := t.writableFile(c, op, path, id)
	if err != nil {
		return FileInfo{}, err
	}
	if f.state() == UnderConstruction {
		if err := c.checkWriter(op, p, f); err != nil {
			return FileInfo{}, err
		}
	}
	var one [1]Block
	cur := f.blockList(&one)
	if msg := diffBlocks(blocks, cur); msg != "" {
		return FileInfo{}, errs.New(errs.Precondition, op, p, "block list mismatch: "+msg)
	}
	same := true
	var length uint64
	for i, b := range blocks {
		have := cur[i]
		if b.Length > f.blockSize {
			return FileInfo{}, errs.Newf(errs.Invalid, op, p, "block %v length %d exceeds block size %d", b, b.Length, f.blockSize)
		}
		if crcConflict(b, have) {
			return FileInfo{}, errs.Newf(errs.Precondition, op, p, "block %v CRC32C %08x differs from the recorded %08x", b, b.CRC, have.CRC)
		}
		if f.state() == UnderConstruction && i < len(blocks)-1 && lengthConflict(b, have) ||
			f.state() == UnderConstruction && i == len(blocks)-1 && lastLengthConflict(b, have) {
			return FileInfo{}, errs.Newf(errs.Precondition, op, p, "block %v length %d differs from its committed length %d", b, b.Length, have.Length)
		}
		same = same && b.Length == have.Length && (!b.HasCRC || have.HasCRC)
		length += b.Length
	}
	if f.state() == Complete {
		if !same {
			return FileInfo{}, errs.New(errs.Precondition, op, p, "file is already complete with different block lengths or checksums")
		}
		return f.info(p), nil
	}
	defer chargeSpace(f, fileSpace(f))
	if !same {
		// A block without a CRC keeps the one recorded.
		merged := func(i int) Block {
			b := blocks[i]
			if !b.HasCRC {
				b.CRC, b.HasCRC = cur[i].CRC, cur[i].HasCRC
			}
			return b
		}
		if len(blocks) == 1 {
			f.setInline(merged(0))
		} else {
			fresh := make([]Block, len(blocks))
			for i := range blocks {
				fresh[i] = merged(i)
			}
			f.setBlocks(fresh, length)
		}
	}
	f.close()
	f.mtime = mtimeMs
	return f.info(p), nil
}

// diffBlocks describes the first difference between got and the file's
// blocks, or returns "".
func diffBlocks(got, have []Block) string {
	for i := 0; i < min(len(got), len(have)); i++ {
		if got[i].ID != have[i].ID || got[i].GenStamp != have[i].GenStamp {
			return "block " + strconv.Itoa(i) + " is " + got[i].String() + ", the file has " + have[i].String()
		}
	}
	switch {
	case len(got) > len(have):
		return "got " + strconv.Itoa(len(got)) + " blocks, the file has " + strconv.Itoa(len(have)) + "; first extra " + got[len(have)].String()
	case len(got) < len(have):
		return "got " + strconv.Itoa(len(got)) + " blocks, the file has " + strconv.Itoa(len(have)) + "; first missing " + have[len(got)].String()
	}
	return ""
}

// AbandonBlock removes b, which must be the last block (by ID and
// GenStamp) of the under-construction file p (still inode id).
func (t *Tree) AbandonBlock(p Path, id ID, b Block) error {
	return t.abandonBlock(nil, "namespace.Tree.AbandonBlock", p, id, b)
}

// abandonBlock is AbandonBlock for caller c, who must be the file's writer.
func (t *Tree) abandonBlock(c *Caller, op string, path Path, id ID, b Block) error {
	p := path.s
	f, err := t.openFile(c, op, path, id)
	if err != nil {
		return err
	}
	if f.nblocks() == 0 {
		return errs.Newf(errs.Precondition, op, p, "cannot abandon %v: the file has no blocks", b)
	}
	last := f.lastBlock()
	if last.ID != b.ID || last.GenStamp != b.GenStamp {
		return errs.Newf(errs.Precondition, op, p, "cannot abandon %v: it is not the last block %v", b, last)
	}
	before := fileSpace(f)
	f.dropLast()
	chargeSpace(f, before)
	t.dropBlock(f, last)
	t.numBlocks--
	return nil
}
