package client

import (
	"context"
	"slices"
	"strconv"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/base/chunks"
	"github.com/blockfs/blockfs/internal/node/blockstream"
	"github.com/blockfs/blockfs/security"
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
	// FirstBlock has the Create allocate the file's first block too, in
	// the same call and Raft entry (CreateRequest.first_block): a file of
	// one block then costs the namenode two calls, Create and Complete.
	// Ask for it when the file will not be empty; a Writer closed with
	// nothing written gives the block back (AbandonBlock) first.
	FirstBlock bool
}

// Writer writes a file block by block, as HDFS's DFSOutputStream does: the
// bytes of each block stream through a pipeline of datanodes as they
// come, a packet at a time, and the Writer keeps the block's bytes until
// the block ends, so that a failed datanode is dropped from the pipeline
// and the write goes on through the others (pipeline recovery). Hflush
// makes what was written visible to readers; Hsync also makes it durable
// on every datanode. Close completes the file. While a Writer is open its
// Client renews the lease on the file; a file whose Writer was never
// closed is recovered and closed by the namenode after the lease's hard
// limit. A Writer is not safe for concurrent use.
type Writer struct {
	c         *Client
	ctx       context.Context
	path      string
	inode     uint64
	blockSize uint64
	blocks    []*api.Block // the blocks before cur, committed at the next AddBlock or Complete
	cur       *blockWrite  // the block being written; nil between blocks
	// lastSynced: the last of blocks, finished with cur nil, had its
	// length recorded by an hflush (Fsync) before anything committed it.
	lastSynced bool
	// first is the block the Create allocated (CreateOptions.FirstBlock),
	// until the first block starts with it.
	first *api.AddBlockResponse
	// readToken is the finished single block's token if it grants reads
	// too (an owner's Create gets rw): the location cache presents it, one
	// every pipeline datanode has verified already.
	readToken []byte
	// receipts are the last finished block's replica receipts, for
	// Complete (api.Receipt).
	receipts []*api.Receipt
	err      error
	closed   bool
}

// blockWrite is the block being written and its pipeline.
type blockWrite struct {
	lb     *api.LocatedBlock // block (id, generation stamp) and its pipeline
	token  []byte
	bpc    int
	base   int64  // block offset of buf[0]: 0, or where a reopened block resumed
	buf    []byte // the block's bytes from base
	sent   int64  // block offset up to which packets were sent
	synced int64  // length last recorded with the namenode (Fsync)
	stream *blockstream.Writer
	crcs   []uint32 // scratch for packet CRCs
}

func (b *blockWrite) end() int64 { return b.base + int64(len(b.buf)) }

