package fsm

import (
	"encoding/binary"
	"io"
	"sort"

	"google.golang.org/protobuf/proto"

	"github.com/blockfs/blockfs/errs"
)

// The small replicated tables (the deny list, the admin states) are each
// one snapshot section of one shape: count (u32), then per row, sorted by
// key, length (u32) and the deterministic protobuf of the row.

// maxTableEntrySize bounds one row of a table section.
const maxTableEntrySize = 4096

// writeTable writes m as a table section.
func writeTable[M proto.Message](w io.Writer, m map[string]M) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var hdr [4]byte
	binary.LittleEndian.PutUint32(hdr[:], uint32(len(keys)))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	for _, k := range keys {
		if err := writeFramed(w, m[k]); err != nil {
			return err
		}
	}
	return nil
}

// readTable reads a table section of at most limit rows, each decoded
// into a fresh row from newRow and handed to add, which may refuse it
// (its error is the restore's). what names the table in errors.
func readTable[M proto.Message](r io.Reader, what string, limit uint32, newRow func() M, add func(M) error) error {
	corrupt := func(msg string) error { return errs.New(errs.Corrupt, "fsm.FSM.Restore", "", msg) }
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return corrupt("truncated " + what + " count")
	}
	n := binary.LittleEndian.Uint32(hdr[:])
	if n > limit {
		return corrupt("implausible " + what + " count")
	}
	for range n {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return corrupt("truncated " + what + " entry")
		}
		size := binary.LittleEndian.Uint32(hdr[:])
		if size > maxTableEntrySize {
			return corrupt("implausible " + what + " entry size")
		}
		b := make([]byte, size)
		if _, err := io.ReadFull(r, b); err != nil {
			return corrupt("truncated " + what + " entry")
		}
		e := newRow()
		if err := proto.Unmarshal(b, e); err != nil {
			return corrupt("bad " + what + " entry: " + err.Error())
		}
		if err := add(e); err != nil {
			return err
		}
	}
	return nil
}
