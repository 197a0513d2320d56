package namespace

// inode is a directory or a file. It is 96 bytes, a malloc size class (at
// a million files every byte here is a megabyte), laid out as HDFS lays
// out an INodeFile:
//
//   - owner and group are one pointer to an interned pair;
//   - mode, replication, the directory and under-construction flags and
//     the inline block's has-CRC flag are packed in one 32-bit word (hdr);
//   - a file's block, while it has exactly one, is inline (b0*): no block
//     slice, no backing array;
//   - what most inodes lack is behind one pointer, ext: a directory's
//     children, an open file's writer, and the blocks of a file with two
//     or more. A closed file of at most one block has none.
//
// Copy-on-write (view.go): a shallow copy of an inode is a frozen
// pre-image because touch also gives the live inode a private copy of its
// ext (and of the children chunk pointers in it; chunks are copied when
// changed, children.go) before the mutation changes anything; block slices in an ext are copy-on-write (package comment),
// writers and owner/group pairs are never changed.
type inode struct {
	id     ID
	parent *inode // nil for the root
	name   string
	og     *ownerGroup // owner and group, interned (Tree.ownerGroup)
	mtime  int64

	blockSize uint64    // files
	ext       *inodeExt // nil when there is nothing to keep in it

	// The block of a file that has exactly one; b0ID is 0 otherwise (0 is
	// never a block id). Its HasCRC is hdr's hdrB0CRC bit.
	b0ID, b0GenStamp, b0Length uint64
	b0CRC                      uint32

	hdr hdr
}

// inodeExt is the state of an inode that most inodes lack. It belongs to
// one inode; touch copies it before a mutation while views may hold it.
type inodeExt struct {
	kids   children // directories: sorted by name, in chunks (children.go)
	blocks []Block  // files of two or more blocks, all of them (copy-on-write); else nil
	length uint64   // with blocks: their total length
	writer *Writer  // files: non-nil exactly while under construction
	quota  *quota   // directories with a quota (quota.go); else nil
	attrs  *attrs   // extended attributes and an access time (xattr.go); else nil
}

// hdr packs an inode's small fields, as HDFS packs an INodeFile's header
// word. Every field is validated before it is set (checkPerm,
// checkReplication, the image reader), so a value never needs truncating;
// the setters panic on one that does not fit.
//
//	bits  0..9   mode: permission bits and sticky bit (permMask, 01777)
//	bits 10..15  replication (files; MinReplication..MaxReplication), 0 for directories
//	bit  16      directory
//	bit  17      under construction (files)
//	bit  18      the inline block (b0) has a CRC
type hdr uint32

const (
	hdrModeBits = 10
	hdrReplBits = 6

	hdrReplShift = hdrModeBits
	hdrModeMask  = 1<<hdrModeBits - 1
	hdrReplMask  = (1<<hdrReplBits - 1) << hdrReplShift
	hdrDir       = 1 << (hdrModeBits + hdrReplBits)
	hdrUC        = hdrDir << 1
	hdrB0CRC     = hdrDir << 2
)

// The packed widths must hold every valid value: these fail to compile
// (a negative constant converted to uint) otherwise.
const (
	_ = uint(hdrModeMask - permMask)
	_ = uint(1<<hdrReplBits - 1 - MaxReplication)
)

func (h hdr) mode() uint16 { return uint16(h & hdrModeMask) }
func (h hdr) repl() uint8  { return uint8((h & hdrReplMask) >> hdrReplShift) }

// withMode returns h with mode m (at most 01777).
func (h hdr) withMode(m uint32) hdr {
	if m&^permMask != 0 {
		panic("namespace: mode does not fit the inode header")
	}
	return h&^hdrModeMask | hdr(m)
}

// withRepl returns h with replication r (at most 63).
func (h hdr) withRepl(r uint32) hdr {
	if r >= 1<<hdrReplBits {
		panic("namespace: replication does not fit the inode header")
	}
	return h&^hdrReplMask | hdr(r)<<hdrReplShift
}

// with returns h with flag f set or cleared.
func (h hdr) with(f hdr, on bool) hdr {
	if on {
		return h | f
	}
	return h &^ f
}

func (n *inode) dir() bool        { return n.hdr&hdrDir != 0 }
func (n *inode) mode() uint16     { return n.hdr.mode() }
func (n *inode) repl() uint8      { return n.hdr.repl() }
func (n *inode) setMode(m uint32) { n.hdr = n.hdr.withMode(m) }

// state returns a file's life-cycle state; Complete for a directory.
func (n *inode) state() FileState {
	if n.hdr&hdrUC != 0 {
		return UnderConstruction
	}
	return Complete
}

// kids returns a directory's children (none for a file).
func (n *inode) kids() children {
	if n.ext == nil {
		return children{}
	}
	return n.ext.kids
}

// writer returns the writer of a file under construction, nil otherwise.
func (n *inode) writer() *Writer {
	if n.ext == nil {
		return nil
	}
	return n.ext.writer
}

// clone returns a copy of e with its own chunk pointers, for touch.
func (e *inodeExt) clone() *inodeExt {
	c := *e
	c.kids = e.kids.clone()
	return &c
}