// Create creates p and returns a Writer for it. ctx bounds every call the
// Writer makes.
func (c *Client) Create(ctx context.Context, p string, o CreateOptions) (*Writer, error) {
	var st *api.FileStatus
	var soft int64
	var first *api.AddBlockResponse
	defer c.locs.drop(p, nil) // an overwrite: after the call, whatever its outcome
	err := c.call(ctx, "Create", func(ctx context.Context, nn api.ClientServiceClient) error {
		r, err := nn.Create(ctx, &api.CreateRequest{
			Path: p, Mode: o.Perm, Overwrite: o.Overwrite, CreateParent: !o.NonRecursive,
			Replication: o.Replication, BlockSize: o.BlockSize, ClientName: c.cfg.User, FirstBlock: o.FirstBlock,
		}, trailerOpt(ctx))
		st, soft = r.GetStatus(), r.GetLeaseSoftLimitMs()
		first = nil
		if len(r.GetBlock().GetLocations()) > 0 {
			first = &api.AddBlockResponse{Block: r.Block, Token: r.Token, BytesPerChecksum: r.BytesPerChecksum}
		}
		c.saw(r.GetHeader())
		return err
	})
	if err != nil {
		return nil, err
	}
	if st.GetBlockSize() == 0 || st.GetBlockSize() > maxBlockSize {
		return nil, errs.Newf(errs.Internal, "client.Client.Create", p, "namenode answered block size %d; want 1..%d", st.GetBlockSize(), uint64(maxBlockSize))
	}
	c.leases.hold(soft)
	return &Writer{c: c, ctx: ctx, path: p, inode: st.InodeId, blockSize: st.BlockSize, first: first}, nil
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

// Write adds p to the file, sending each full packet down the pipeline.
func (w *Writer) Write(p []byte) (int, error) {
	if err := w.usable("client.Writer.Write"); err != nil {
		return 0, err
	}
	n := len(p)
	for len(p) > 0 {
		if w.cur == nil {
			if err := w.startBlock(); err != nil {
				return w.fail(n-len(p), err)
			}
		}
		b := w.cur
		take := fill(int(b.end()), w.blockSize, len(p))
		b.buf = append(b.buf, p[:take]...)
		p = p[take:]
		full := uint64(b.end()) == w.blockSize
		// A full block whose pipeline is not open yet is finishBlock's.
		if b.stream != nil || !full {
			if err := w.sendPackets(full, false, false); err != nil {
				return w.fail(n-len(p), err)
			}
		}
		if full {
			if err := w.finishBlock(); err != nil {
				return w.fail(n-len(p), err)
			}
		}
	}
	return n, nil
}

func (w *Writer) usable(op string) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errs.New(errs.Precondition, op, w.path, "writer is closed")
	}
	return nil
}

func (w *Writer) fail(n int, err error) (int, error) {
	w.err = err
	return n, err
}

// Hflush sends every byte written so far down the pipeline, waits until
// every datanode of it acknowledged them, and records the length with the
// namenode: a reader that opens the file afterwards sees them (HDFS's
// hflush).
func (w *Writer) Hflush() error { return w.flush("client.Writer.Hflush", false) }

// Hsync is Hflush that also makes the bytes durable (fsync) on every
// datanode of the pipeline before they are acknowledged (HDFS's hsync).
func (w *Writer) Hsync() error { return w.flush("client.Writer.Hsync", true) }

func (w *Writer) flush(op string, hsync bool) error {
	if err := w.usable(op); err != nil {
		return err
	}
	b := w.cur
	if b == nil {
		// Every block so far is finished; the last one is committed only
		// by the next AddBlock or Complete, so its length is recorded now.
		if n := len(w.blocks); n > 0 && !w.lastSynced {
			if err := w.fsync(w.blocks[n-1]); err != nil {
				w.err = err
				return err
			}
			w.lastSynced = true
		}
		return nil
	}
	// Send everything, and wait for every datanode's ack; a pipeline
	// rebuilt meanwhile gets the unacknowledged bytes again.
	for {
		if err := w.sendPackets(true, false, hsync); err != nil {
			w.err = err
			return err
		}
		err := w.cur.stream.WaitAcked()
		if err == nil {
			break
		}
		if err = w.recoverPipeline(err); err != nil {
			w.err = err
			return err
		}
	}
	b = w.cur // a block re-placed by the recovery
	if b.sent == b.synced {
		return nil
	}
	if err := w.fsync(&api.Block{Id: b.lb.Block.Id, GenStamp: b.lb.Block.GenStamp, Length: uint64(b.sent)}); err != nil {
		w.err = err
		return err
	}
	b.synced = b.sent
	return nil
}

// fsync records the length of the file's last block with the namenode.
func (w *Writer) fsync(blk *api.Block) error {
	blk = &api.Block{Id: blk.Id, GenStamp: blk.GenStamp, Length: blk.Length}
	return w.c.call(w.ctx, "Fsync", func(ctx context.Context, nn api.ClientServiceClient) error {
		r, err := nn.Fsync(ctx, &api.FsyncRequest{Path: w.path, InodeId: w.inode, Block: blk}, trailerOpt(ctx))
		w.c.saw(r.GetHeader())
		return err
	})
}

