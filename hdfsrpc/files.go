package hdfsrpc

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/blockfs/blockfs/api"
	hdfs "github.com/blockfs/blockfs/api/hadoop/hdfs"
	"github.com/blockfs/blockfs/errs"
)

// HDFS's CreateFlag bits (CreateFlagProto).
const (
	flagCreate    = 0x01
	flagOverwrite = 0x02
	flagAppend    = 0x04
	flagNewBlock  = 0x20
)

func create(d *Door, ctx context.Context, req *hdfs.CreateRequestProto) (proto.Message, error) {
	fl := req.GetCreateFlag()
	if fl&flagAppend != 0 {
		return nil, errs.New(errs.Invalid, "create", req.GetSrc(), "CreateFlag.APPEND in create is not supported: call append")
	}
	if fl&(flagCreate|flagOverwrite) == 0 {
		return nil, errs.New(errs.Invalid, "create", req.GetSrc(), "CreateFlag has neither CREATE nor OVERWRITE")
	}
	r, err := d.cfg.Service.Create(ctx, &api.CreateRequest{
		Path: req.GetSrc(), Mode: perm(req.GetMasked(), 0o644), Overwrite: fl&flagOverwrite != 0,
		Replication: req.GetReplication(), BlockSize: req.GetBlockSize(), CreateParent: req.GetCreateParent(),
		ClientName: req.GetClientName(),
	})
	if err != nil {
		return nil, err
	}
	return &hdfs.CreateResponseProto{Fs: status(r.Status, "")}, nil
}

func appendFile(d *Door, ctx context.Context, req *hdfs.AppendRequestProto) (proto.Message, error) {
	r, err := d.cfg.Service.Append(ctx, &api.AppendRequest{
		Path: req.GetSrc(), ClientName: req.GetClientName(), NewBlock: req.GetFlag()&flagNewBlock != 0,
	})
	if err != nil {
		return nil, err
	}
	out := &hdfs.AppendResponseProto{Stat: status(r.Status, "")}
	if r.LastBlock != nil {
		out.Block = d.located(r.LastBlock, r.Token)
	} else if len(r.Blocks) > 0 {
		// Appending at a block boundary: the writer's first addBlock names
		// no previous block (HDFS's analyzeFileState, case 1); it is the
		// file's last, which blockfs's AddBlock wants named.
		d.boundary.Store(r.Status.InodeId, r.Blocks[len(r.Blocks)-1])
	}
	return out, nil
}

func addBlock(d *Door, ctx context.Context, req *hdfs.AddBlockRequestProto) (proto.Message, error) {
	id, err := d.inode(ctx, req.GetSrc(), req.GetFileId())
	if err != nil {
		return nil, err
	}
	prev := block(req.GetPrevious())
	if last, ok := d.boundary.LoadAndDelete(id); ok && prev == nil {
		prev = last.(*api.Block)
	}
	var exclude []string
	for _, x := range req.GetExcludeNodes() {
		exclude = append(exclude, x.GetId().GetDatanodeUuid())
	}
	r, err := d.cfg.Service.AddBlock(ctx, &api.AddBlockRequest{
		Path: req.GetSrc(), InodeId: id, Previous: prev, ExcludeNodes: exclude,
	})
	if err != nil {
		return nil, err
	}
	return &hdfs.AddBlockResponseProto{Block: d.located(r.Block, r.Token)}, nil
}

func abandonBlock(d *Door, ctx context.Context, req *hdfs.AbandonBlockRequestProto) (proto.Message, error) {
	id, err := d.inode(ctx, req.GetSrc(), req.GetFileId())
	if err != nil {
		return nil, err
	}
	if _, err := d.cfg.Service.AbandonBlock(ctx, &api.AbandonBlockRequest{Path: req.GetSrc(), InodeId: id, Block: block(req.GetB())}); err != nil {
		return nil, err
	}
	return &hdfs.AbandonBlockResponseProto{}, nil
}

// complete closes the file. HDFS's client names only the last block;
// blockfs's Complete takes every block with its final length, so the
// earlier ones are the file's as the namenode recorded them (their
// lengths were fixed when the next block was added).
func complete(d *Door, ctx context.Context, req *hdfs.CompleteRequestProto) (proto.Message, error) {
	id, blocks, err := d.fileBlocks(ctx, "complete", req.GetSrc(), req.GetFileId())
	if err != nil {
		return nil, err
	}
	if last := block(req.GetLast()); last != nil {
		if n := len(blocks); n > 0 && blocks[n-1].Id == last.Id {
			blocks[n-1] = last
		} else {
			blocks = append(blocks, last) // the FSM names the mismatch
		}
	}
	if _, err := d.cfg.Service.Complete(ctx, &api.CompleteRequest{Path: req.GetSrc(), InodeId: id, Blocks: blocks}); err != nil {
		return nil, err
	}
	return &hdfs.CompleteResponseProto{Result: proto.Bool(true)}, nil
}

