package datanode

import (
	"context"
	"hash/crc32"
	"io"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/lbm"
	"github.com/blockfs/blockfs/security"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc32c(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// dataService implements api.DataServiceServer.
type dataService struct {
	api.UnimplementedDataServiceServer
	d *Datanode
}

func (s *dataService) WriteBlock(stream grpc.ClientStreamingServer[api.WriteBlockRequest, api.WriteBlockResponse]) error {
	return s.d.writeBlock(stream)
}

func (s *dataService) ReadBlock(req *api.ReadBlockRequest, stream grpc.ServerStreamingServer[api.ReadBlockResponse]) error {
	return s.d.readBlock(req, stream)
}

func (s *dataService) TransferBlock(ctx context.Context, req *api.TransferBlockRequest) (*api.TransferBlockResponse, error) {
	if req.GetBlock() == nil {
		return nil, errs.New(errs.Invalid, "transfer block", "", "block is required")
	}
	if err := s.d.tokens.checkCopy(ctx, req.Token, s.d.ownerInode(req.Block, req.InodeId), req.Block); err != nil {
		return nil, err
	}
	stored, err := s.d.transfer(ctx, req.Block, req.InodeId, req.Token, req.Targets)
	if err != nil {
		return nil, err
	}
	return &api.TransferBlockResponse{StoredOn: stored}, nil
}

func blockName(id uint64) string { return "block " + strconv.FormatUint(id, 10) }

// writeBlock receives one block, forwards it down the pipeline as it
// arrives, stores it, and acknowledges once every replica is durable.
func (d *Datanode) writeBlock(stream grpc.ClientStreamingServer[api.WriteBlockRequest, api.WriteBlockResponse]) error {
	const op = "write block"
	start := time.Now()
	ctx := stream.Context()
	first, err := stream.Recv()
	if err == io.EOF || (err == nil && first.GetHeader() == nil) {
		return errs.New(errs.Invalid, op, "", "first message must be the header")
	}
	if err != nil {
		return err
	}
	h := first.GetHeader()
	b := h.GetBlock()
	if b == nil {
		return errs.New(errs.Invalid, op, "", "header has no block")
	}
	name := blockName(b.Id)
	if b.Length > d.cfg.MaxBlockSize {
		return errs.Newf(errs.Invalid, op, name, "declared length %d exceeds the maximum block size %d", b.Length, d.cfg.MaxBlockSize)
	}
	caller, _ := security.IdentityFromContext(ctx)
	if err := d.tokens.checkWrite(ctx, caller, h); err != nil {
		return err
	}

	dctx, dcancel := context.WithCancel(ctx)
	defer dcancel()
	var ds *downstream
	if len(h.Pipeline) > 0 {
		ds = d.openDownstream(dctx, h)
	}
	buf := make([]byte, 0, min(b.Length, 64<<20))
	for {
		m, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if m.GetHeader() != nil {
			return errs.New(errs.Invalid, op, name, "header sent twice")
		}
		chunk := m.GetChunk()
		if uint64(len(buf))+uint64(len(chunk)) > b.Length {
			return errs.Newf(errs.Invalid, op, name, "chunk past the declared length %d (at %d bytes)", b.Length, uint64(len(buf))+uint64(len(chunk)))
		}
		buf = append(buf, chunk...)
		ds.send(chunk)
	}
	if uint64(len(buf)) != b.Length {
		return errs.Newf(errs.Invalid, op, name, "short write: got %d of %d declared bytes", len(buf), b.Length)
	}
	crc := crc32c(buf)

	// The local copy and the downstream acknowledgement in parallel.
	var wg sync.WaitGroup
	var dsResp *api.WriteBlockResponse
	var dsErr error
	var bad string
	if ds != nil {
		wg.Go(func() { dsResp, bad, dsErr = ds.finish() })
	}
	meta := lbm.BlockMeta{ID: b.Id, Inode: h.InodeId, GenStamp: b.GenStamp}
	fresh, perr := d.putLocal(ctx, meta, buf, crc)
	wg.Wait()
	if dsErr != nil {
		if fresh {
			// Nothing of a failed write stays visible: the client abandons
			// the block, so drop the copy rather than report it.
			if err := d.store.Delete(context.Background(), b.Id); err != nil {
				d.log.Warn("dropping the local copy of a failed pipeline write", "block", b.Id, "err", err)
			}
		}
		stream.SetTrailer(metadata.Pairs(BadNodeKey, bad))
		return &errs.Error{Kind: errs.Unavailable, Op: op, Path: name, Msg: "downstream datanode " + bad + " failed", Err: dsErr}
	}
	if perr != nil {
		switch errs.KindOf(perr) {
		case errs.Exist, errs.Invalid, errs.Canceled:
		default:
			stream.SetTrailer(metadata.Pairs(BadNodeKey, d.id))
		}
		return perr
	}
	if info, ok := d.store.Stat(b.Id); ok {
		d.reportReceived(info)
	}
	d.met.writeBytes.Add(float64(len(buf)))
	d.met.writeSeconds.Observe(time.Since(start).Seconds())
	stored := []string{d.id}
	if dsResp != nil {
		stored = append(stored, dsResp.StoredOn...)
	}
	return stream.SendAndClose(&api.WriteBlockResponse{Length: b.Length, Crc32C: crc, StoredOn: stored})
}

// putLocal stores a block; fresh reports whether this call stored it. A
// block already stored with the same generation stamp and bytes is fine.
func (d *Datanode) putLocal(ctx context.Context, m lbm.BlockMeta, data []byte, crc uint32) (fresh bool, err error) {
	err = d.store.Put(ctx, m, data)
	if err == nil {
		return true, nil
	}
	if !errs.Is(err, errs.Exist) {
		return false, err
	}
	if info, ok := d.store.Stat(m.ID); ok && info.GenStamp == m.GenStamp && info.Length == int64(len(data)) && info.CRC == crc {
		return false, nil
	}
	return false, errs.Newf(errs.Exist, "write block", blockName(m.ID), "a different replica (generation or content) is already stored or being written")
}

// downstream is the stream to the next datanode of a pipeline.
type downstream struct {
	node   *api.DatanodeInfo
	stream grpc.ClientStreamingClient[api.WriteBlockRequest, api.WriteBlockResponse]
	err    error // opening failed
	broken bool  // a Send failed; finish returns the real error
}

func (d *Datanode) openDownstream(ctx context.Context, h *api.WriteBlockHeader) *downstream {
	ds := &downstream{node: h.Pipeline[0]}
	conn, err := d.conn(ds.node.Addr)
	if err != nil {
		ds.err = err
		return ds
	}
	ds.stream, err = api.NewDataServiceClient(conn).WriteBlock(ctx)
	if err != nil {
		ds.err = errs.FromStatus(err, nil)
		return ds
	}
	fwd := &api.WriteBlockHeader{Block: h.Block, InodeId: h.InodeId, Token: h.Token, Pipeline: h.Pipeline[1:], Replication: h.Replication}
	ds.send0(&api.WriteBlockRequest{Msg: &api.WriteBlockRequest_Header{Header: fwd}})
	return ds
}

func (ds *downstream) send(chunk []byte) {
	if ds == nil {
		return
	}
	ds.send0(&api.WriteBlockRequest{Msg: &api.WriteBlockRequest_Chunk{Chunk: chunk}})
}

func (ds *downstream) send0(m *api.WriteBlockRequest) {
	if ds.err != nil || ds.broken {
		return
	}
	if err := ds.stream.Send(m); err != nil {
		ds.broken = true
	}
}

// finish closes the stream and waits for the downstream acknowledgement.
// bad names the first datanode that failed.
func (ds *downstream) finish() (resp *api.WriteBlockResponse, bad string, err error) {
	if ds.err != nil {
		return nil, ds.node.Id, ds.err
	}
	resp, err = ds.stream.CloseAndRecv()
	if err != nil {
		tr := ds.stream.Trailer()
		bad = ds.node.Id
		if v := tr.Get(BadNodeKey); len(v) > 0 && v[0] != "" {
			bad = v[0]
		}
		return nil, bad, errs.FromStatus(err, tr)
	}
	return resp, "", nil
}

// readBlock streams a range of a local replica.
func (d *Datanode) readBlock(req *api.ReadBlockRequest, stream grpc.ServerStreamingServer[api.ReadBlockResponse]) error {
	const op = "read block"
	start := time.Now()
	ctx := stream.Context()
	b := req.GetBlock()
	if b == nil {
		return errs.New(errs.Invalid, op, "", "block is required")
	}
	name := blockName(b.Id)
	if err := d.tokens.checkRead(ctx, req.Token, d.ownerInode(b, req.InodeId), b); err != nil {
		return err
	}
	info, err := d.statReplica(op, b)
	if err != nil {
		return err
	}
	blen := uint64(info.Length)
	off, n := req.Offset, req.Length
	if off > blen {
		return errs.Newf(errs.Invalid, op, name, "read past the end: offset %d beyond block length %d", off, blen)
	}
	if n == 0 {
		n = blen - off
	}
	if n > blen-off {
		return errs.Newf(errs.Invalid, op, name, "read past the end: offset %d + length %d beyond block length %d", off, n, blen)
	}
	data, err := d.store.Read(ctx, b.Id, int64(off), int64(n))
	if err != nil {
		if errs.Is(err, errs.Corrupt) {
			d.reportCorrupt(info)
		}
		return err
	}
	for len(data) > 0 {
		k := min(len(data), d.cfg.ChunkSize)
		if err := stream.Send(&api.ReadBlockResponse{Chunk: data[:k]}); err != nil {
			return err
		}
		data = data[k:]
	}
	d.met.readBytes.Add(float64(n))
	d.met.readSeconds.Observe(time.Since(start).Seconds())
	return nil
}

// statReplica finds the local replica of b, checking its generation stamp.
// ownerInode is the inode a token for b must cover: the one recorded when
// the block was written, never what the caller claims. For a block not
// held here it is the claim, so a caller without a valid token learns
// nothing about which blocks exist.
func (d *Datanode) ownerInode(b *api.Block, claimed uint64) uint64 {
	if info, ok := d.store.Stat(b.GetId()); ok {
		return info.Inode
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

// transfer copies the local replica of b to targets: the first target
// gets a replication WriteBlock whose pipeline is the rest.
func (d *Datanode) transfer(ctx context.Context, b *api.Block, inode uint64, token []byte, targets []*api.DatanodeInfo) ([]string, error) {
	const op = "transfer block"
	name := blockName(b.GetId())
	if len(targets) == 0 {
		return nil, errs.New(errs.Invalid, op, name, "no targets")
	}
	info, err := d.statReplica(op, b)
	if err != nil {
		return nil, err
	}
	data, err := d.store.Read(ctx, info.ID, 0, info.Length)
	if err != nil {
		if errs.Is(err, errs.Corrupt) {
			d.reportCorrupt(info)
		}
		return nil, err
	}
	if info.Inode != 0 {
		inode = info.Inode
	}
	conn, err := d.conn(targets[0].Addr)
	if err != nil {
		return nil, err
	}
	stream, err := api.NewDataServiceClient(conn).WriteBlock(ctx)
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, op, name, errs.FromStatus(err, nil))
	}
	hdr := &api.WriteBlockHeader{
		Block:   &api.Block{Id: info.ID, GenStamp: info.GenStamp, Length: uint64(info.Length)},
		InodeId: inode, Token: token, Pipeline: targets[1:], Replication: true,
	}
	if err := stream.Send(&api.WriteBlockRequest{Msg: &api.WriteBlockRequest_Header{Header: hdr}}); err == nil {
		for off := 0; off < len(data); off += d.cfg.ChunkSize {
			end := min(off+d.cfg.ChunkSize, len(data))
			if stream.Send(&api.WriteBlockRequest{Msg: &api.WriteBlockRequest_Chunk{Chunk: data[off:end]}}) != nil {
				break // the real error comes from CloseAndRecv
			}
		}
	}
	resp, err := stream.CloseAndRecv()
	if err != nil {
		tr := stream.Trailer()
		bad := targets[0].Id
		if v := tr.Get(BadNodeKey); len(v) > 0 && v[0] != "" {
			bad = v[0]
		}
		return nil, &errs.Error{Kind: errs.Unavailable, Op: op, Path: name, Msg: "target datanode " + bad + " failed", Err: errs.FromStatus(err, tr)}
	}
	if resp.Length != uint64(info.Length) || resp.Crc32C != info.CRC {
		return nil, errs.Newf(errs.Corrupt, op, name, "target acknowledged different bytes than were sent")
	}
	return resp.StoredOn, nil
}
