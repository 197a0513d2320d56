package namespace

import (
	"encoding/binary"
	"slices"
)

// The namespace snapshot section of the image (version 5; docs/FORMATS.md,
// "Namespace snapshot section"). It follows the last inode record and
// precedes END:
//
//	SNAPDIR   per snapshottable directory, in tree order: its id and how
//	          many SNAPSHOTs follow
//	SNAPSHOT  per snapshot, by name: the directory's id, the name, and the
//	          number of DIR/FILE records that follow, its frozen inodes
//	          depth first (the first is its root, parent id 0)
//	HELD      per block only snapshots hold, by id
const (
	recSnapDir  = 6
	recSnapshot = 7
	recHeld     = 8

	snapDirLen = 8 + 4
	heldLen    = 3*8 + 4
)

// snapWork is a snapshottable directory the encoder met, with its
// snapshots as the view sees them (a snapDir is never changed).
type snapWork struct {
	dir ID
	sd  *snapDir
}

// heldEntry is one held block, for the image.
type heldEntry struct {
	id uint64
	heldBlock
}

// viewSnaps is the encoder's state in the snapshot section.
type viewSnaps struct {
	dirs   []snapWork  // met in the inode walk
	held   []heldEntry // copied when the view was made, by id
	at     int         // the directory being written
	next   int         // its next snapshot
	headed bool        // its SNAPDIR is written
	done   bool        // the section is written
	// any is set when the tree has a snapshottable directory: only then
	// is the image version 5. A tree without is written as version 4,
	// byte for byte what it was before snapshots existed.
	any bool
}

// version returns the image version v writes.
func (v *View) version() uint32 {
	if v.snap.any {
		return imageVersion
	}
	return imageV4
}

// heldList returns the held blocks by id.
func (t *Tree) heldList() []heldEntry {
	if len(t.held) == 0 {
		return nil
	}
	out := make([]heldEntry, 0, len(t.held))
	for id, h := range t.held {
		out = append(out, heldEntry{id, h})
	}
	slices.SortFunc(out, func(a, b heldEntry) int {
		if a.id < b.id {
			return -1
		}
		return 1
	})
	return out
}

// appendSnapshots writes the next part of the snapshot section, once the
// inode walk is done: a SNAPDIR record, or a SNAPSHOT record with its
// root pushed for the walk to encode, or the HELD records (the last
// step).
func (v *View) appendSnapshots(dst []byte) []byte {
	s := &v.snap
	for s.at < len(s.dirs) {
		w := s.dirs[s.at]
		if !s.headed {
			at := len(dst)
			dst = append(dst, 0, 0, 0, 0, 0)
			dst = binary.LittleEndian.AppendUint64(dst, uint64(w.dir))
			dst = binary.LittleEndian.AppendUint32(dst, uint32(len(w.sd.snaps)))
			s.headed = true
			return endRecord(dst, at, recSnapDir)
		}
		if s.next < len(w.sd.snaps) {
			sn := w.sd.snaps[s.next]
			s.next++
			at := len(dst)
			dst = append(dst, 0, 0, 0, 0, 0)
			dst = binary.LittleEndian.AppendUint64(dst, uint64(w.dir))
			dst = appendString(dst, sn.root.name)
			dst = binary.LittleEndian.AppendUint64(dst, uint64(sn.inodes))
			v.stack = append(v.stack, viewFrame{kids: children{chunks: []*kidChunk{{k: []*inode{sn.root}}}, n: 1}})
			return endRecord(dst, at, recSnapshot)
		}
		s.at, s.next, s.headed = s.at+1, 0, false
	}
	for _, h := range s.held {
		at := len(dst)
		dst = append(dst, 0, 0, 0, 0, 0)
		dst = binary.LittleEndian.AppendUint64(dst, h.id)
		dst = binary.LittleEndian.AppendUint64(dst, h.gs)
		dst = binary.LittleEndian.AppendUint64(dst, uint64(h.inode))
		dst = binary.LittleEndian.AppendUint32(dst, uint32(h.repl))
		dst = endRecord(dst, at, recHeld)
	}
	s.done = true
	return dst
}

// snapRead is the reader's state in the snapshot section.
type snapRead struct {
	dir      *inode // the directory of the last SNAPDIR
	left     int    // SNAPSHOTs it still announces
	lastName string // the last snapshot's name read for dir
	heldFrom uint64 // HELD records come by id: the next must be above
	inHeld   bool
}

