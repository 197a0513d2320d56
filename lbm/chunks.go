package lbm

import (
	"context"
	"encoding/binary"
	"errors"
	"io"

	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/base/chunks"
)

// DefaultBytesPerChecksum is the chunk size of Put/PutBatch blocks. Which
// chunk sizes are valid is internal/base/chunks' rule (chunks.CheckSize).
const DefaultBytesPerChecksum = chunks.Default

const chunkCRCLen = 4 // one u32 LE per chunk in the table

// ChunkRange is a chunk-aligned piece of a block as stored.
type ChunkRange struct {
	Offset           int64    // block offset of Data[0], a multiple of BytesPerChecksum
	BytesPerChecksum int      // chunk size; every chunk of Data but a block's last is this long
	Data             []byte   // decrypted bytes of the touched chunks
	CRCs             []uint32 // one per chunk of Data, as the writer computed them
}

// tableLen is the length of the chunk CRC table of a block of length
// bytes with chunks of bpc bytes; 0 for an old-format block (bpc 0).
func tableLen(length int64, bpc uint32) int64 {
	if bpc == 0 {
		return 0
	}
	return (length + int64(bpc) - 1) / int64(bpc) * chunkCRCLen
}

// extent is the aligned span a block takes in its data file: its bytes,
// its chunk table, padding to 4096.
func (e *blockEntry) extent() int64 { return alignUp(e.length + tableLen(e.length, e.bpc)) }

// DiskBytesRead is the number of bytes read from data files since Open
// (also the metric blockfs_lbm_read_bytes_total).
func (s *Store) DiskBytesRead() int64 { return s.diskRead.Load() }

func (s *Store) countRead(n int) {
	s.diskRead.Add(int64(n))
	s.metrics.bytesRead.Add(float64(n))
}

// ReadChunks reads, decrypts and verifies only the chunks that
// [off, off+n) touches (n == 0: to the end of the block), with one pread
// for the data and one for its slice of the chunk CRC table: skip by
// seeking, never by reading and discarding (CASSANDRA-14415). buf is used
// for the data if its capacity suffices. A chunk whose stored CRC does not
// match is an errs.Corrupt error naming the block, the data file and the
// chunk's offset. Unknown id: errs.NotFound; a range outside the block:
// errs.Invalid. An old-format block (no chunk table) is read and verified
// whole, and the CRCs of the returned chunks (DefaultBytesPerChecksum) are
// computed from the verified bytes.
func (s *Store) ReadChunks(ctx context.Context, id uint64, off, n int64, buf []byte) (ChunkRange, error) {
	const op = "lbm.Store.ReadChunks"
	if err := s.checkOpen(ctx, op); err != nil {
		return ChunkRange{}, err
	}
	e, ok := s.index.get(id)
	if !ok {
		return ChunkRange{}, errs.Newf(errs.NotFound, op, "", "block %d not found", id)
	}
	if n == 0 && off >= 0 && off <= e.length {
		n = e.length - off
	}
	if off < 0 || n < 0 || off > e.length || n > e.length-off {
		return ChunkRange{}, errs.Newf(errs.Invalid, op, "", "range [%d,+%d) outside block %d of length %d", off, n, id, e.length)
	}
	if e.bpc != 0 {
		return s.readChunked(op, id, &e, off, n, buf)
	}
	whole, err := s.readWhole(op, id, &e, buf)
	if err != nil {
		return ChunkRange{}, err
	}
	const bpc = DefaultBytesPerChecksum
	lo, hi := off/bpc*bpc, min((off+n+bpc-1)/bpc*bpc, e.length)
	if n == 0 {
		hi = lo
	}
	data := whole[lo:hi]
	return ChunkRange{Offset: lo, BytesPerChecksum: bpc, Data: data,
		CRCs: chunks.Sums(make([]uint32, 0, (len(data)+bpc-1)/bpc), data, bpc)}, nil
}

// maxReadGap is the most bytes of CRC table entries a read to a block's
// end reads past and drops to take data and table in one pread.
const maxReadGap = 4 << 10

