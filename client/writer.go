package client

import (
	"context"
	"strconv"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/blockstream"
	"github.com/blockfs/blockfs/internal/chunks"
)

// BadNodeKey is the trailer key in which a datanode names the pipeline
// member that failed a write, so the client can exclude it next time.
const BadNodeKey = blockstream.BadNodeKey

// CreateOptions are the options of Create; zero values take the
// namenode's defaults.
type CreateOptions struct {
	Perm      uint32
	Overwrite bool
	// NonRecursive refuses to create the file when its parent directory
	// is missing (HDFS's createNonRecursive). By default missing parents
	// are created, as HDFS's create does.
	NonRecursive bool
	Replication  uint32
	BlockSize    uint64
}

// Writer writes a new file block by block. It is not safe for concurrent
// use. Close completes the file; a file whose Writer was not closed stays
// under construction.
type Writer struct {
	c         *Client
	ctx       context.Context
	path      string
	inode     uint64
	blockSize uint64
	buf       []byte
	blocks    []*api.Block
	sums      blockSums
	err       error
	closed    bool
}

// Create creates p and returns a Writer for it. ctx bounds every call the
// Writer makes.
func (c *Client) Create(ctx context.Context, p string, o CreateOptions) (*Writer, error) {
	var st *api.FileStatus
	err := c.call(ctx, "create", func(ctx context.Context, nn api.ClientServiceClient) error {
		r, err := nn.Create(ctx, &api.CreateRequest{
			Path: p, Mode: o.Perm, Overwrite: o.Overwrite, CreateParent: !o.NonRecursive,
			Replication: o.Replication, BlockSize: o.BlockSize, ClientName: c.cfg.User,
		}, trailerOpt(ctx))
		st = r.GetStatus()
		c.saw(r.GetHeader())
		return err
	})
	if err != nil {
		return nil, err
	}
	if st.GetBlockSize() == 0 || st.GetBlockSize() > maxBlockSize {
		return nil, errs.Newf(errs.Internal, "create", p, "namenode answered block size %d; want 1..%d", st.GetBlockSize(), uint64(maxBlockSize))
	}
	return &Writer{c: c, ctx: ctx, path: p, inode: st.InodeId, blockSize: st.BlockSize}, nil
}

// maxBlockSize is the largest block a Writer buffers (the namenode's
// --max-block-size is smaller); a larger answer is a namenode bug, not a
// reason to panic.
const maxBlockSize = 1 << 40

// fill returns how many bytes of a len(p)-byte write go into a block
// buffer holding buffered bytes of a blockSize-byte block.
func fill(buffered int, blockSize uint64, p int) int {
	room := int(min(blockSize, maxBlockSize)) - buffered
	return max(0, min(room, p))
}

// Write buffers p and writes every full block through the pipeline.
func (w *Writer) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if w.closed {
		return 0, errs.New(errs.Precondition, "write", w.path, "writer is closed")
	}
	n := len(p)
	for len(p) > 0 {
		take := fill(len(w.buf), w.blockSize, len(p))
		w.buf = append(w.buf, p[:take]...)
		p = p[take:]
		if uint64(len(w.buf)) == w.blockSize {
			if err := w.flushBlock(); err != nil {
				w.err = err
				return n - len(p), err
			}
		}
	}
	return n, nil
}

// Close writes the last partial block and completes the file.
func (w *Writer) Close() error {
	if w.closed {
		return w.err
	}
	w.closed = true
	if w.err != nil {
		return w.err
	}
	if len(w.buf) > 0 {
		if err := w.flushBlock(); err != nil {
			w.err = err
			return err
		}
	}
	w.err = w.c.call(w.ctx, "complete", func(ctx context.Context, nn api.ClientServiceClient) error {
		r, err := nn.Complete(ctx, &api.CompleteRequest{Path: w.path, InodeId: w.inode, Blocks: w.blocks}, trailerOpt(ctx))
		w.c.saw(r.GetHeader())
		return err
	})
	return w.err
}

// maxPipelineAttempts bounds how often a block is re-placed after a
// pipeline failure.
const maxPipelineAttempts = 4