// Close finishes the last block and completes the file.
func (w *Writer) Close() error {
	if w.closed {
		return w.err
	}
	w.closed = true
	defer w.c.leases.release()
	if w.err != nil {
		return w.err
	}
	if w.cur != nil {
		if err := w.finishBlock(); err != nil {
			w.err = err
			return err
		}
	}
	if w.first != nil {
		// Nothing was written: the Create's block goes back, or Complete
		// would find a block the writer never names.
		if w.err = w.abandon(w.first.Block.Block); w.err != nil {
			return w.err
		}
		w.first = nil
	}
	gen := w.c.locs.generation(w.path)
	var located *api.GetBlockLocationsResponse
	w.err = w.c.call(w.ctx, "Complete", func(ctx context.Context, nn api.ClientServiceClient) error {
		r, err := nn.Complete(ctx, &api.CompleteRequest{Path: w.path, InodeId: w.inode, Blocks: w.blocks, WantLocations: w.c.locs != nil, Receipts: w.receipts}, trailerOpt(ctx))
		w.c.saw(r.GetHeader())
		located = r.GetLocated()
		return err
	})
	if w.err == nil {
		w.cacheLocations(located, gen)
	}
	return w.err
}

// cacheLocations puts the closed file's locations, as the namenode
// answered them with the close, in the client's location cache.
func (w *Writer) cacheLocations(located *api.GetBlockLocationsResponse, gen locGen) {
	if located == nil || located.InodeId != w.inode || ExpandLocations(located) != nil {
		return
	}
	if len(w.blocks) == 1 && len(located.Blocks) == 1 && w.readToken != nil && located.Blocks[0].Block.Id == w.blocks[0].Id {
		located.Blocks[0].Token = w.readToken // readBlock prefers a block's own token
	}
	w.c.locs.put(w.path, located, gen)
}

// Abort drops the Writer without completing the file: its lease stops
// being renewed, and the namenode recovers the file after the hard limit
// (or at once, on RecoverLease). The pipeline's datanodes keep what they
// acknowledged.
func (w *Writer) Abort() {
	if w.closed {
		return
	}
	w.closed = true
	if w.cur != nil && w.cur.stream != nil {
		w.cur.stream.Abort()
	}
	w.err = errs.New(errs.Canceled, "client.Writer.Abort", w.path, "writer aborted")
	w.c.leases.release()
}

// maxPipelineAttempts bounds how often one block's pipeline is rebuilt,
// or a new block re-placed, after failures.
const maxPipelineAttempts = 4

// abandon gives block b of the file back (AbandonBlock).
func (w *Writer) abandon(b *api.Block) error {
	return w.c.call(w.ctx, "AbandonBlock", func(ctx context.Context, nn api.ClientServiceClient) error {
		_, err := nn.AbandonBlock(ctx, &api.AbandonBlockRequest{Path: w.path, InodeId: w.inode, Block: b}, trailerOpt(ctx))
		return err
	})
}

// sendPackets sends the unsent bytes of the current block in packets of
// whole chunks; with all set it sends the tail too, however short (an
// hflush, or the block's end), and last marks the final packet.
func (w *Writer) sendPackets(all, last, hsync bool) error {
	if b := w.cur; b.stream == nil {
		if !all && b.end()-b.sent < int64(w.packetSize(b)) {
			return nil // not a packet yet: the pipeline can wait
		}
		if err := w.openCur(nil); err != nil {
			return err
		}
	}
	for {
		err := w.trySend(all, last, hsync)
		if err == nil {
			return nil
		}
		if err = w.recoverPipeline(err); err != nil {
			return err
		}
	}
}

