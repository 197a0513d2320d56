package client

import (
	"context"
	"slices"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/base/chunks"
)

// Append reopens the closed file p for writing and returns a Writer whose
// bytes go after the file's, as HDFS's append: a last block shorter than
// the block size is reopened under a new generation stamp and the Writer
// continues it on the datanodes that hold it; a full one is followed by a
// new block. The caller needs w on the file; a file another client is
// writing is refused (errs.Precondition, AlreadyBeingCreated). ctx bounds
// every call the Writer makes. A lost answer is retried under the same
// call id, so the namenode's retry cache answers it rather than refusing
// it as "already being written".
func (c *Client) Append(ctx context.Context, p string) (*Writer, error) {
	return c.append(ctx, "client.Client.Append", p, false)
}

// AppendNewBlock is Append that never reopens the last block: the
// Writer's bytes start a new block however short the last one is (HDFS's
// CreateFlag.NEW_BLOCK).
func (c *Client) AppendNewBlock(ctx context.Context, p string) (*Writer, error) {
	return c.append(ctx, "client.Client.AppendNewBlock", p, true)
}

func (c *Client) append(ctx context.Context, op, p string, newBlock bool) (*Writer, error) {
	defer c.locs.drop(p, nil) // after the call, whatever its outcome
	var r *api.AppendResponse
	err := c.call(ctx, "Append", func(ctx context.Context, nn api.ClientServiceClient) error {
		var err error
		r, err = nn.Append(ctx, &api.AppendRequest{Path: p, ClientName: c.cfg.User, NewBlock: newBlock}, trailerOpt(ctx))
		c.saw(r.GetHeader())
		return err
	})
	if err != nil {
		return nil, err
	}
	st := r.GetStatus()
	if st.GetBlockSize() == 0 || st.GetBlockSize() > maxBlockSize {
		return nil, errs.Newf(errs.Internal, op, p, "namenode answered block size %d; want 1..%d", st.GetBlockSize(), uint64(maxBlockSize))
	}
	c.leases.hold(r.GetLeaseSoftLimitMs())
	// Complete lists every block of the file, so the Writer starts with
	// the blocks it found; its first AddBlock names the last as previous.
	w := &Writer{c: c, ctx: ctx, path: p, inode: st.InodeId, blockSize: st.BlockSize, blocks: r.Blocks}
	lb := r.GetLastBlock()
	if lb == nil {
		return w, nil
	}
	w.blocks = w.blocks[:len(w.blocks)-1] // the reopened block is the Writer's
	if err := w.resume(op, lb, r.Token, int(r.BytesPerChecksum)); err != nil {
		w.Abort()
		return nil, err
	}
	return w, nil
}

// resume opens the pipeline of a reopened last block on the datanodes
// that hold it, at its length.
func (w *Writer) resume(op string, lb *api.LocatedBlock, token []byte, bpc int) error {
	if bpc == 0 {
		bpc = chunks.Default
	}
	if !chunks.Valid(bpc) {
		return errs.Newf(errs.Invalid, op, w.path, "namenode gave bytes per checksum %d", bpc)
	}
	if len(lb.Locations) == 0 {
		return errs.Newf(errs.Unavailable, op, w.path, "no live datanode holds the last block %d", lb.Block.Id)
	}
	l := int64(lb.Block.Length)
	b := &blockWrite{lb: lb, token: token, bpc: bpc, base: l, sent: l, synced: l}
	w.cur = b
	for attempt := 0; ; attempt++ {
		bad, err := w.c.openPipeline(w.ctx, b, w.inode, b.lb.Locations, uint64(l), 0)
		if err == nil {
			return nil
		}
		b.lb.Locations = slices.DeleteFunc(b.lb.Locations, func(d *api.DatanodeInfo) bool { return d.Id == bad })
		if len(b.lb.Locations) == 0 || attempt >= maxPipelineAttempts {
			return err
		}
	}
}
