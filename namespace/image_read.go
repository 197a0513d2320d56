package namespace

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"

	"github.com/blockfs/blockfs/errs"
)

// imgReader reads a framed image, tracking offset and running checksum.
type imgReader struct {
	r    *bufio.Reader
	off  int64
	crc  uint32
	buf  []byte
	rec  int // records read
	strs map[string]string
	ver  uint32 // image version
	// dirs is the path of directories from the root to the last one
	// read. Records come depth first, so a record's parent is on it and
	// is found without a map lookup (at a million inodes every lookup is
	// a cache miss).
	dirs []*inode
	// og is the owner and group of the last inode read: records come
	// depth first, so runs of inodes share them, and comparing the bytes
	// saves two interning lookups and a map lookup per inode (what they
	// cost: docs/OPERATIONS.md, "Measured figures behind design choices").
	og *ownerGroup
	// snaps is the namespace snapshot section's state once it began
	// (hsnap_image.go).
	snaps *snapRead
	// last is the inode of the last DIR or FILE record: an ATTRS record
	// follows it.
	last *inode
}

func corrupt(format string, args ...any) error {
	return errs.Newf(errs.Corrupt, "readImage", "", format, args...)
}

func (ir *imgReader) readFull(b []byte) error {
	n, err := io.ReadFull(ir.r, b)
	ir.crc = crc32.Update(ir.crc, castagnoli, b[:n])
	ir.off += int64(n)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return corrupt("truncated at offset %d", ir.off)
	default:
		return errs.Wrap(errs.IO, "readImage", "", err)
	}
}

// next reads one record, returning its type and body (valid until the
// next call). maxBody bounds the body length.
func (ir *imgReader) next(maxBody int) (byte, []byte, error) {
	start := ir.off
	var h [5]byte
	if err := ir.readFull(h[:]); err != nil {
		return 0, nil, err
	}
	n := binary.LittleEndian.Uint32(h[1:])
	if int64(n) > int64(maxBody) {
		return 0, nil, corrupt("record %d at offset %d: length %d exceeds limit %d", ir.rec, start, n, maxBody)
	}
	// Grow the buffer as the bytes arrive, so a corrupt length on a short
	// input cannot make us allocate much.
	buf := append(ir.buf[:0], h[:]...)
	for len(buf) < 5+int(n) {
		k := min(5+int(n)-len(buf), 1<<20)
		buf = slices.Grow(buf, k)
		m := len(buf)
		buf = buf[:m+k]
		if err := ir.readFull(buf[m:]); err != nil {
			return 0, nil, err
		}
	}
	ir.buf = buf
	var c [4]byte
	if err := ir.readFull(c[:]); err != nil {
		return 0, nil, err
	}
	if got, want := crc32.Checksum(buf, castagnoli), binary.LittleEndian.Uint32(c[:]); got != want {
		return 0, nil, corrupt("record %d at offset %d: checksum mismatch (%08x, want %08x)", ir.rec, start, got, want)
	}
	ir.rec++
	return h[0], buf[5:], nil
}

// dec decodes a record body; any overrun sets bad and yields zeros.
type dec struct {
	b   []byte
	bad bool
}

