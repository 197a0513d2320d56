package client

import (
	"bufio"
	"context"
	"crypto/md5"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/base/crc32c"
)

// HDFSChecksum is HDFS's default file checksum, MD5-of-MD5-of-CRC32C, as
// `hadoop fs -checksum` prints it: per block the MD5 of its chunks'
// CRC32Cs (4 bytes each, big-endian), and the MD5 of those MD5s.
type HDFSChecksum struct {
	Algorithm string // "MD5-of-<crcPerBlock>MD5-of-<bytesPerCRC>CRC32C"
	// Bytes is Hadoop's MD5MD5CRC32FileChecksum as it writes it: bytes
	// per CRC (4, big-endian), CRCs per block (8; 0 for a one-block
	// file), the MD5 (16).
	Bytes  []byte
	Length uint64
}

// HDFSFileChecksum computes p's HDFSChecksum from its bytes (HDFS's
// datanodes compute the block parts from their stored CRCs; the result is
// the same), with the namenode's bytes per checksum. It reads the whole
// file: for a checksum without reading, FileChecksum.
func (c *Client) HDFSFileChecksum(ctx context.Context, p string) (HDFSChecksum, error) {
	const op = "HDFSFileChecksum"
	d, err := c.ServerDefaults(ctx)
	if err != nil {
		return HDFSChecksum{}, err
	}
	bpc := int(d.BytesPerChecksum)
	locs, err := c.GetBlockLocations(ctx, p, 0, 0)
	if err != nil {
		return HDFSChecksum{}, err
	}
	if locs.UnderConstruction {
		return HDFSChecksum{}, errs.New(errs.Precondition, op, p, "the file is under construction")
	}
	r, err := c.Open(ctx, p)
	if err != nil {
		return HDFSChecksum{}, err
	}
	defer r.Close()
	br := bufio.NewReaderSize(r, 1<<20)
	var blockMD5s []byte
	chunk := make([]byte, bpc)
	for _, b := range locs.Blocks {
		h := md5.New()
		for left := b.Block.Length; left > 0; {
			n := min(uint64(bpc), left)
			if _, err := io.ReadFull(br, chunk[:n]); err != nil {
				return HDFSChecksum{}, errs.Wrap(errs.IO, op, p, err)
			}
			h.Write(binary.BigEndian.AppendUint32(nil, crc32c.Checksum(chunk[:n])))
			left -= n
		}
		blockMD5s = h.Sum(blockMD5s)
	}
	var crcPerBlock uint64
	if len(locs.Blocks) > 1 {
		crcPerBlock = (locs.Blocks[0].Block.Length + uint64(bpc) - 1) / uint64(bpc)
	}
	// Hadoop's client digests its whole output buffer, which starts at 32
	// bytes and doubles as it fills: the MD5s padded with zeros to that.
	size := 32
	for size < len(blockMD5s) {
		size *= 2
	}
	sum := md5.Sum(append(blockMD5s, make([]byte, size-len(blockMD5s))...))
	out := binary.BigEndian.AppendUint32(nil, uint32(bpc))
	out = binary.BigEndian.AppendUint64(out, crcPerBlock)
	return HDFSChecksum{
		Algorithm: fmt.Sprintf("MD5-of-%dMD5-of-%dCRC32C", crcPerBlock, bpc),
		Bytes:     append(out, sum[:]...), Length: locs.FileLength,
	}, nil
}
