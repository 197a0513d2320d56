package client

import (
	"context"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/base/chunks"
	"github.com/blockfs/blockfs/internal/node/blockstream"
)

// startBlock allocates the next block (the Create's first, if it gave
// one) and opens its pipeline; with Config.FanOutMax set the pipeline
// waits for the block's first packet (sendPackets), or for finishBlock,
// which may write the block side by side instead (fanout.go).
func (w *Writer) startBlock() error {
	ab := w.first
	w.first = nil
	if ab == nil {
		var err error
		if ab, err = w.addBlock(nil); err != nil {
			return err
		}
	}
	bpc := int(ab.BytesPerChecksum)
	if bpc == 0 {
		bpc = chunks.Default
	}
	if !chunks.Valid(bpc) {
		return errs.Newf(errs.Invalid, "WriteBlock", blockName(ab.Block.Block.Id), "namenode gave bytes per checksum %d", bpc)
	}
	w.cur = &blockWrite{lb: ab.Block, token: ab.Token, bpc: bpc}
	if w.c.cfg.FanOutMax > 0 {
		return nil
	}
	return w.openCur(nil)
}

// openCur opens the current block's pipeline; a pipeline that cannot be
// opened is given back and another placed without the datanodes it
// blamed (and those in exclude), keeping the block's bytes.
func (w *Writer) openCur(exclude []string) error {
	var lastErr error
	for attempt := 1; ; attempt++ {
		b := w.cur
		bad, err := w.c.openPipeline(w.ctx, b, w.inode, b.lb.Locations, 0, 0)
		if err == nil {
			return nil
		}
		lastErr = err
		_ = w.abandon(b.lb.Block)
		w.cur = nil
		if attempt == maxPipelineAttempts {
			break
		}
		exclude = append(exclude, bad)
		ab, err := w.addBlock(exclude)
		if err != nil {
			return err
		}
		w.cur = &blockWrite{lb: ab.Block, token: ab.Token, bpc: b.bpc, buf: b.buf}
	}
	return &errs.Error{Kind: errs.Unavailable, Op: "WriteBlock", Path: w.path, Msg: "every pipeline failed", Err: lastErr}
}

// openPipeline opens the stream of b to nodes (the first, which forwards
// to the rest). A resumed block (pipeline recovery, append) starts at
// resume under its new stamp, its replicas holding it under prevGen.
func (c *Client) openPipeline(ctx context.Context, b *blockWrite, inode uint64, nodes []*api.DatanodeInfo, resume, prevGen uint64) (string, error) {
	first := nodes[0]
	conn, err := c.conn("WriteBlock", first.Addr)
	if err != nil {
		return first.Id, err
	}
	hdr := &api.WriteBlockHeader{
		Block:            &api.Block{Id: b.lb.Block.Id, GenStamp: b.lb.Block.GenStamp},
		InodeId:          inode,
		Token:            b.token,
		Pipeline:         nodes[1:],
		BytesPerChecksum: uint32(b.bpc),
		OpenEnded:        true,
		ResumeOffset:     resume,
		PreviousGenStamp: prevGen,
	}
	s, err := blockstream.Start(ctx, api.NewDataServiceClient(conn), hdr, c.cfg.Window)
	if err != nil {
		return blamed(s, first.Id), err
	}
	b.stream = s
	return "", nil
}