func (w *Writer) trySend(all, last, hsync bool) error {
	b := w.cur
	bpc := int64(b.bpc)
	packet := int64(w.packetSize(b))
	for {
		end := b.end()
		if b.sent == end {
			if all && (last || hsync) {
				if err := b.stream.SendAt(uint64(end), nil, nil, last, hsync); err != nil {
					return err
				}
			}
			return nil
		}
		// A packet starts where the last one ended, or back at the start
		// of the chunk that one ended in (the chunk's CRC covers all its
		// bytes), but never before the bytes this Writer holds.
		from := b.sent
		if r := from % bpc; r != 0 {
			from = max(from-r, b.base)
		}
		stop := from - from%bpc + packet
		if stop > end {
			if !all {
				return nil
			}
			stop = end
		}
		fin := all && stop == end
		data := b.buf[from-b.base : stop-b.base]
		b.crcs = packetCRCs(b.crcs[:0], from, data, b.bpc)
		if err := b.stream.SendAt(uint64(from), data, b.crcs, fin && last, fin && hsync); err != nil {
			return err
		}
		b.sent = stop
		if fin {
			return nil
		}
	}
}

// packetSize is the data size of a full packet of b: whole chunks.
func (w *Writer) packetSize(b *blockWrite) int { return max(w.c.cfg.ChunkSize/b.bpc, 1) * b.bpc }

// packetCRCs appends the CRC32C of each chunk of a packet of data at block
// offset off: chunks are aligned to block offsets, so a packet starting
// inside a chunk begins with the short rest of it.
func packetCRCs(dst []uint32, off int64, data []byte, bpc int) []uint32 {
	if len(data) == 0 {
		return dst
	}
	first := min(len(data), bpc-int(off%int64(bpc)))
	dst = append(dst, chunks.CRC(data[:first]))
	return chunks.Sums(dst, data[first:], bpc)
}

// finishBlock sends the rest of the current block as its final packet,
// waits for the pipeline's final ack and queues the block for commit.
func (w *Writer) finishBlock() error {
	var ack *api.WriteBlockAck
	var err error
	switch {
	case w.fanOutOK():
		ack, err = w.fanOut()
	case w.cur.stream == nil:
		err = w.openCur(nil)
	}
	if err != nil {
		return err
	}
	for ack == nil {
		err := w.trySend(true, true, false)
		if err == nil {
			ack, err = w.cur.stream.Finish()
		}
		if err == nil {
			break
		}
		if err = w.recoverPipeline(err); err != nil {
			return err
		}
	}
	b := w.cur
	if ack.GetLength() != uint64(b.end()) || (b.base == 0 && ack.GetCrc32C() != chunks.CRC(b.buf)) {
		return errs.New(errs.Corrupt, "WriteBlock", blockName(b.lb.Block.Id), "datanode acknowledged different bytes than were sent")
	}
	blk := &api.Block{Id: b.lb.Block.Id, GenStamp: b.lb.Block.GenStamp, Length: ack.Length}
	crc := ack.Crc32C
	blk.Crc32C = &crc
	w.blocks = append(w.blocks, blk)
	w.receipts = ack.GetReceipts()
	w.readToken = nil
	if len(w.blocks) == 1 && b.base == 0 && w.c.locs != nil && security.UnverifiedGrants(b.token, security.Read) {
		w.readToken = b.token
	}
	w.cur, w.lastSynced = nil, false
	return nil
}

