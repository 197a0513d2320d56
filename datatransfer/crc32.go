package datatransfer

import (
	"hash/crc32"

	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/base/crc32c"
)

// Older HDFS clients (Debian's hdfs-cli 2.3.0 among them) write with
// CHECKSUM_CRC32, the IEEE polynomial, whatever the namenode's defaults
// say. blockfs stores CRC32C, so the door checks each chunk against the
// client's CRC32 and hands the write path the chunk's CRC32C: the data is
// still checked end to end, from the client's checksum to the stored one.

// toCRC32C checks p's chunks against their IEEE CRC32s and replaces them
// by their CRC32Cs; a chunk that does not match is an errs.Corrupt error
// (ERROR_CHECKSUM). Chunk boundaries are as in Packet.CRCs.
func toCRC32C(p *Packet, bpc int) error {
	if bpc <= 0 {
		return errs.Newf(errs.Invalid, "WRITE_BLOCK", "", "bytes per checksum %d", bpc)
	}
	off, data := p.Offset, p.Data
	for i := range p.CRCs {
		n := bpc - int(off%int64(bpc))
		if n > len(data) {
			n = len(data)
		}
		if n == 0 {
			return errs.Newf(errs.Invalid, "WRITE_BLOCK", "", "packet at %d: %d checksums for %d data bytes", p.Offset, len(p.CRCs), len(p.Data))
		}
		if crc32.ChecksumIEEE(data[:n]) != p.CRCs[i] {
			return errs.Newf(errs.Corrupt, "WRITE_BLOCK", "", "packet at %d: chunk %d fails its CRC32", p.Offset, i)
		}
		p.CRCs[i] = crc32c.Checksum(data[:n])
		off += int64(n)
		data = data[n:]
	}
	if len(data) != 0 {
		return errs.Newf(errs.Invalid, "WRITE_BLOCK", "", "packet at %d: %d data bytes past its %d checksums", p.Offset, len(data), len(p.CRCs))
	}
	return nil
}
