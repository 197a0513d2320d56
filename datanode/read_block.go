package datanode

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/base/caps"
	"github.com/blockfs/blockfs/lbm"
	"github.com/blockfs/blockfs/security"
)

// readBlock streams a range of a local replica as chunk-aligned messages
// with their stored CRC32Cs, reading only the chunks the range touches.
// A stream first reserves the buffer bytes it may hold (readReservation)
// of its user's and the datanode's read buffers, or is refused. A reader
// that stops reading holds them (flow control holds its Send) until
// ReadIdleTimeout ends the call with DeadlineExceeded.
func (d *Datanode) readBlock(req *api.ReadBlockRequest, stream grpc.ServerStreamingServer[api.ReadBlockResponse]) error {
	const op = "ReadBlock"
	name := blockName(req.GetBlock().GetId())
	id, _ := security.IdentityFromContext(stream.Context())
	user, need := id.String(), readReservation(d.cfg.ChunkSize)
	if n := req.GetLength(); n > 0 && n < uint64(d.cfg.ChunkSize) {
		need = readReservation(int(n) + 64<<10) // a short range: up to a chunk more on either side
	}
	if limit := d.readBufs.AcquireN(user, need); limit != "" {
		reason, flag, max := "per_user", "--read-buffer-bytes-per-user", d.cfg.ReadBufferBytesPerUser
		if limit == caps.Total {
			reason, flag, max = "total", "--read-buffer-bytes-total", d.cfg.ReadBufferBytesTotal
		}
		d.met.readRefused.WithLabelValues(reason).Inc()
		return errs.Newf(errs.Exhausted, op, name, "read buffers full (%s %d): %s's stream needs %d bytes; read another replica or retry later", flag, max, user, need)
	}
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	var sendW peerWait
	if n := req.GetLength(); n > 0 && n <= uint64(d.cfg.ChunkSize) {
		// A range that may fit one message is served here, unwatched, if
		// it does: a stream's first Send never waits for its reader
		// (gRPC's write quota admits it whole), so no reader can stall
		// it. One that needs more messages is served watched, below.
		err := d.serveRead(ctx, req, stream, nil)
		if err != errNeedsWatch {
			d.readBufs.ReleaseN(user, need)
			return err
		}
	}
	err := d.watch(cancel, op, name, d.cfg.ReadIdleTimeout, []*peerWait{&sendW},
		func() error {
			defer d.readBufs.ReleaseN(user, need) // when the reading goroutine is done with its buffers
			return d.serveRead(ctx, req, stream, &sendW)
		})
	if errs.Is(err, errs.Timeout) {
		d.met.readRefused.WithLabelValues("idle").Inc()
	}
	return err
}

// readReservation is what a ReadBlock stream of messages of chunk data
// bytes holds at most while its reader takes nothing (measured by
// TestReadBuffersBounded): the chunk the handler read, and two encoded
// messages, each in a buffer of gRPC's pool (the one the transport keeps
// queued until the reader's window takes it, and the next, encoded by the
// Send that waits for it). gRPC's pool rounds a buffer up to its next
// size (256 B, 4 KiB, 16 KiB, 32 KiB, 1 MiB; larger ones exact), so a
// 256 KiB message holds 1 MiB: a stalled stream of the default chunk size
// holds about 2.3 MiB.
func readReservation(chunk int) int {
	msg := chunk + chunk/128 + 64 // data, CRCs (4 B per chunk of >= 512 B), framing
	buf := msg
	for _, tier := range []int{256, 4 << 10, 16 << 10, 32 << 10, 1 << 20} {
		if msg <= tier {
			buf = tier
			break
		}
	}
	return chunk + 2*buf
}

// errNeedsWatch is serveRead's answer, before it has sent anything, when
// called unwatched (sendW nil) for a range that takes more than one
// message.
var errNeedsWatch = errors.New("datanode: read needs more than one message")

// serveRead checks the token and streams the range. With sendW nil it is
// unwatched: it serves only a range that fits one message, else returns
// errNeedsWatch having sent nothing.
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
	if sendW == nil && int64(off+n) > int64(off)/bpc*bpc+span {
		return errNeedsWatch
	}
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
		if sendW != nil {
			sendW.begin()
		}
		err = stream.Send(&api.ReadBlockResponse{Offset: uint64(cr.Offset), Data: cr.Data, Crcs: cr.CRCs, BytesPerChecksum: uint32(cr.BytesPerChecksum)})
		if sendW != nil {
			sendW.end()
		}
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