func (w *Writer) flushBlock() error {
	data := w.buf
	var exclude []string
	var lastErr error
	for range maxPipelineAttempts {
		resp, err := w.addBlock(exclude)
		if err != nil {
			return err
		}
		bad, err := w.c.writePipeline(w.ctx, resp, w.inode, data, &w.sums)
		if err == nil {
			b := resp.Block.Block
			b.Length = uint64(len(data))
			crc := w.sums.block
			b.Crc32C = &crc
			w.blocks = append(w.blocks, b)
			w.buf = w.buf[:0]
			w.sums.reset()
			return nil
		}
		lastErr = err
		// Give the block back and try a pipeline without the bad node.
		_ = w.c.call(w.ctx, "abandon block", func(ctx context.Context, nn api.ClientServiceClient) error {
			_, err := nn.AbandonBlock(ctx, &api.AbandonBlockRequest{Path: w.path, InodeId: w.inode, Block: resp.Block.Block}, trailerOpt(ctx))
			return err
		})
		if bad == "" && len(resp.Block.Locations) > 0 {
			bad = resp.Block.Locations[0].Id
		}
		exclude = append(exclude, bad)
	}
	return &errs.Error{Kind: errs.Unavailable, Op: "write block", Path: w.path, Msg: "every pipeline failed", Err: lastErr}
}

func (w *Writer) addBlock(exclude []string) (*api.AddBlockResponse, error) {
	var prev *api.Block
	if len(w.blocks) > 0 {
		prev = w.blocks[len(w.blocks)-1]
	}
	var out *api.AddBlockResponse
	err := w.c.call(w.ctx, "add block", func(ctx context.Context, nn api.ClientServiceClient) error {
		r, err := nn.AddBlock(ctx, &api.AddBlockRequest{Path: w.path, InodeId: w.inode, Previous: prev, ExcludeNodes: exclude}, trailerOpt(ctx))
		out = r
		w.c.saw(r.GetHeader())
		return err
	})
	if err == nil && len(out.GetBlock().GetLocations()) == 0 {
		err = errs.New(errs.Unavailable, "add block", w.path, "namenode returned an empty pipeline")
	}
	return out, err
}

// writePipeline streams one block to the first datanode of the pipeline,
// which forwards it down the rest: packets of whole chunks, each chunk
// with its CRC32C, at most cfg.Window packets unacknowledged. It returns
// the block's CRC32C, and on failure the id of a datanode the pipeline
// blamed, if any.
func (c *Client) writePipeline(ctx context.Context, ab *api.AddBlockResponse, inode uint64, data []byte, sums *blockSums) (string, error) {
	lb := ab.Block
	first := lb.Locations[0]
	conn, err := c.conn(first.Addr)
	if err != nil {
		return first.Id, err
	}
	bpc := int(ab.BytesPerChecksum)
	if bpc == 0 {
		bpc = chunks.Default
	}
	if !chunks.Valid(bpc) {
		return "", errs.Newf(errs.Invalid, "write block", blockName(lb.Block.Id), "namenode gave bytes per checksum %d", bpc)
	}
	sums.compute(data, bpc)
	hdr := &api.WriteBlockHeader{
		Block:            &api.Block{Id: lb.Block.Id, GenStamp: lb.Block.GenStamp, Length: uint64(len(data))},
		InodeId:          inode,
		Token:            ab.Token,
		Pipeline:         lb.Locations[1:],
		BytesPerChecksum: uint32(bpc),
	}
	w, err := blockstream.Start(ctx, api.NewDataServiceClient(conn), hdr, c.cfg.Window)
	if err != nil {
		return blamed(w, first.Id), err
	}
	packet := max(c.cfg.ChunkSize/bpc, 1) * bpc
	for off := 0; ; off += packet {
		end := min(off+packet, len(data))
		if err := w.Send(data[off:end], sums.crcs[off/bpc:chunks.Count(end, bpc)], end == len(data)); err != nil {
			return blamed(w, first.Id), err
		}
		if end == len(data) {
			break
		}
	}
	ack, err := w.Finish()
	if err != nil {
		return blamed(w, first.Id), err
	}
	if ack.Crc32C != sums.block || ack.Length != uint64(len(data)) {
		return first.Id, errs.New(errs.Corrupt, "write block", blockName(lb.Block.Id), "datanode acknowledged different bytes than were sent")
	}
	return "", nil
}

// blamed is the datanode a failed stream named, else def.
func blamed(w *blockstream.Writer, def string) string {
	if w != nil {
		if b := w.BadNode(); b != "" {
			return b
		}
	}
	return def
}

func blockName(id uint64) string { return "block " + strconv.FormatUint(id, 10) }

// blockSums are the checksums of the block being written, computed once
// for all the pipelines it may take; the slice is reused block to block.
type blockSums struct {
	bpc   int
	n     int
	crcs  []uint32
	block uint32
}

func (s *blockSums) compute(data []byte, bpc int) {
	if s.bpc == bpc && s.n == len(data) && s.crcs != nil {
		return
	}
	s.bpc, s.n = bpc, len(data)
	s.crcs = chunks.Sums(s.crcs[:0], data, bpc)
	s.block = chunks.CRC(data)
}

func (s *blockSums) reset() { s.crcs, s.n = s.crcs[:0], -1 }