func (d *dec) take(n int) []byte {
	if d.bad || n < 0 || n > len(d.b) {
		d.bad = true
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *dec) u8() uint8 {
	if v := d.take(1); v != nil {
		return v[0]
	}
	return 0
}

func (d *dec) u32() uint32 {
	if v := d.take(4); v != nil {
		return binary.LittleEndian.Uint32(v)
	}
	return 0
}

func (d *dec) u64() uint64 {
	if v := d.take(8); v != nil {
		return binary.LittleEndian.Uint64(v)
	}
	return 0
}

func (d *dec) bytes() []byte {
	n, k := binary.Uvarint(d.b)
	if k <= 0 || n > uint64(len(d.b)-k) {
		d.bad = true
		return nil
	}
	d.b = d.b[k:]
	return d.take(int(n))
}

// intern returns a shared copy of an owner or group name.
func (ir *imgReader) intern(b []byte) string {
	if s, ok := ir.strs[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(ir.strs) < maxNames {
		ir.strs[s] = s
	}
	return s
}

// ownerGroup returns t's interned owner and group for the bytes of a
// record.
func (ir *imgReader) ownerGroup(t *Tree, owner, group []byte) *ownerGroup {
	if og := ir.og; og != nil && og.owner == string(owner) && og.group == string(group) {
		return og
	}
	ir.og = t.ownerGroup(ir.intern(owner), ir.intern(group))
	return ir.og
}

// ReadImage reads an image written by WriteImage into a fresh tree. Any
// damage (truncation, a flipped bit, a record that breaks a tree
// invariant) is errs.Corrupt; a failing reader is errs.IO.
func ReadImage(r io.Reader) (*Tree, error) {
	ir := &imgReader{r: bufio.NewReaderSize(r, 64<<10), strs: map[string]string{}}
	var hdr [12]byte
	if err := ir.readFull(hdr[:]); err != nil {
		return nil, err
	}
	if string(hdr[:8]) != imageMagic {
		return nil, corrupt("bad magic %q", hdr[:8])
	}
	if ir.ver = binary.LittleEndian.Uint32(hdr[8:]); ir.ver != imageVersion && ir.ver != imageV5 && ir.ver != imageV4 && ir.ver != imageV3 && ir.ver != imageV2 && ir.ver != imageV1 {
		return nil, corrupt("unsupported image version %d", ir.ver)
	}
	t, err := ir.readMeta()
	if err != nil {
		return nil, err
	}
	maxBody := max(maxFixedRecord+ir.blockLen()*t.lim.MaxBlocksPerFile, maxAttrsRecord)
	quotas := false
	for {
		start := ir.off
		typ, body, err := ir.next(maxBody)
		if err != nil {
			return nil, err
		}
		switch typ {
		case recDir, recFile:
			if ir.snaps != nil {
				return nil, corrupt("record %d at offset %d: inode record after the snapshot section began", ir.rec-1, start)
			}
			if err := ir.addInode(t, typ == recDir, body, start); err != nil {
				return nil, err
			}
			continue
		case recAttrs:
			if ir.snaps != nil && ir.ver < imageVersion {
				return nil, corrupt("record %d at offset %d: ATTRS in the snapshot section of a version %d image", ir.rec-1, start, ir.ver)
			}
			if err := ir.addAttrs(body, start); err != nil {
				return nil, err
			}
			continue
		case recQuota:
			if err := ir.addQuota(body, start); err != nil {
				return nil, err
			}
			quotas = true
			continue
		case recSnapDir, recSnapshot, recHeld:
			if err := ir.snapRecord(t, typ, body, start, maxBody); err != nil {
				return nil, err
			}
			continue
		case recEnd:
			if err := ir.endSnapshots(); err != nil {
				return nil, err
			}
			if err := ir.checkEnd(t, body); err != nil {
				return nil, err
			}
		default:
			return nil, corrupt("record %d at offset %d: unknown record type %d", ir.rec-1, start, typ)
		}
		break
	}
	want := ir.crc
	var tr [4]byte
	if err := ir.readFull(tr[:]); err != nil {
		return nil, err
	}
	if got := binary.LittleEndian.Uint32(tr[:]); got != want {
		return nil, corrupt("image checksum mismatch (%08x, want %08x)", got, want)
	}
	if _, err := ir.r.ReadByte(); err == nil {
		return nil, corrupt("trailing bytes after the image at offset %d", ir.off)
	} else if err != io.EOF {
		return nil, errs.Wrap(errs.IO, "readImage", "", err)
	}
	if quotas {
		t.recountQuotas()
	}
	return t, nil
}

// addQuota decodes a QUOTA record, found at offset start: it must follow
// the DIR record of the directory it names.
func (ir *imgReader) addQuota(body []byte, start int64) error {
	d := dec{b: body}
	id, ns, ds := ID(d.u64()), int64(d.u64()), int64(d.u64())
	var dir *inode
	if len(ir.dirs) > 0 {
		dir = ir.dirs[len(ir.dirs)-1]
	}
	switch {
	case ir.ver < imageV4:
		return corrupt("record %d at offset %d: QUOTA record in a version %d image", ir.rec-1, start, ir.ver)
	case len(body) != quotaLen:
		return corrupt("record %d at offset %d: QUOTA record is %d bytes, want %d", ir.rec-1, start, len(body), quotaLen)
	case dir == nil || dir.id != id || dir.quota() != nil:
		return corrupt("record %d at offset %d: QUOTA record of inode %d does not follow its directory's record", ir.rec-1, start, id)
	case ns < QuotaReset || ds < QuotaReset || ns == QuotaReset && ds == QuotaReset:
		return corrupt("record %d at offset %d: inode %d: bad quotas %d and %d", ir.rec-1, start, id, ns, ds)
	}
	dir.extForWrite().quota = &quota{ns: ns, ds: ds}
	return nil
}

func (ir *imgReader) readMeta() (*Tree, error) {
	typ, body, err := ir.next(maxFixedRecord)
	if err != nil {
		return nil, err
	}
	if typ != recMeta || len(body) != metaLen {
		return nil, corrupt("first record is type %d, %d bytes; want META, %d bytes", typ, len(body), metaLen)
	}
	d := dec{b: body}
	var l [4]int
	caps := [4]int{capPathLen, capComponentLen, capBlocksPerFile, capDirItems}
	for i := range l {
		v := d.u32()
		if v == 0 || int64(v) > int64(caps[i]) {
			return nil, corrupt("limit %d is %d, want 1..%d", i, v, caps[i])
		}
		l[i] = int(v)
	}
	t := New(Limits{l[0], l[1], l[2], l[3]}, "", "")
	t.inodes = inodeTable{}
	t.root, t.numDirs = nil, 0
	t.nextID, t.nextBlockID, t.nextGenStamp = ID(d.u64()), d.u64(), d.u64()
	if t.nextID <= RootID || t.nextBlockID == 0 || t.nextGenStamp == 0 {
		return nil, corrupt("bad counters: next inode %d, next block %d, next genstamp %d", t.nextID, t.nextBlockID, t.nextGenStamp)
	}
	return t, nil
}

// addInode decodes one DIR or FILE record, found at offset start, and
// links it into t.
func (ir *imgReader) addInode(t *Tree, isDir bool, body []byte, start int64) error {
	bad := func(format string, args ...any) error {
		return corrupt("record %d at offset %d: %s", ir.rec-1, start, fmt.Sprintf(format, args...))
	}
	d := dec{b: body}
	n := &inode{}
	if isDir {
		n = newDir("", 0, nil, 0)
	}
	n.id = ID(d.u64())
	parentID := ID(d.u64())
	name := d.bytes()
	owner, group := d.bytes(), d.bytes()
	mode := d.u32()
	n.mtime = int64(d.u64())
	if d.bad {
		return bad("inode record too short")
	}
	switch {
	case n.id == 0 || n.id >= t.nextID:
		return bad("inode id %d outside 1..%d", n.id, t.nextID-1)
	case mode&^permMask != 0:
		return bad("inode %d: mode %#o has bits outside 01777", n.id, mode)
	case len(owner) > maxUserName || len(group) > maxUserName:
		return bad("inode %d: owner or group name longer than %d bytes", n.id, maxUserName)
	}
	n.setMode(mode)
	n.og = ir.ownerGroup(t, owner, group)
	// One map operation both checks for a duplicate and indexes n (on any
	// error the whole tree is dropped).
	if t.inodes.put(n) {
		return bad("duplicate inode id %d", n.id)
	}

	if t.root == nil {
		if n.id != RootID || parentID != 0 || len(name) != 0 || !isDir {
			return bad("first inode is %d (parent %d), want the root directory %d", n.id, parentID, RootID)
		}
		t.root = n
		t.numDirs++
		ir.dirs = append(ir.dirs, n)
		ir.last = n
		return nil
	}
	for len(ir.dirs) > 0 && ir.dirs[len(ir.dirs)-1].id != parentID {
		ir.dirs = ir.dirs[:len(ir.dirs)-1]
	}
	var parent *inode
	if len(ir.dirs) > 0 {
		parent = ir.dirs[len(ir.dirs)-1]
	} else {
		parent = t.inodes.get(parentID) // not in depth-first order: still valid
	}
	switch {
	case parent == nil:
		return bad("inode %d: parent %d not seen before it", n.id, parentID)
	case !parent.dir():
		return bad("inode %d: parent %d is a file", n.id, parentID)
	case parent.kids().len() >= t.lim.MaxDirItems:
		return bad("inode %d: directory %d has more than %d items", n.id, parentID, t.lim.MaxDirItems)
	}
	if msg := checkComponent(string(name), t.lim); msg != "" {
		return bad("inode %d: bad name %q: %s", n.id, name, msg)
	}
	for _, c := range name {
		if c == '/' || c == 0 {
			return bad("inode %d: name %q contains '/' or NUL", n.id, name)
		}
	}
	if last := parent.kids().last(); last != nil && last.name >= string(name) {
		return bad("inode %d: name %q not after %q in directory %d", n.id, name, last.name, parentID)
	}
	n.name = string(name)

	if !isDir {
		repl := d.u32()
		n.blockSize = d.u64()
		state := FileState(d.u8())
		w := ir.readWriter(&d, n, state)
		nb := d.u32()
		switch {
		case d.bad:
			return bad("inode %d: file record too short", n.id)
		case w != nil && (len(w.Client) > maxUserName || len(w.User) > maxUserName):
			return bad("inode %d: writer client id or user longer than %d bytes", n.id, maxUserName)
		case repl < MinReplication || repl > MaxReplication:
			return bad("inode %d: replication %d out of range", n.id, repl)
		case n.blockSize == 0:
			return bad("inode %d: block size 0", n.id)
		case state > Complete:
			return bad("inode %d: unknown file state %d", n.id, state)
		case int64(nb) > int64(t.lim.MaxBlocksPerFile):
			return bad("inode %d: %d blocks, limit %d", n.id, nb, t.lim.MaxBlocksPerFile)
		case int64(len(d.b)) != int64(ir.blockLen())*int64(nb):
			return bad("inode %d: %d bytes for %d blocks, want %d", n.id, len(d.b), nb, int64(ir.blockLen())*int64(nb))
		}
		n.hdr = n.hdr.withRepl(repl)
		if w != nil {
			n.open(w)
		}
		// One block goes inline, more into a slice (inode.go).
		var bs []Block
		if nb > 1 {
			bs = make([]Block, nb)
		}
		var length uint64
		for i := range int(nb) {
			b := Block{ID: d.u64(), GenStamp: d.u64(), Length: d.u64()}
			if ir.ver >= imageV3 {
				flags, crc := d.u8(), d.u32()
				switch {
				case flags&^blockHasCRC != 0:
					return bad("inode %d: block %d has unknown flags %#x", n.id, b.ID, flags)
				case flags == 0 && crc != 0:
					return bad("inode %d: block %d has no CRC but CRC bytes %08x (want 0)", n.id, b.ID, crc)
				case flags == blockHasCRC:
					b = b.WithCRC(crc)
				}
			}
			switch {
			case b.ID == 0 || b.ID >= t.nextBlockID:
				return bad("inode %d: block id %d outside 1..%d", n.id, b.ID, t.nextBlockID-1)
			case b.GenStamp == 0 || b.GenStamp >= t.nextGenStamp:
				return bad("inode %d: block %d generation stamp %d outside 1..%d", n.id, b.ID, b.GenStamp, t.nextGenStamp-1)
			case b.Length > n.blockSize:
				return bad("inode %d: block %d length %d exceeds block size %d", n.id, b.ID, b.Length, n.blockSize)
			}
			// One map operation checks and indexes (on error the whole
			// tree is dropped).
			if t.blocks.put(b.ID, n.id) {
				return bad("inode %d: block %d already belongs to another inode", n.id, b.ID)
			}
			if bs != nil {
				bs[i] = b
			} else {
				n.setInline(b)
			}
			length += b.Length
		}
		if bs != nil {
			n.setBlocks(bs, length)
		}
		t.numBlocks += int(nb)
		t.numFiles++
	} else {
		if len(d.b) != 0 {
			return bad("inode %d: %d unexpected bytes in directory record", n.id, len(d.b))
		}
		t.numDirs++
	}
	e := parent.extForWrite()
	e.kids.push(n, t.epoch)
	n.parent = parent
	ir.last = n
	if isDir {
		ir.dirs = append(ir.dirs, n)
	}
	return nil
}

// blockLen is the size of one block entry in this image's FILE records.
func (ir *imgReader) blockLen() int {
	if ir.ver >= imageV3 {
		return blockLen
	}
	return blockLenV2
}

func (ir *imgReader) checkEnd(t *Tree, body []byte) error {
	if len(body) != endLen {
		return corrupt("END record is %d bytes, want %d", len(body), endLen)
	}
	if t.root == nil {
		return corrupt("image has no root directory")
	}
	d := dec{b: body}
	dirs, files, blocks := d.u64(), d.u64(), d.u64()
	if dirs != uint64(t.numDirs) || files != uint64(t.numFiles) || blocks != uint64(t.numBlocks) {
		return corrupt("END counts %d dirs, %d files, %d blocks; image holds %d, %d, %d",
			dirs, files, blocks, t.numDirs, t.numFiles, t.numBlocks)
	}
	return nil
}

// readWriter decodes the writer of file n, whose state is decoded: two
// strings for a file under construction in a version 2 image, nothing
// otherwise. A version 1 image recorded no writer; its open files take
// their owner as writer, with no client id.
func (ir *imgReader) readWriter(d *dec, n *inode, state FileState) *Writer {
	if state != UnderConstruction {
		return nil
	}
	if ir.ver == imageV1 {
		return &Writer{User: n.og.owner}
	}
	client, user := d.bytes(), d.bytes()
	return &Writer{Client: ir.intern(client), User: ir.intern(user)}
}