// snapRecord reads a SNAPDIR, SNAPSHOT (with its inode records) or HELD
// record found at offset start.
func (ir *imgReader) snapRecord(t *Tree, typ byte, body []byte, start int64, maxBody int) error {
	bad := func(format string, args ...any) error {
		return corrupt("record %d at offset %d: "+format, append([]any{ir.rec - 1, start}, args...)...)
	}
	if ir.ver < imageV5 {
		return bad("snapshot record type %d in a version %d image", typ, ir.ver)
	}
	if ir.snaps == nil {
		ir.snaps = &snapRead{}
	}
	s := ir.snaps
	d := dec{b: body}
	switch typ {
	case recSnapDir:
		id, count := ID(d.u64()), int(d.u32())
		n := t.inodes.get(id)
		switch {
		case len(body) != snapDirLen:
			return bad("SNAPDIR record is %d bytes, want %d", len(body), snapDirLen)
		case s.left > 0 || s.inHeld:
			return bad("SNAPDIR record where a SNAPSHOT or HELD record belongs")
		case n == nil || !n.dir() || n.snapDir() != nil:
			return bad("SNAPDIR of inode %d, not a directory or named twice", id)
		case count > MaxSnapshots:
			return bad("directory %d has %d snapshots, limit %d", id, count, MaxSnapshots)
		}
		for _, o := range t.snappable {
			if isAncestor(o, n) || isAncestor(n, o) {
				return bad("snapshottable directories %d and %d are nested", o.id, id)
			}
		}
		n.extForWrite().snaps = &snapDir{snaps: make([]snapshot, 0, count)}
		if t.snappable == nil {
			t.snappable = map[ID]*inode{}
		}
		t.snappable[id] = n
		s.dir, s.left, s.lastName = n, count, ""
		return nil
	case recSnapshot:
		id, name, inodes := ID(d.u64()), string(d.bytes()), d.u64()
		switch {
		case d.bad || len(d.b) != 0:
			return bad("SNAPSHOT record is malformed")
		case s.left == 0 || s.dir.id != id:
			return bad("SNAPSHOT of directory %d not announced by its SNAPDIR", id)
		case s.lastName != "" && name <= s.lastName:
			return bad("snapshot %q not after %q", name, s.lastName)
		case inodes == 0 || inodes >= uint64(t.nextID):
			return bad("snapshot %q has %d inodes", name, inodes)
		}
		root, err := ir.readFrozen(t, s.dir, name, int(inodes), maxBody)
		if err != nil {
			return err
		}
		sd := s.dir.ext.snaps
		sd.snaps = append(sd.snaps, snapshot{root: root, inodes: int(inodes)})
		s.left--
		s.lastName = name
		return nil
	}
	id, gs, inode, repl := d.u64(), d.u64(), ID(d.u64()), d.u32()
	_, live := t.blocks.get(id)
	switch {
	case len(body) != heldLen:
		return bad("HELD record is %d bytes, want %d", len(body), heldLen)
	case s.left > 0:
		return bad("HELD record where a SNAPSHOT belongs")
	case id == 0 || id >= t.nextBlockID || id < s.heldFrom:
		return bad("HELD block %d out of range or order", id)
	case gs == 0 || gs >= t.nextGenStamp || repl < MinReplication || repl > MaxReplication || inode == 0 || inode >= t.nextID:
		return bad("HELD block %d: bad stamp %d, replication %d or inode %d", id, gs, repl, inode)
	case live || t.snapRefs[id] == 0:
		return bad("HELD block %d is a live file's or in no snapshot", id)
	}
	if t.held == nil {
		t.held = map[uint64]heldBlock{}
	}
	t.held[id] = heldBlock{gs: gs, inode: inode, repl: uint8(repl)}
	s.heldFrom, s.inHeld = id+1, true
	return nil
}

// readFrozen reads the n inode records of snapshot name of directory dir
// into a scratch tree (so addInode's checks apply, with the snapshot's own
// id and block indexes), and returns its root, marked and linked.
func (ir *imgReader) readFrozen(t *Tree, dir *inode, name string, n, maxBody int) (*inode, error) {
	scratch := &Tree{lim: t.lim, ogs: t.ogs, nextID: t.nextID, nextBlockID: t.nextBlockID, nextGenStamp: t.nextGenStamp}
	holder := newDir("", 0777, nil, 0) // id 0: the snapshot root's parent in its record
	scratch.root = holder
	ir.dirs = append(ir.dirs[:0], holder)
	ir.last = nil // an ATTRS record here names a frozen inode, never a live one
	for read := 0; read < n; {
		start := ir.off
		typ, body, err := ir.next(maxBody)
		if err != nil {
			return nil, err
		}
		if typ == recAttrs && ir.ver >= imageVersion {
			// The attributes of the frozen inode just read; those of the
			// snapshot's last inode follow it, read by the main loop.
			if err := ir.addAttrs(body, start); err != nil {
				return nil, err
			}
			continue
		}
		read++
		if typ != recDir && typ != recFile {
			return nil, corrupt("record %d at offset %d: type %d inside snapshot %q, want DIR or FILE", ir.rec-1, start, typ, name)
		}
		if err := ir.addInode(scratch, typ == recDir, body, start); err != nil {
			return nil, err
		}
	}
	root := holder.kids().last()
	if holder.kids().len() != 1 || root.id != dir.id || !root.dir() || root.name != name {
		return nil, corrupt("snapshot %q of directory %d: its first inode is not a root named for it", name, dir.id)
	}
	if t.snapRefs == nil {
		t.snapRefs = map[uint64]int32{}
	}
	var mark func(x *inode) error
	mark = func(x *inode) error {
		x.hdr |= hdrSnap
		if x.dir() {
			for k := range x.kids().all() {
				if err := mark(k); err != nil {
					return err
				}
			}
			return nil
		}
		if x.state() == UnderConstruction {
			return corrupt("snapshot %q: file %d is under construction", name, x.id)
		}
		var one [1]Block
		for _, b := range x.blockList(&one) {
			t.snapRefs[b.ID]++
		}
		return nil
	}
	if err := mark(root); err != nil {
		return nil, err
	}
	root.parent = dir
	ir.dirs = ir.dirs[:0]
	return root, nil
}

// endSnapshots checks, at END, that every SNAPDIR got its snapshots.
func (ir *imgReader) endSnapshots() error {
	if ir.snaps != nil && ir.snaps.left > 0 {
		return corrupt("directory %d lacks %d of its snapshots", ir.snaps.dir.id, ir.snaps.left)
	}
	return nil
}