// fsync records the last block's length (hflush); HDFS names only the
// length, so the block is the file's last.
func fsync(d *Door, ctx context.Context, req *hdfs.FsyncRequestProto) (proto.Message, error) {
	id, blocks, err := d.fileBlocks(ctx, "fsync", req.GetSrc(), req.GetFileId())
	if err != nil {
		return nil, err
	}
	n := len(blocks)
	if n == 0 || req.GetLastBlockLength() < 0 {
		return &hdfs.FsyncResponseProto{}, nil
	}
	b := blocks[n-1]
	b.Length = uint64(req.GetLastBlockLength())
	if _, err := d.cfg.Service.Fsync(ctx, &api.FsyncRequest{Path: req.GetSrc(), InodeId: id, Block: b}); err != nil {
		return nil, err
	}
	return &hdfs.FsyncResponseProto{}, nil
}

// fileBlocks returns the inode and recorded blocks of the file a writer
// names by path and (when its client sends one) file id. Only the
// writer's own Complete or Fsync follows, and the FSM refuses anyone else
// there, so the blocks are read without a permission check of their own:
// no read permission is needed to close a file, and no token is signed.
func (d *Door) fileBlocks(ctx context.Context, op, p string, id uint64) (uint64, []*api.Block, error) {
	id, err := d.inode(ctx, p, id)
	if err != nil {
		return 0, nil, err
	}
	_, blocks, ok := d.cfg.Files.FileBlocks(id)
	if !ok {
		return 0, nil, errs.Newf(errs.NotFound, op, p, "no file with inode id %d", id)
	}
	return id, blocks, nil
}

// renewLease: blockfs's leases are the user's, whatever client name the
// writer gives.
func renewLease(d *Door, ctx context.Context, _ *hdfs.RenewLeaseRequestProto) (proto.Message, error) {
	if _, err := d.cfg.Service.RenewLease(ctx, &api.RenewLeaseRequest{}); err != nil {
		return nil, err
	}
	return &hdfs.RenewLeaseResponseProto{}, nil
}

func recoverLease(d *Door, ctx context.Context, req *hdfs.RecoverLeaseRequestProto) (proto.Message, error) {
	r, err := d.cfg.Service.RecoverLease(ctx, &api.RecoverLeaseRequest{Path: req.GetSrc()})
	if err != nil {
		return nil, err
	}
	return &hdfs.RecoverLeaseResponseProto{Result: proto.Bool(r.Closed)}, nil
}

// updateBlockForPipeline: a new generation stamp for the writer's block.
// HDFS names only the block; the namenode finds its file.
func updateBlockForPipeline(d *Door, ctx context.Context, req *hdfs.UpdateBlockForPipelineRequestProto) (proto.Message, error) {
	b := block(req.GetBlock())
	p, id, err := d.fileOf(ctx, "updateBlockForPipeline", b)
	if err != nil {
		return nil, err
	}
	r, err := d.cfg.Service.UpdateBlockForPipeline(ctx, &api.UpdateBlockForPipelineRequest{Path: p, InodeId: id, Block: b})
	if err != nil {
		return nil, err
	}
	lb := &api.LocatedBlock{Block: r.Block}
	return &hdfs.UpdateBlockForPipelineResponseProto{Block: d.located(lb, r.Token)}, nil
}

func updatePipeline(d *Door, ctx context.Context, req *hdfs.UpdatePipelineRequestProto) (proto.Message, error) {
	oldB, newB := block(req.GetOldBlock()), block(req.GetNewBlock())
	p, id, err := d.fileOf(ctx, "updatePipeline", oldB)
	if err != nil {
		return nil, err
	}
	var dns []string
	for _, n := range req.GetNewNodes() {
		dns = append(dns, n.GetDatanodeUuid())
	}
	if _, err := d.cfg.Service.UpdatePipeline(ctx, &api.UpdatePipelineRequest{
		Path: p, InodeId: id, OldBlock: oldB, NewBlock: newB, Datanodes: dns,
	}); err != nil {
		return nil, err
	}
	return &hdfs.UpdatePipelineResponseProto{}, nil
}

func getBlockLocations(d *Door, ctx context.Context, req *hdfs.GetBlockLocationsRequestProto) (proto.Message, error) {
	r, err := d.cfg.Service.GetBlockLocations(ctx, &api.GetBlockLocationsRequest{
		Path: req.GetSrc(), Offset: req.GetOffset(), Length: req.GetLength(),
	})
	if err != nil {
		return nil, err
	}
	return d.getBlockLocationsResponse(r), nil
}

// inode is the file id a request names, else the file's (old clients
// send none).
func (d *Door) inode(ctx context.Context, p string, id uint64) (uint64, error) {
	if id != 0 {
		return id, nil
	}
	r, err := d.cfg.Service.GetFileInfo(ctx, &api.GetFileInfoRequest{Path: p})
	if err != nil {
		return 0, err
	}
	return r.Status.InodeId, nil
}

// fileOf finds the file of a block a writer names without its path.
func (d *Door) fileOf(_ context.Context, op string, b *api.Block) (string, uint64, error) {
	if b == nil {
		return "", 0, errs.New(errs.Invalid, op, "", "no block named")
	}
	if p, id, ok := d.cfg.Files.FileOfBlock(b.Id); ok {
		return p, id, nil
	}
	return "", 0, errs.Newf(errs.NotFound, op, "", "block blk_%d_%d is in no file", b.Id, b.GenStamp)
}