// extForWrite returns n's ext, making one if n has none. The caller has
// touched n.
func (n *inode) extForWrite() *inodeExt {
	if n.ext == nil {
		n.ext = &inodeExt{}
	}
	return n.ext
}

// dropEmptyExt drops file n's ext when nothing is left in it.
func (n *inode) dropEmptyExt() {
	if e := n.ext; e != nil && e.kids.chunks == nil && e.blocks == nil && e.writer == nil && e.quota == nil && e.attrs == nil {
		n.ext = nil
	}
}

// open marks file n under construction by w (non-nil); close marks it
// complete with no writer. The caller has touched n.
func (n *inode) open(w *Writer) {
	n.hdr |= hdrUC
	n.extForWrite().writer = w
}

func (n *inode) close() {
	n.hdr &^= hdrUC
	if n.ext != nil {
		n.ext.writer = nil
		n.dropEmptyExt()
	}
}

// nblocks returns the number of blocks of file n.
func (n *inode) nblocks() int {
	if n.ext != nil && n.ext.blocks != nil {
		return len(n.ext.blocks)
	}
	if n.b0ID != 0 {
		return 1
	}
	return 0
}

// length returns the sum of the lengths of file n's blocks.
func (n *inode) length() uint64 {
	if n.ext != nil && n.ext.blocks != nil {
		return n.ext.length
	}
	return n.b0Length
}

// inline returns the inline block (valid when b0ID != 0).
func (n *inode) inline() Block {
	return Block{ID: n.b0ID, GenStamp: n.b0GenStamp, Length: n.b0Length, CRC: n.b0CRC, HasCRC: n.hdr&hdrB0CRC != 0}
}

// blockList returns file n's blocks, to read only: the tree's own
// (copy-on-write) slice for two or more, else in one (which the caller
// provides, so that it can stay on the caller's stack).
func (n *inode) blockList(one *[1]Block) []Block {
	if n.ext != nil && n.ext.blocks != nil {
		return n.ext.blocks
	}
	if n.b0ID == 0 {
		return nil
	}
	one[0] = n.inline()
	return one[:]
}

// lastBlock returns the last block of file n, which has blocks.
func (n *inode) lastBlock() Block {
	if n.ext != nil && n.ext.blocks != nil {
		return n.ext.blocks[len(n.ext.blocks)-1]
	}
	return n.inline()
}

// publicBlocks returns file n's blocks for a caller that may keep them
// past the lock: the tree's own copy-on-write slice, never written again,
// for two or more blocks; a new one-element slice for one, since the
// inline block is changed in place.
func (n *inode) publicBlocks() []Block {
	if n.ext != nil && n.ext.blocks != nil {
		return n.ext.blocks
	}
	if n.b0ID == 0 {
		return nil
	}
	return []Block{n.inline()}
}

// setBlocks makes bs, of total length length, file n's block list. A
// list of two or more becomes the tree's own: bs must be a slice no reader
// has seen, or one whose elements this call does not change (the
// copy-on-write rule of the package comment). The caller has touched n.
func (n *inode) setBlocks(bs []Block, length uint64) {
	if len(bs) >= 2 {
		n.setInline(Block{})
		e := n.extForWrite()
		e.blocks, e.length = bs, length
		return
	}
	if n.ext != nil {
		n.ext.blocks, n.ext.length = nil, 0
		n.dropEmptyExt()
	}
	var b Block
	if len(bs) == 1 {
		b = bs[0]
	}
	n.setInline(b)
}

// dropLast removes the last block of file n, which has blocks. The
// caller has touched n.
func (n *inode) dropLast() {
	e := n.ext
	if e == nil || e.blocks == nil {
		n.setInline(Block{})
		return
	}
	k := len(e.blocks)
	length := e.length - e.blocks[k-1].Length
	// Cap the capacity: a reader may hold the longer slice, so the next
	// append must not write into the slot being dropped.
	n.setBlocks(e.blocks[:k-1:k-1], length)
}

// setInline sets the inline block fields to b (zero: none).
func (n *inode) setInline(b Block) {
	n.b0ID, n.b0GenStamp, n.b0Length, n.b0CRC = b.ID, b.GenStamp, b.Length, b.CRC
	n.hdr = n.hdr.with(hdrB0CRC, b.HasCRC)
}

// dirInode is a directory's inode and ext in one allocation, so that the
// children a path walk searches are next to the inode in memory, not one
// more cache miss away. (touch may later give the inode an ext elsewhere.)
type dirInode struct {
	inode
	ext0 inodeExt
}

// newDir returns a directory inode (no id, no parent yet).
func newDir(name string, mode uint32, og *ownerGroup, mtime int64) *inode {
	d := &dirInode{inode: inode{name: name, og: og, mtime: mtime, hdr: hdr(0).withMode(mode) | hdrDir}}
	d.inode.ext = &d.ext0
	return &d.inode
}

// newFile returns a file inode (no id, no parent yet); complete unless w
// is non-nil.
func newFile(name string, mode, repl uint32, blockSize uint64, og *ownerGroup, mtime int64, w *Writer) *inode {
	n := &inode{name: name, og: og, mtime: mtime, blockSize: blockSize, hdr: hdr(0).withMode(mode).withRepl(repl)}
	if w != nil {
		n.open(w)
	}
	return n
}
