package namespace

import (
	"fmt"

	"github.com/blockfs/blockfs/errs"
)

// This file holds what changes the last block of a file under
// construction besides AddBlock: reopening it for append, the length an
// hflush makes visible, a rebuilt pipeline's generation stamp, and the
// outcome of a block recovery (HDFS's fsync, updatePipeline and
// commitBlockSynchronization).
//
// The last block of an under-construction file may grow, never shrink,
// until its writer commits it (AddBlock's previous, Complete) or a
// recovery does; every earlier block's length is final.

// AppendLast is Session.Append that reopens the file's last block when it
// is shorter than the block size (HDFS's default append): the block takes
// generation stamp genStamp (its replicas are reopened under it) and
// loses its CRC, which its writer commits anew. The reopened block is
// returned; nil when the file has no blocks or the last is empty or full, and then
// new blocks start after it as with Append.
func (s Session) AppendLast(path Path, genStamp uint64, mtimeMs int64) (FileInfo, *Block, error) {
	op, p, t := s.op, path.s, s.t
	fi, err := t.append(s.c, op, path, mtimeMs, true)
	if err != nil {
		return FileInfo{}, nil, err
	}
	f := t.inodes.get(fi.ID)
	if f.nblocks() == 0 || f.lastBlock().Length == 0 || f.lastBlock().Length >= f.blockSize {
		return fi, nil, nil
	}
	if genStamp == 0 {
		return FileInfo{}, nil, errs.New(errs.Internal, op, p, "no generation stamp for the reopened block")
	}
	b := f.lastBlock()
	b.GenStamp, b.CRC, b.HasCRC = genStamp, 0, false
	before := fileSpace(f)
	t.replaceLast(f, b)
	chargeSpace(f, before)
	t.nextGenStamp = max(t.nextGenStamp, genStamp+1)
	return f.info(p), &b, nil
}

// replaceLast sets f's last block to b (same id): the inline block in
// place, a block slice by copying it, since a reader may hold the old one.
func (t *Tree) replaceLast(f *inode, b Block) {
	t.touch(f)
	e := f.ext
	if e == nil || e.blocks == nil {
		f.setInline(b)
		return
	}
	n := len(e.blocks)
	fresh := make([]Block, n, n+n/8+1)
	copy(fresh, e.blocks)
	e.length = e.length - fresh[n-1].Length + b.Length
	fresh[n-1] = b
	e.blocks = fresh
}

// lastOf checks that b names (id and generation stamp) the last block of
// the under-construction file f and returns it.
func lastOf(op, p string, f *inode, b Block) (Block, error) {
	if f.nblocks() == 0 {
		return Block{}, errs.Newf(errs.Precondition, op, p, "%v is not the last block: the file has no blocks", b)
	}
	last := f.lastBlock()
	if last.ID != b.ID || last.GenStamp != b.GenStamp {
		return Block{}, errs.Newf(errs.Precondition, op, p, "%v is not the last block %v", b, last)
	}
	return last, nil
}

// Fsync records that the last block b of the writer's file p (inode id)
// holds b.Length bytes every datanode of its pipeline acknowledged, so
// readers see them: the block's length grows to b.Length (a smaller one
// changes nothing). Only the writer may; b.Length above the block size is
// Invalid.
func (s Session) Fsync(path Path, id ID, b Block, mtimeMs int64) (FileInfo, error) {
	op, p, t := s.op, path.s, s.t
	f, err := t.openFile(s.c, op, path, id)
	if err != nil {
		return FileInfo{}, err
	}
	last, err := lastOf(op, p, f, b)
	if err != nil {
		return FileInfo{}, err
	}
	if b.Length > f.blockSize {
		return FileInfo{}, errs.Newf(errs.Invalid, op, p, "length %d of %v exceeds the block size %d", b.Length, b, f.blockSize)
	}
	if last.HasCRC {
		return FileInfo{}, errs.Newf(errs.Precondition, op, p, "%v is committed", b)
	}
	if b.Length > last.Length {
		last.Length = b.Length
		defer chargeSpace(f, fileSpace(f))
		t.replaceLast(f, last)
		f.mtime = mtimeMs
	}
	return f.info(p), nil
}

// AllocPipelineStamp gives the writer of file p (inode id) a new
// generation stamp for its last block b, to rebuild a pipeline; the block
// keeps its stamp until UpdatePipeline.
func (s Session) AllocPipelineStamp(p Path, id ID, b Block) (uint64, error) {
	op := s.op
	f, err := s.t.openFile(s.c, op, p, id)
	if err != nil {
		return 0, err
	}
	if _, err := lastOf(op, p.s, f, b); err != nil {
		return 0, err
	}
	return s.t.AllocGenStamp(), nil
}

// UpdatePipeline gives the writer's last block old the generation stamp
// of nb (higher than old's, and allocated: below the tree's counter). The
// block keeps its length; its CRC is dropped.
func (s Session) UpdatePipeline(path Path, id ID, old, nb Block) (Block, error) {
	op, p, t := s.op, path.s, s.t
	f, err := t.openFile(s.c, op, path, id)
	if err != nil {
		return Block{}, err
	}
	last, err := lastOf(op, p, f, old)
	if err != nil {
		if f.nblocks() > 0 && f.lastBlock().ID == nb.ID && f.lastBlock().GenStamp == nb.GenStamp {
			return f.lastBlock(), nil // a retry of this update
		}
		return Block{}, err
	}
	if nb.ID != old.ID || nb.GenStamp <= old.GenStamp || nb.GenStamp >= t.nextGenStamp {
		return Block{}, errs.Newf(errs.Invalid, op, p, "new block %v must be %v under a newer, allocated generation stamp", nb, old)
	}
	last.GenStamp, last.CRC, last.HasCRC = nb.GenStamp, 0, false
	before := fileSpace(f)
	t.replaceLast(f, last)
	chargeSpace(f, before)
	return last, nil
}

