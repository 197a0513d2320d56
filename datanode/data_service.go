package datanode

import (
	"context"
	"strconv"

	"google.golang.org/grpc"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/lbm"
)

// dataService implements api.DataServiceServer.
type dataService struct {
	api.UnimplementedDataServiceServer
	d *Datanode
}

func (s *dataService) WriteBlock(stream grpc.BidiStreamingServer[api.WriteBlockRequest, api.WriteBlockAck]) error {
	return s.d.writeBlock(stream)
}

func (s *dataService) ReadBlock(req *api.ReadBlockRequest, stream grpc.ServerStreamingServer[api.ReadBlockResponse]) error {
	return s.d.readBlock(req, stream)
}

func (s *dataService) TransferBlock(ctx context.Context, req *api.TransferBlockRequest) (*api.TransferBlockResponse, error) {
	if req.GetBlock() == nil {
		return nil, errs.New(errs.Invalid, "TransferBlock", "", "block is required")
	}
	if err := s.d.tokens.checkCopy(ctx, req.Token, s.d.ownerInode(req.Block, req.InodeId), req.Block); err != nil {
		return nil, err
	}
	stored, err := s.d.transfer(ctx, req.Block, req.InodeId, req.Token, req.Targets, nil)
	if err != nil {
		return nil, err
	}
	return &api.TransferBlockResponse{StoredOn: stored}, nil
}

func blockName(id uint64) string { return "block " + strconv.FormatUint(id, 10) }

// statReplica finds the local replica of b, checking its generation stamp.
// ownerInode is the inode a token for b must cover: the one recorded when
// the block was written, never what the caller claims. For a block not
// held here it is the claim, so a caller without a valid token learns
// nothing about which blocks exist.
func (d *Datanode) ownerInode(b *api.Block, claimed uint64) uint64 {
	if info, ok := d.store.Stat(b.GetId()); ok {
		return info.Inode
	}
	if r := d.rbws.get(b.GetId()); r != nil {
		return r.inode
	}
	return claimed
}

func (d *Datanode) statReplica(op string, b *api.Block) (lbm.BlockInfo, error) {
	info, ok := d.store.Stat(b.Id)
	if !ok {
		return info, errs.Newf(errs.NotFound, op, blockName(b.Id), "no replica on datanode %s", d.id)
	}
	if info.GenStamp != b.GenStamp {
		return info, errs.Newf(errs.NotFound, op, blockName(b.Id), "stale generation: replica has %d, asked for %d", info.GenStamp, b.GenStamp)
	}
	return info, nil
}
