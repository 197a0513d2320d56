package namespace

import (
	"encoding/binary"
	"hash/crc32"
	"io"
)

// The namespace image: see "Namespace image (snapshot)" in docs/FORMATS.md
// for the byte layout.
const (
	imageMagic   = "BFSNSIMG"
	imageVersion = 6 // 6 keeps the ATTRS of snapshots' inodes (hsnap_image.go)
	imageV5      = 5 // still read: 5 added the namespace snapshot section; its snapshots have no ATTRS
	imageV4      = 4 // still read: 4 added the QUOTA record; it has no snapshots
	imageV3      = 3 // still read: 3 added each block's CRC32C; it has no quotas
	imageV2      = 2 // still read: 2 added the writer of files under construction; its blocks have no CRC
	imageV1      = 1 // still read: its open files get their owner as writer

	recMeta = 1
	recDir  = 2
	recFile = 3
	recEnd  = 4
	// recQuota follows the DIR record of a directory with a quota
	// (version 4): its id and its namespace and space quotas.
	recQuota = 5
	quotaLen = 3 * 8
	// recAttrs (image_attrs.go) follows the record of an inode with
	// extended attributes or an access time, and its QUOTA record if any.
	// Images without one read as before, so the version stays 4.
	recAttrs = 16

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

// WriteImage streams the tree to w: a header, one META record, one record
// per inode in depth-first order with children by name (so parents come
// before children), an END record with the counts, and a CRC-32C of all of
// it. It encodes through a View (view.go) in slices of about 64 KiB, so
// only one slice of the image is in memory at a time; the caller holds the
// read lock throughout. To encode without holding a lock throughout, see
// Tree.View.
func (t *Tree) WriteImage(w io.Writer) error {
	return t.newView().Encode(w)
}

// appendHeader appends the image header and META record of view v.
func (v *View) appendHeader(b []byte) []byte {
	b = append(b, imageMagic...)
	b = binary.LittleEndian.AppendUint32(b, v.version())
	at := len(b)
	b = append(b, 0, 0, 0, 0, 0)
	for _, l := range []int{v.lim.MaxPathLen, v.lim.MaxComponentLen, v.lim.MaxBlocksPerFile, v.lim.MaxDirItems} {
		b = binary.LittleEndian.AppendUint32(b, uint32(l))
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(v.nextID))
	b = binary.LittleEndian.AppendUint64(b, v.nextBlockID)
	b = binary.LittleEndian.AppendUint64(b, v.nextGenStamp)
	return endRecord(b, at, recMeta)
}

// appendEnd appends the END record of view v.
func (v *View) appendEnd(b []byte) []byte {
	at := len(b)
	b = append(b, 0, 0, 0, 0, 0)
	b = binary.LittleEndian.AppendUint64(b, uint64(v.numDirs))
	b = binary.LittleEndian.AppendUint64(b, uint64(v.numFiles))
	b = binary.LittleEndian.AppendUint64(b, uint64(v.numBlocks))
	return endRecord(b, at, recEnd)
}

// endRecord completes the record of type typ that starts at b[at:]: five
// reserved header bytes, then its body. It fills in the header and appends
// the record's CRC-32C.
func endRecord(b []byte, at int, typ byte) []byte {
	b[at] = typ
	binary.LittleEndian.PutUint32(b[at+1:at+5], uint32(len(b)-at-5))
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[at:], castagnoli))
}

// appendInode appends the DIR or FILE record of n, whose parent is inode
// parent (0 for the root).
func appendInode(b []byte, n *inode, parent ID) []byte {
	at := len(b)
	b = append(b, 0, 0, 0, 0, 0)
	b = binary.LittleEndian.AppendUint64(b, uint64(n.id))
	b = binary.LittleEndian.AppendUint64(b, uint64(parent))
	b = appendString(b, n.name)
	b = appendString(b, n.og.owner)
	b = appendString(b, n.og.group)
	b = binary.LittleEndian.AppendUint32(b, uint32(n.mode()))
	b = binary.LittleEndian.AppendUint64(b, uint64(n.mtime))
	if n.dir() {
		b = endRecord(b, at, recDir)
		if q := n.quota(); q != nil {
			at = len(b)
			b = append(b, 0, 0, 0, 0, 0)
			b = binary.LittleEndian.AppendUint64(b, uint64(n.id))
			b = binary.LittleEndian.AppendUint64(b, uint64(q.ns))
			b = binary.LittleEndian.AppendUint64(b, uint64(q.ds))
			b = endRecord(b, at, recQuota)
		}
		return appendAttrs(b, n)
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(n.repl()))
	b = binary.LittleEndian.AppendUint64(b, n.blockSize)
	b = append(b, byte(n.state()))
	if n.state() == UnderConstruction {
		b = appendString(b, n.writer().Client)
		b = appendString(b, n.writer().User)
	}
	var one [1]Block
	bs := n.blockList(&one)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(bs)))
	for _, blk := range bs {
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
	return appendAttrs(endRecord(b, at, recFile), n)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}