// readChunked reads and verifies the chunks of a new-format block that
// [off, off+n) touches: one ReadAt for the data, one for the CRC slice.
func (s *Store) readChunked(op string, id uint64, e *blockEntry, off, n int64, buf []byte) (ChunkRange, error) {
	c, bpc := e.c, int64(e.bpc)
	first := off / bpc
	last := (off + n + bpc - 1) / bpc // exclusive
	if n == 0 {
		last = first
	}
	lo, hi := first*bpc, min(last*bpc, e.length)
	dlen, tlen := hi-lo, (last-first)*chunkCRCLen
	cr := ChunkRange{Offset: lo, BytesPerChecksum: int(bpc)}
	if dlen == 0 {
		cr.Data = buf[:0]
		return cr, nil
	}
	fc, err := c.dataCipher()
	if err != nil {
		return ChunkRange{}, err
	}
	dataAt, tableAt := e.off+lo, e.off+e.length+first*chunkCRCLen
	// A range that runs to the block's end lies just before its CRC
	// table, gap bytes of the table's earlier entries between: one pread
	// of both (a small block read whole: no gap) rather than two.
	gap := tableAt - (dataAt + dlen)
	if hi != e.length || gap > maxReadGap {
		gap = -1
	}
	need := dlen + tlen + max(gap, 0)
	if int64(cap(buf)) < need {
		buf = make([]byte, need)
	}
	var data, table []byte
	if gap >= 0 {
		data, table = buf[:dlen], buf[dlen+gap:need]
		if err := s.preadBlock(op, id, c, buf[:need], dataAt); err != nil {
			return ChunkRange{}, err
		}
	} else {
		data, table = buf[:dlen], buf[dlen:dlen+tlen]
		if err := s.preadBlock(op, id, c, data, dataAt); err != nil {
			return ChunkRange{}, err
		}
		if err := s.preadBlock(op, id, c, table, tableAt); err != nil {
			return ChunkRange{}, err
		}
	}
	if fc != nil {
		fc.xorAt(data, data, dataAt)
		fc.xorAt(table, table, tableAt)
	}
	cr.Data = data
	cr.CRCs = make([]uint32, last-first)
	for i := range cr.CRCs {
		cr.CRCs[i] = binary.LittleEndian.Uint32(table[i*chunkCRCLen:])
		b := data[int64(i)*bpc : min(int64(i+1)*bpc, dlen)]
		if crc32c(b) != cr.CRCs[i] {
			if cur, ok := s.index.get(id); !ok || cur.c != c || cur.off != e.off {
				// Deleted (and hole-punched) while we read.
				return ChunkRange{}, errs.Newf(errs.NotFound, op, "", "block %d not found", id)
			}
			s.metrics.corruptReads.Inc()
			return ChunkRange{}, errs.Newf(errs.Corrupt, op, c.dataPath,
				"block %d: chunk at block offset %d (data file offset %d): checksum mismatch",
				id, lo+int64(i)*bpc, dataAt+int64(i)*bpc)
		}
	}
	return cr, nil
}

// readWhole reads block e whole at its offset, decrypts it and checks its
// CRC32C (the old-format read path). buf is used if large enough.
func (s *Store) readWhole(op string, id uint64, e *blockEntry, buf []byte) ([]byte, error) {
	c := e.c
	fc, err := c.dataCipher()
	if err != nil {
		return nil, err
	}
	if int64(cap(buf)) < e.length {
		buf = make([]byte, e.length)
	}
	buf = buf[:e.length]
	if err := s.preadBlock(op, id, c, buf, e.off); err != nil {
		return nil, err
	}
	if fc != nil {
		fc.xorAt(buf, buf, e.off)
	}
	if crc32c(buf) != e.crc {
		if cur, ok := s.index.get(id); !ok || cur.c != c || cur.off != e.off {
			return nil, errs.Newf(errs.NotFound, op, "", "block %d not found", id)
		}
		s.metrics.corruptReads.Inc()
		return nil, errs.Newf(errs.Corrupt, op, c.dataPath, "block %d at offset %d: checksum mismatch", id, e.off)
	}
	return buf, nil
}

// preadBlock fills b from c's data file at off. A short read is NotFound
// if the block was deleted meanwhile, Corrupt at EOF, IO otherwise.
func (s *Store) preadBlock(op string, id uint64, c *container, b []byte, off int64) error {
	if len(b) == 0 {
		return nil
	}
	k, err := c.data.ReadAt(b, off)
	s.countRead(k)
	if k == len(b) {
		return nil
	}
	if _, still := s.index.get(id); !still {
		return errs.Newf(errs.NotFound, op, "", "block %d not found", id)
	}
	if err == nil || errors.Is(err, io.EOF) {
		s.metrics.corruptReads.Inc()
		return errs.Newf(errs.Corrupt, op, c.dataPath, "block %d: data file too short at offset %d", id, off)
	}
	return errs.Wrap(errs.IO, op, c.dataPath, err)
}
