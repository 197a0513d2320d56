package client

import (
	"context"
	"math"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/base/crc32c"
)

// CompositeCRC32C names the file checksum FileChecksum computes, as
// `hdfs dfs -checksum` prints HDFS's COMPOSITE_CRC mode with CRC32C.
const CompositeCRC32C = "COMPOSITE-CRC32C"

// FileChecksum is a file's checksum: the CRC32C of all its bytes, computed
// from the CRC32C and length the namespace recorded for each block, so
// no byte of the file is read. It equals crc32.Checksum(file bytes,
// crc32.MakeTable(crc32.Castagnoli)) and does not depend on the block
// size, as HDFS's COMPOSITE_CRC checksum does not.
type FileChecksum struct {
	Algorithm string // CompositeCRC32C
	CRC       uint32
	Length    uint64 // bytes of the file it covers
}

// FileChecksum returns p's checksum. A file under construction, or one
// with a block the namespace has no CRC for (written before blocks
// carried checksums, or by a client that sent none), has none: that is an
// errs.Precondition error naming the path.
func (c *Client) FileChecksum(ctx context.Context, p string) (FileChecksum, error) {
	var r *api.GetBlockLocationsResponse
	err := c.call(ctx, "GetBlockLocations", func(ctx context.Context, nn api.ClientServiceClient) error {
		out, err := nn.GetBlockLocations(ctx, &api.GetBlockLocationsRequest{Path: p, Read: c.readOpts()}, trailerOpt(ctx))
		r = out
		return err
	})
	if err != nil {
		return FileChecksum{}, err
	}
	crc, err := compositeCRC(p, r)
	if err != nil {
		return FileChecksum{}, err
	}
	return FileChecksum{Algorithm: CompositeCRC32C, CRC: crc, Length: r.FileLength}, nil
}

// compositeCRC folds the block CRCs of a whole-file GetBlockLocations
// reply into the file's CRC32C. It trusts nothing in r: every array
// length, offset and sum is checked, so no reply makes it panic.
func compositeCRC(p string, r *api.GetBlockLocationsResponse) (uint32, error) {
	const op = "client.Client.FileChecksum"
	if r.GetUnderConstruction() {
		return 0, errs.New(errs.Precondition, op, p, "file is under construction: its checksum is known once it is closed")
	}
	n := len(r.GetBlockIds())
	if len(r.GetLengths()) != n || (n > 0 && len(r.GetCrc32Cs()) != n) {
		if len(r.GetLengths()) == n && len(r.GetCrc32Cs()) == 0 {
			return 0, errs.Newf(errs.Precondition, op, p, "no block of the file has a recorded checksum (written before blocks carried checksums, or by a client that sent none)")
		}
		return 0, errs.New(errs.Internal, op, p, "malformed reply: array lengths differ")
	}
	if r.GetFirstOffset() != 0 {
		return 0, errs.Newf(errs.Internal, op, p, "malformed reply: the block list starts at offset %d, not 0", r.GetFirstOffset())
	}
	var crc uint32
	var length uint64
	for i, l := range r.GetLengths() {
		v := r.Crc32Cs[i]
		switch {
		case v == 0:
			return 0, errs.Newf(errs.Precondition, op, p, "block %d (blk_%d_%d) has no recorded checksum (written before blocks carried checksums, or by a client that sent none)",
				i, r.BlockIds[i], genStamp(r, i))
		case v>>32 != 1:
			return 0, errs.Newf(errs.Internal, op, p, "malformed reply: CRC entry %d is %#x", i, v)
		case l > math.MaxUint64-length:
			return 0, errs.New(errs.Internal, op, p, "malformed reply: block lengths pass 2^64")
		}
		crc = crc32c.Combine(crc, uint32(v), l)
		length += l
	}
	if length != r.GetFileLength() {
		return 0, errs.Newf(errs.Internal, op, p, "malformed reply: blocks cover %d bytes of a %d-byte file", length, r.GetFileLength())
	}
	return crc, nil
}

// genStamp is block i's generation stamp in r, 0 if r lacks it.
func genStamp(r *api.GetBlockLocationsResponse, i int) uint64 {
	if i < len(r.GenStamps) {
		return r.GenStamps[i]
	}
	return 0
}
