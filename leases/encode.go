package leases

import (
	"crypto/sha256"
	"encoding/binary"
	"io"
	"slices"

	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/namespace"
)

// The table's encoding (docs/FORMATS.md, "Lease table"), little-endian:
//
//	u32 holders, then per holder (sorted by client):
//	  str client, str user, i64 renewedMs, u32 files, u64 file ids (sorted)
//	u32 recoveries, then per recovery (sorted by file id):
//	  u64 file id, u64 recovery id, u64 block id, u64 block gen stamp,
//	  u64 block length, str primary, i64 startedMs, u32 n, n x str replica,
//	  and, when n's bit 30 is set, u64 copy-from block id, gen stamp, length
//
// n's bit 31 (truncateFlag) marks a truncate's recovery; bit 30
// (copyFlag) one that copies a snapshot's block (copy-on-truncate);
// bits 0..29 are the replica count. Tables written before truncates
// never set bit 31, nor before copy-on-truncate bit 30.
//
// str is u16 length + bytes.

const (
	maxString    = 1 << 12
	truncateFlag = 1 << 31
	copyFlag     = 1 << 30
)

// WriteTo writes the table; the same table always writes the same bytes.
func (t *Table) WriteTo(w io.Writer) (int64, error) {
	var b []byte
	hs := t.Holders()
	b = binary.LittleEndian.AppendUint32(b, uint32(len(hs)))
	for _, h := range hs {
		b = appendStr(b, h.Client)
		b = appendStr(b, h.User)
		b = binary.LittleEndian.AppendUint64(b, uint64(h.RenewedMs))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(h.Files)))
		for _, id := range h.Files {
			b = binary.LittleEndian.AppendUint64(b, uint64(id))
		}
	}
	ids := make([]namespace.ID, 0, len(t.recoveries))
	for id := range t.recoveries {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(ids)))
	for _, id := range ids {
		r := t.recoveries[id]
		for _, v := range []uint64{uint64(id), r.ID, r.Block.ID, r.Block.GenStamp, r.Block.Length} {
			b = binary.LittleEndian.AppendUint64(b, v)
		}
		b = appendStr(b, r.Primary)
		b = binary.LittleEndian.AppendUint64(b, uint64(r.StartedMs))
		n := uint32(len(r.Replicas))
		if r.Truncate {
			n |= truncateFlag
		}
		if r.CopyFrom.ID != 0 {
			n |= copyFlag
		}
		b = binary.LittleEndian.AppendUint32(b, n)
		for _, d := range r.Replicas {
			b = appendStr(b, d)
		}
		if r.CopyFrom.ID != 0 {
			for _, v := range []uint64{r.CopyFrom.ID, r.CopyFrom.GenStamp, r.CopyFrom.Length} {
				b = binary.LittleEndian.AppendUint64(b, v)
			}
		}
	}
	n, err := w.Write(b)
	return int64(n), err
}

// Hash is the SHA-256 of the table's encoding.
func (t *Table) Hash() [32]byte {
	h := sha256.New()
	_, _ = t.WriteTo(h)
	var out [32]byte
	h.Sum(out[:0])
	return out
}

func appendStr(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

// Read reads a table WriteTo wrote. A truncated or malformed encoding is
// errs.Corrupt.
func Read(r io.Reader) (*Table, error) {
	d := &decoder{r: r}
	t := New()
	nh := d.u32()
	if nh > 1<<24 {
		return nil, corrupt("implausible holder count")
	}
	for i := uint32(0); i < nh && d.err == nil; i++ {
		client, user := d.str(), d.str()
		renewed := int64(d.u64())
		nf := d.u32()
		if nf > 1<<26 {
			return nil, corrupt("implausible file count")
		}
		for j := uint32(0); j < nf && d.err == nil; j++ {
			id := namespace.ID(d.u64())
			t.addRaw(id, client, user, renewed)
		}
	}
	nr := d.u32()
	if nr > 1<<24 {
		return nil, corrupt("implausible recovery count")
	}
	for i := uint32(0); i < nr && d.err == nil; i++ {
		id := namespace.ID(d.u64())
		var rc Recovery
		rc.ID = d.u64()
		rc.Block = namespace.Block{ID: d.u64(), GenStamp: d.u64(), Length: d.u64()}
		rc.Primary = d.str()
		rc.StartedMs = int64(d.u64())
		n := d.u32()
		rc.Truncate, n = n&truncateFlag != 0, n&^truncateFlag
		copied := n&copyFlag != 0
		n &^= copyFlag
		if n > 64 {
			return nil, corrupt("implausible replica count")
		}
		for j := uint32(0); j < n && d.err == nil; j++ {
			rc.Replicas = append(rc.Replicas, d.str())
		}
		if copied {
			rc.CopyFrom = namespace.Block{ID: d.u64(), GenStamp: d.u64(), Length: d.u64()}
		}
		t.recoveries[id] = rc
	}
	if d.err != nil {
		return nil, d.err
	}
	return t, nil
}

func (t *Table) addRaw(id namespace.ID, client, user string, renewed int64) {
	h := t.holders[client]
	if h == nil {
		h = &holder{user: user, renewedMs: renewed, files: map[namespace.ID]struct{}{}}
		t.holders[client] = h
	}
	h.files[id] = struct{}{}
	t.files[id] = client
}

func corrupt(msg string) error { return errs.New(errs.Corrupt, "leases.Read", "", msg) }

type decoder struct {
	r   io.Reader
	buf [8]byte
	err error
}

func (d *decoder) read(n int) []byte {
	if d.err != nil {
		return d.buf[:n]
	}
	if _, err := io.ReadFull(d.r, d.buf[:n]); err != nil {
		d.err = corrupt("truncated")
	}
	return d.buf[:n]
}

func (d *decoder) u16() uint16 { return binary.LittleEndian.Uint16(d.read(2)) }
func (d *decoder) u32() uint32 { return binary.LittleEndian.Uint32(d.read(4)) }
func (d *decoder) u64() uint64 { return binary.LittleEndian.Uint64(d.read(8)) }

func (d *decoder) str() string {
	n := int(d.u16())
	if d.err != nil {
		return ""
	}
	if n > maxString {
		d.err = corrupt("implausible string length")
		return ""
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(d.r, b); err != nil {
		d.err = corrupt("truncated")
	}
	return string(b)
}