// Recovery is the outcome of a block recovery of the last block of an
// under-construction file (CommitRecovery).
type Recovery struct {
	Block      Block  // the last block, as recovery found it (id, generation stamp)
	RecoveryID uint64 // the new generation stamp
	Length     uint64 // the length every finalized replica holds
	CRC        uint32
	HasCRC     bool
	Delete     bool // no replica holds the block: drop it
}

// CommitRecovery applies a block recovery to the under-construction file
// id (by the system: no caller checks) and closes it. The file's last
// block must be r.Block (id; its generation stamp may be older than
// r.RecoveryID but not newer). It returns the file and the block as
// committed (zero when dropped). A file already closed by this recovery
// (same id, stamp and length) is success, unchanged. Its errors carry op,
// the operation of the caller (CommitBlockSynchronization).
func (t *Tree) CommitRecovery(op string, id ID, r Recovery, mtimeMs int64) (FileInfo, Block, error) {
	f := t.inodes.get(id)
	if f == nil || f.dir() {
		return FileInfo{}, Block{}, errs.Newf(errs.NotFound, op, "", "inode %d is not a file", id)
	}
	p := pathOf(f)
	n := f.nblocks()
	var last Block
	if n > 0 {
		last = f.lastBlock()
	}
	if f.state() != UnderConstruction {
		if n > 0 && last.ID == r.Block.ID && last.GenStamp == r.RecoveryID && last.Length == r.Length {
			return f.info(p), last, nil
		}
		return FileInfo{}, Block{}, errs.New(errs.Precondition, op, p, "file is not under construction")
	}
	if n == 0 || last.ID != r.Block.ID {
		return FileInfo{}, Block{}, errs.Newf(errs.Precondition, op, p, "%v is not the last block of the file", r.Block)
	}
	if last.GenStamp > r.RecoveryID || r.RecoveryID >= t.nextGenStamp {
		return FileInfo{}, Block{}, errs.Newf(errs.Precondition, op, p, "recovery %d of %v is stale (the block is %v)", r.RecoveryID, r.Block, last)
	}
	if r.Length > f.blockSize {
		return FileInfo{}, Block{}, errs.Newf(errs.Invalid, op, p, "recovered length %d exceeds the block size %d", r.Length, f.blockSize)
	}
	// The last block's length is the durable floor: what an hflush
	// (Fsync) or the append that reopened it recorded every datanode of
	// the pipeline holds. A recovery below it would drop acknowledged
	// bytes, so it must come from a primary that lied or lost them.
	if r.Delete && last.Length > 0 || r.Length < last.Length {
		got := fmt.Sprintf("length %d", r.Length)
		if r.Delete {
			got = "deleting the block"
		}
		return FileInfo{}, Block{}, errs.Newf(errs.Precondition, op, p, "recovery %d of %v: %s is below the %d bytes recorded durable", r.RecoveryID, r.Block, got, last.Length)
	}
	t.touch(f)
	defer chargeSpace(f, fileSpace(f))
	var out Block
	if r.Delete {
		f.dropLast()
		t.dropBlock(f, last)
		t.numBlocks--
	} else {
		out = Block{ID: last.ID, GenStamp: r.RecoveryID, Length: r.Length, CRC: r.CRC, HasCRC: r.HasCRC}
		t.replaceLast(f, out)
	}
	f.close()
	f.mtime = mtimeMs
	return f.info(p), out, nil
}

// CloseEmpty closes the under-construction file id whose last block holds
// nothing anywhere (or which has no blocks), dropping such a block; the
// system's side of lease recovery when there is nothing to recover. It
// returns the dropped block, if any. Its errors carry op, the operation
// of the caller.
func (t *Tree) CloseEmpty(op string, id ID, mtimeMs int64) (FileInfo, *Block, error) {
	f := t.inodes.get(id)
	if f == nil || f.dir() || f.state() != UnderConstruction {
		return FileInfo{}, nil, errs.Newf(errs.Precondition, op, "", "inode %d is not a file under construction", id)
	}
	t.touch(f)
	defer chargeSpace(f, fileSpace(f))
	var dropped *Block
	if f.nblocks() > 0 {
		last := f.lastBlock()
		if last.Length != 0 || last.HasCRC {
			return FileInfo{}, nil, errs.Newf(errs.Precondition, op, pathOf(f), "last block %v holds data", last)
		}
		f.dropLast()
		t.dropBlock(f, last)
		t.numBlocks--
		dropped = &last
	}
	f.close()
	f.mtime = mtimeMs
	return f.info(pathOf(f)), dropped, nil
}

// UnderConstructionBy returns whether file id is under construction and
// its writer.
func (t *Tree) UnderConstructionBy(id ID) (Writer, bool) {
	f := t.inodes.get(id)
	if f == nil || f.dir() || f.state() != UnderConstruction || f.writer() == nil {
		return Writer{}, false
	}
	return *f.writer(), true
}

// CheckWrite checks that the caller may write file p (Exec on every
// ancestor, Write on the file), as append and lease recovery need.
func (s Session) CheckWrite(path Path) error {
	op, p := s.op, path.s
	if err := s.t.admit(op, path); err != nil {
		return err
	}
	n, rest, err := s.t.resolve(s.c, op, path)
	if err != nil {
		return err
	}
	if rest != "" {
		return errs.New(errs.NotFound, op, p, "file does not exist")
	}
	return s.c.check(op, p, n, p, Write, "recoverLease")
}
