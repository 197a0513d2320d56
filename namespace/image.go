package namespace

import (
	"bufio"
	"encoding/binary"
	"hash/crc32"
	"io"

	"github.com/blockfs/blockfs/errs"
)

// The namespace image: see "Namespace image (snapshot)" in docs/FORMATS.md
// for the byte layout.
const (
	imageMagic   = "BFSNSIMG"
	imageVersion = 3 // 3 added each block's CRC32C
	imageV2      = 2 // still read: 2 added the writer of files under construction; its blocks have no CRC
	imageV1      = 1 // still read: its open files get their owner as writer

	recMeta = 1
	recDir  = 2
	recFile = 3
	recEnd  = 4

	metaLen = 4*4 + 3*8
	endLen  = 3 * 8

	// blockLen is the size of one block entry in a FILE record: id,
	// generation stamp, length, flags, CRC. Versions 1 and 2 stop after the
	// length (blockLenV2).
	blockLen   = 3*8 + 1 + 4
	blockLenV2 = 3 * 8

	// blockHasCRC is the only defined bit of a block entry's flags.
	blockHasCRC = 1

	// maxFixedRecord bounds a record without its blocks: three strings
	// (each at most 64 KiB plus a varint), the two writer strings (each at
	// most 255 bytes plus a varint) and the fixed fields.
	maxFixedRecord = 3*(capComponentLen+binary.MaxVarintLen64) + 2*(maxUserName+binary.MaxVarintLen64) + 64
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// imgWriter frames records and keeps the running checksum of the stream.
type imgWriter struct {
	w   io.Writer
	crc uint32
	buf []byte
	err error
}

func (w *imgWriter) write(b []byte) {
	if w.err != nil {
		return
	}
	w.crc = crc32.Update(w.crc, castagnoli, b)
	_, w.err = w.w.Write(b)
}

// record writes w.buf[5:] as the body of a record of type typ; the first
// five bytes of w.buf are reserved for the record header.
func (w *imgWriter) record(typ byte) {
	w.buf[0] = typ
	binary.LittleEndian.PutUint32(w.buf[1:5], uint32(len(w.buf)-5))
	w.buf = binary.LittleEndian.AppendUint32(w.buf, crc32.Checksum(w.buf, castagnoli))
	w.write(w.buf)
}

// WriteImage streams the tree to w: a header, one META record, one record
// per inode in depth-first order with children by name (so parents come
// before children), an END record with the counts, and a CRC-32C of all of
// it. Only one inode's record is buffered at a time.
func (t *Tree) WriteImage(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	err := t.writeImage(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return errs.Wrap(errs.IO, "writeImage", "", err)
	}
	return nil
}

// writeImage writes the image to w, one Write per record.
func (t *Tree) writeImage(w io.Writer) error {
	iw := &imgWriter{w: w, buf: make([]byte, 0, 512)}
	var hdr [12]byte
	copy(hdr[:], imageMagic)
	binary.LittleEndian.PutUint32(hdr[8:], imageVersion)
	iw.write(hdr[:])

	b := append(iw.buf[:0], 0, 0, 0, 0, 0)
	for _, v := range []int{t.lim.MaxPathLen, t.lim.MaxComponentLen, t.lim.MaxBlocksPerFile, t.lim.MaxDirItems} {
		b = binary.LittleEndian.AppendUint32(b, uint32(v))
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(t.nextID))
	b = binary.LittleEndian.AppendUint64(b, t.nextBlockID)
	b = binary.LittleEndian.AppendUint64(b, t.nextGenStamp)
	iw.buf = b
	iw.record(recMeta)

	t.writeInode(iw, t.root)

	b = append(iw.buf[:0], 0, 0, 0, 0, 0)
	b = binary.LittleEndian.AppendUint64(b, uint64(t.numDirs))
	b = binary.LittleEndian.AppendUint64(b, uint64(t.numFiles))
	b = binary.LittleEndian.AppendUint64(b, uint64(t.numBlocks))
	iw.buf = b
	iw.record(recEnd)

	var tr [4]byte
	binary.LittleEndian.PutUint32(tr[:], iw.crc)
	iw.write(tr[:])
	return iw.err
}

func (t *Tree) writeInode(iw *imgWriter, n *inode) {
	if iw.err != nil {
		return
	}
	b := append(iw.buf[:0], 0, 0, 0, 0, 0)
	var parent ID
	if n.parent != nil {
		parent = n.parent.id
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(n.id))
	b = binary.LittleEndian.AppendUint64(b, uint64(parent))
	b = appendString(b, n.name)
	b = appendString(b, n.owner)
	b = appendString(b, n.group)
	b = binary.LittleEndian.AppendUint32(b, n.mode)
	b = binary.LittleEndian.AppendUint64(b, uint64(n.mtime))
	if n.dir {
		iw.buf = b
		iw.record(recDir)
		for _, c := range n.kids {
			t.writeInode(iw, c)
		}
		return
	}
	b = binary.LittleEndian.AppendUint32(b, n.repl)
	b = binary.LittleEndian.AppendUint64(b, n.blockSize)
	b = append(b, byte(n.state))
	if n.state == UnderConstruction {
		b = appendString(b, n.writer.Client)
		b = appendString(b, n.writer.User)
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(n.blocks)))
	for _, blk := range n.blocks {
		b = binary.LittleEndian.AppendUint64(b, blk.ID)
		b = binary.LittleEndian.AppendUint64(b, blk.GenStamp)
		b = binary.LittleEndian.AppendUint64(b, blk.Length)
		var flags byte
		if blk.HasCRC {
			flags = blockHasCRC
		}
		b = append(b, flags)
		b = binary.LittleEndian.AppendUint32(b, blk.CRC)
	}
	iw.buf = b
	iw.record(recFile)
	if cap(iw.buf) > 64<<10 {
		iw.buf = make([]byte, 0, 512) // don't pin one huge file's buffer
	}
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}
