package audit

import (
	"encoding/binary"
	"net"
	"net/netip"
	"time"
)

// A buffered event is a record of bytes, not an Event: a buffer of bytes
// holds no pointers, so the garbage collector neither scans it nor puts
// write barriers on appends to it, and Log copies the event's strings once.
// A record is:
//
//	u64 little-endian  time, Unix nanoseconds
//	u8                 1 if allowed
//	u32 little-endian  perm mode
//	9 fields           uvarint length + bytes: user, auth, cmd, src, dst,
//	                   owner, group, proto, address ("" for none)
//
// and records follow each other in a shard's buffer.
const (
	fUser = iota
	fAuth
	fCmd
	fSrc
	fDst
	fOwner
	fGroup
	fProto
	fAddr
	nFields
)

// appendRecord appends e's record to b.
func appendRecord(b []byte, e *Event) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(e.Time.UnixNano()))
	var allowed byte
	if e.Allowed {
		allowed = 1
	}
	b = append(b, allowed)
	b = binary.LittleEndian.AppendUint32(b, e.Perm.Mode)
	for _, s := range [...]string{e.User, e.Auth, e.Cmd, e.Src, e.Dst, e.Perm.Owner, e.Perm.Group, e.Proto} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return appendAddrField(b, e.Addr)
}

// appendAddrField appends the caller's host as the record's last field,
// without formatting a TCP address on the request path.
func appendAddrField(b []byte, a net.Addr) []byte {
	switch a := a.(type) {
	case nil:
		return append(b, 0)
	case *net.TCPAddr:
		if ip, ok := netip.AddrFromSlice(a.IP); ok {
			var buf [64]byte
			host := ip.Unmap().AppendTo(buf[:0])
			b = binary.AppendUvarint(b, uint64(len(host)))
			return append(b, host...)
		}
	}
	host := a.String()
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	b = binary.AppendUvarint(b, uint64(len(host)))
	return append(b, host...)
}

// record is one decoded record: views into its buffer.
type record struct {
	time    time.Time
	allowed bool
	mode    uint32
	f       [nFields][]byte
}

// readRecord decodes the record at the start of b and returns it with its
// length. Records are only ever written by appendRecord, so b is well
// formed.
func readRecord(b []byte) (record, int) {
	var r record
	r.time = time.Unix(0, int64(binary.LittleEndian.Uint64(b)))
	r.allowed = b[8] == 1
	r.mode = binary.LittleEndian.Uint32(b[9:])
	off := 13
	for i := range r.f {
		n, k := binary.Uvarint(b[off:])
		off += k
		r.f[i] = b[off : off+int(n)]
		off += int(n)
	}
	return r, off
}