// recoverPipeline rebuilds the current block's pipeline after failure
// cause: without the datanode the stream blamed, under a new generation
// stamp, resumed at the bytes every datanode acknowledged, with the rest
// sent again (HDFS's pipeline recovery). With nothing acknowledged and no
// other datanode left, the block is given back and placed anew.
func (w *Writer) recoverPipeline(cause error) error {
	b := w.cur
	acked := int64(b.stream.Acked())
	bad := blamed(b.stream, b.lb.Locations[0].Id)
	b.stream.Abort()
	nodes := slices.DeleteFunc(slices.Clone(b.lb.Locations), func(d *api.DatanodeInfo) bool { return d.Id == bad })
	for range maxPipelineAttempts {
		if w.ctx.Err() != nil {
			return cause
		}
		if len(nodes) == 0 {
			if acked > 0 || b.base > 0 {
				return &errs.Error{Kind: errs.Unavailable, Op: "WriteBlock", Path: w.path, Msg: "every datanode of the pipeline failed", Err: cause}
			}
			return w.restartBlock(bad, cause)
		}
		old := b.lb.Block
		var nb *api.UpdateBlockForPipelineResponse
		err := w.c.call(w.ctx, "UpdateBlockForPipeline", func(ctx context.Context, nn api.ClientServiceClient) error {
			var err error
			nb, err = nn.UpdateBlockForPipeline(ctx, &api.UpdateBlockForPipelineRequest{Path: w.path, InodeId: w.inode, Block: old}, trailerOpt(ctx))
			w.c.saw(nb.GetHeader())
			return err
		})
		if err != nil {
			return err
		}
		b.lb = &api.LocatedBlock{Block: &api.Block{Id: old.Id, GenStamp: nb.Block.GenStamp}, Offset: b.lb.Offset, Locations: nodes}
		b.token = nb.Token
		bad2, err := w.c.openPipeline(w.ctx, b, w.inode, nodes, uint64(acked), old.GenStamp)
		if err != nil {
			// The namespace keeps the old stamp until UpdatePipeline; the
			// next attempt allocates a newer one.
			b.lb = &api.LocatedBlock{Block: old, Offset: b.lb.Offset, Locations: nodes}
			nodes = slices.DeleteFunc(nodes, func(d *api.DatanodeInfo) bool { return d.Id == bad2 })
			bad, cause = bad2, err
			continue
		}
		ids := make([]string, len(nodes))
		for i, d := range nodes {
			ids[i] = d.Id
		}
		err = w.c.call(w.ctx, "UpdatePipeline", func(ctx context.Context, nn api.ClientServiceClient) error {
			r, err := nn.UpdatePipeline(ctx, &api.UpdatePipelineRequest{Path: w.path, InodeId: w.inode, OldBlock: old,
				NewBlock: b.lb.Block, Datanodes: ids}, trailerOpt(ctx))
			w.c.saw(r.GetHeader())
			return err
		})
		if err != nil {
			return err
		}
		b.sent = acked // what follows is sent again
		return nil
	}
	return cause
}

// restartBlock gives back a block no datanode acknowledged any byte of
// and places it anew without bad, keeping its bytes.
func (w *Writer) restartBlock(bad string, cause error) error {
	b := w.cur
	_ = w.abandon(b.lb.Block)
	ab, err := w.addBlock([]string{bad})
	if err != nil {
		return &errs.Error{Kind: errs.KindOf(err), Op: "WriteBlock", Path: w.path, Msg: "re-placing the block failed", Err: cause}
	}
	nb := &blockWrite{lb: ab.Block, token: ab.Token, bpc: b.bpc, buf: b.buf}
	if _, err := w.c.openPipeline(w.ctx, nb, w.inode, nb.lb.Locations, 0, 0); err != nil {
		return err
	}
	w.cur = nb
	return nil
}

func (w *Writer) addBlock(exclude []string) (*api.AddBlockResponse, error) {
	var prev *api.Block
	if len(w.blocks) > 0 {
		prev = w.blocks[len(w.blocks)-1]
	}
	var out *api.AddBlockResponse
	err := w.c.call(w.ctx, "AddBlock", func(ctx context.Context, nn api.ClientServiceClient) error {
		r, err := nn.AddBlock(ctx, &api.AddBlockRequest{Path: w.path, InodeId: w.inode, Previous: prev, ExcludeNodes: exclude}, trailerOpt(ctx))
		out = r
		w.c.saw(r.GetHeader())
		return err
	})
	if err == nil && len(out.GetBlock().GetLocations()) == 0 {
		err = errs.New(errs.Unavailable, "AddBlock", w.path, "namenode returned an empty pipeline")
	}
	return out, err
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
