package namespace

import (
	"encoding/binary"
	"slices"
)

// The ATTRS record (docs/FORMATS.md, "Namespace image"): an inode's
// extended attributes and access time, after the inode's own record (and
// its QUOTA record). Body:
//
//	id       u64  the inode
//	flags    u8   bit 0: the access time is set; no other bit is defined
//	atime    i64  ms since the epoch (0 without bit 0)
//	count    u32  attributes, in strictly increasing name order
//	count x  name (uvarint length + bytes), value (uvarint length + bytes)
const (
	attrsHasATime = 1

	// Caps on the limits (namenode/config checks them): they bound what
	// ReadImage accepts.
	CapXAttrsPerInode = 128
	CapXAttrSize      = 32 << 10

	// maxAttrsRecord bounds an ATTRS body: the capped user-visible
	// attributes and the one security.* a caller may set, each with its
	// prefix (at most "security.") and two varints.
	maxAttrsRecord = 8 + 1 + 8 + 4 + (CapXAttrsPerInode+1)*(CapXAttrSize+len("security.")+2*binary.MaxVarintLen64)
)

// appendAttrs appends n's ATTRS record, if it has attrs.
func appendAttrs(b []byte, n *inode) []byte {
	a := n.attrs()
	if a == nil {
		return b
	}
	at := len(b)
	b = append(b, 0, 0, 0, 0, 0)
	b = binary.LittleEndian.AppendUint64(b, uint64(n.id))
	var flags byte
	var atime int64
	if a.hasATime {
		flags, atime = attrsHasATime, a.atime
	}
	b = append(b, flags)
	b = binary.LittleEndian.AppendUint64(b, uint64(atime))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(a.xattrs)))
	for _, x := range a.xattrs {
		b = appendString(b, x.Name)
		b = binary.AppendUvarint(b, uint64(len(x.Value)))
		b = append(b, x.Value...)
	}
	return endRecord(b, at, recAttrs)
}

// addAttrs decodes an ATTRS record, found at offset start: it must follow
// the record of the inode it names, hold something, and keep HDFS's name
// rules and the caps.
func (ir *imgReader) addAttrs(body []byte, start int64) error {
	bad := func(format string, args ...any) error {
		return corrupt("record %d at offset %d: ATTRS: "+format, append([]any{ir.rec - 1, start}, args...)...)
	}
	d := dec{b: body}
	id, flags, atime, count := ID(d.u64()), d.u8(), int64(d.u64()), d.u32()
	n := ir.last
	switch {
	case ir.ver < imageVersion:
		return bad("in a version %d image", ir.ver)
	case d.bad:
		return bad("truncated")
	case n == nil || n.id != id || n.attrs() != nil:
		return bad("inode %d: does not follow its inode's record", id)
	case flags&^attrsHasATime != 0:
		return bad("inode %d: unknown flags %#x", id, flags)
	case flags == 0 && atime != 0:
		return bad("inode %d: no access time but atime bytes %d (want 0)", id, atime)
	case count == 0 && flags == 0:
		return bad("inode %d: empty record", id)
	case count > CapXAttrsPerInode+1:
		return bad("inode %d: %d attributes, at most %d", id, count, CapXAttrsPerInode+1)
	}
	a := &attrs{atime: atime, hasATime: flags&attrsHasATime != 0, xattrs: make([]XAttr, 0, count)}
	for range count {
		name, value := d.bytes(), d.bytes()
		if d.bad {
			return bad("inode %d: truncated attribute", id)
		}
		x := XAttr{Name: string(name), Value: slices.Clone(value)}
		if norm, err := NormalizeXAttrName("", "", x.Name); err != nil || norm != x.Name {
			return bad("inode %d: bad attribute name %q", id, x.Name)
		}
		if k := len(a.xattrs); k > 0 && a.xattrs[k-1].Name >= x.Name {
			return bad("inode %d: attribute %q out of order", id, x.Name)
		}
		if CheckXAttrSize("", "", x, CapXAttrSize) != nil {
			return bad("inode %d: attribute %q over %d bytes", id, x.Name, CapXAttrSize)
		}
		a.xattrs = append(a.xattrs, x)
	}
	if len(d.b) != 0 {
		return bad("inode %d: %d trailing bytes", id, len(d.b))
	}
	n.extForWrite().attrs = a
	return nil
}
