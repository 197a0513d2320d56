package client

import (
	"context"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
)

// Append reopens the closed file p for writing and returns a Writer whose
// bytes go after the file's, as HDFS's append with NEW_BLOCK: the file's
// blocks stay as they are (its last one may be short) and the Writer's
// first block starts a new one. The caller needs w on the file; a file
// someone is writing is refused (errs.Precondition). ctx bounds every call
// the Writer makes. A lost answer is retried under the same call id, so
// the namenode's retry cache answers it rather than refusing it as
// "already being written".
func (c *Client) Append(ctx context.Context, p string) (*Writer, error) {
	var r *api.AppendResponse
	err := c.call(ctx, "append", func(ctx context.Context, nn api.ClientServiceClient) error {
		var err error
		r, err = nn.Append(ctx, &api.AppendRequest{Path: p, ClientName: c.cfg.User}, trailerOpt(ctx))
		c.saw(r.GetHeader())
		return err
	})
	if err != nil {
		return nil, err
	}
	st := r.GetStatus()
	if st.GetBlockSize() == 0 || st.GetBlockSize() > maxBlockSize {
		return nil, errs.Newf(errs.Internal, "append", p, "namenode answered block size %d; want 1..%d", st.GetBlockSize(), uint64(maxBlockSize))
	}
	// Complete lists every block of the file, so the Writer starts with
	// the blocks it found; its first AddBlock names the last as previous.
	return &Writer{c: c, ctx: ctx, path: p, inode: st.InodeId, blockSize: st.BlockSize, blocks: r.Blocks}, nil
}
