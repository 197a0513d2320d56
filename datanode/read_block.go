package datanode

import (
	"context"
	"time"

	"google.golang.org/grpc"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/lbm"
)

// readBlock streams a range of a local replica as chunk-aligned messages
// with their stored CRC32Cs, reading only the chunks the range touches.
// A reader that stops reading holds one message here (flow control) until
// the idle timeout ends the call.
func (d *Datanode) readBlock(req *api.ReadBlockRequest, stream grpc.ServerStreamingServer[api.ReadBlockResponse]) error {
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	var sendW peerWait
	return d.watch(cancel, "ReadBlock", blockName(req.GetBlock().GetId()), d.cfg.StreamIdleTimeout, []*peerWait{&sendW},
		func() error { return d.serveRead(ctx, req, stream, &sendW) })
}

func (d *Datanode) serveRead(ctx context.Context, req *api.ReadBlockRequest, stream grpc.ServerStreamingServer[api.ReadBlockResponse], sendW *peerWait) error {
	const op = "ReadBlock"
	start := time.Now()
	b := req.GetBlock()
	if b == nil {
		return errs.New(errs.Invalid, op, "", "block is required")
	}
	name := blockName(b.Id)
	if err := d.tokens.checkRead(ctx, req.Token, d.ownerInode(b, req.InodeId), b); err != nil {
		return err
	}
	info, err := d.statReplica(op, b)
	read := d.readChunks
	if err != nil {
		// A replica being written serves the bytes written so far (the
		// reader asks only for what an hflush made visible).
		r := d.rbws.get(b.Id)
		if r == nil || r.bw.Meta().GenStamp != b.GenStamp {
			return err
		}
		m := r.bw.Meta()
		info = lbm.BlockInfo{ID: m.ID, Inode: m.Inode, GenStamp: m.GenStamp, Length: m.Length, BytesPerChecksum: r.bpc}
		read = func(_ context.Context, _ uint64, off, n int64, buf []byte) (lbm.ChunkRange, error) {
			return r.bw.ReadChunks(off, n, buf)
		}
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
	bpc := int64(d.replicaBytesPerChecksum(info))
	// Each message is about ChunkSize bytes of whole chunks.
	span := max(int64(d.cfg.ChunkSize)/bpc, 1) * bpc
	var buf []byte
	for pos, end := int64(off), int64(off+n); pos < end; {
		next := min(end, pos/bpc*bpc+span)
		cr, err := read(ctx, b.Id, pos, next-pos, buf)
		if err != nil {
			if errs.Is(err, errs.Corrupt) {
				d.reportCorrupt(info)
			}
			return err
		}
		if ctx.Err() != nil {
			return errs.Wrap(errs.Canceled, op, name, context.Cause(ctx))
		}
		sendW.begin()
		err = stream.Send(&api.ReadBlockResponse{Offset: uint64(cr.Offset), Data: cr.Data, Crcs: cr.CRCs, BytesPerChecksum: uint32(cr.BytesPerChecksum)})
		sendW.end()
		if err != nil {
			return err
		}
		// The message is encoded when Send returns: its buffer is free.
		buf = cr.Data[:0]
		pos = cr.Offset + int64(len(cr.Data))
	}
	d.met.readBytes.Add(float64(n))
	d.met.readSeconds.Observe(time.Since(start).Seconds())
	return nil
}
