package client

import (
	"context"
	"io"

	"google.golang.org/grpc"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/base/chunks"
)

// replicaStream reads the range [pos, end) of one replica: a ReadBlock
// stream of chunk-aligned messages, each chunk checked against its CRC32C
// here (so a byte damaged anywhere between the disk and this process is
// caught) and trimmed to the range.
type replicaStream struct {
	stream  grpc.ServerStreamingClient[api.ReadBlockResponse]
	cancel  context.CancelFunc
	node    *api.DatanodeInfo
	block   *api.Block
	pos     int64  // block offset of pending[0]
	end     int64  // end of the range
	pending []byte // verified bytes at pos not yet handed out
}

// openReplica starts reading n bytes at from of replica d of b.
func (c *Client) openReplica(ctx context.Context, d *api.DatanodeInfo, b *api.Block, inode uint64, token []byte, from, n int64) (*replicaStream, error) {
	conn, err := c.conn("ReadBlock", d.Addr)
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	stream, err := api.NewDataServiceClient(conn).ReadBlock(sctx, &api.ReadBlockRequest{
		Block: b, InodeId: inode, Offset: uint64(from), Length: uint64(n), Token: token,
	})
	if err != nil {
		cancel()
		return nil, errs.FromStatus(err, nil)
	}
	return &replicaStream{stream: stream, cancel: cancel, node: d, block: b, pos: from, end: from + n}, nil
}

// read copies the next bytes of the range into p; io.EOF once all of it
// was read.
func (s *replicaStream) read(p []byte) (int, error) {
	if s.pos >= s.end && len(s.pending) == 0 {
		return 0, io.EOF
	}
	if len(s.pending) == 0 {
		if err := s.fill(); err != nil {
			return 0, err
		}
	}
	n := copy(p, s.pending)
	s.pending = s.pending[n:]
	return n, nil
}

// fill receives and checks the next message.
func (s *replicaStream) fill() error {
	const op = "ReadBlock"
	name := blockName(s.block.Id)
	m, err := s.stream.Recv()
	if err == io.EOF {
		return errs.Newf(errs.Unavailable, op, name, "datanode %s ended the stream at offset %d of %d", s.node.Id, s.pos, s.end)
	}
	if err != nil {
		return errs.FromStatus(err, s.stream.Trailer())
	}
	bpc, off := int(m.BytesPerChecksum), int64(m.Offset)
	if !chunks.Valid(bpc) || off%int64(bpc) != 0 || off > s.pos || off+int64(len(m.Data)) <= s.pos {
		return errs.Newf(errs.Corrupt, op, name, "datanode %s sent chunks at offset %d (%d bytes, %d per checksum), expected offset %d", s.node.Id, off, len(m.Data), bpc, s.pos)
	}
	if i := chunks.Verify(m.Data, m.Crcs, bpc); i >= 0 {
		return errs.Newf(errs.Corrupt, op, name, "chunk at offset %d from datanode %s: checksum mismatch", off+int64(i*bpc), s.node.Id)
	}
	hi := min(off+int64(len(m.Data)), s.end)
	s.pending = m.Data[s.pos-off : hi-off]
	s.pos = hi
	return nil
}

func (s *replicaStream) close() { s.cancel() }

func (c *Client) readReplica(ctx context.Context, d *api.DatanodeInfo, b *api.Block, inode uint64, token []byte, from uint64, dst []byte) (int, error) {
	s, err := c.openReplica(ctx, d, b, inode, token, int64(from), int64(len(dst)))
	if err != nil {
		return 0, err
	}
	defer s.close()
	n := 0
	for n < len(dst) {
		k, err := s.read(dst[n:])
		if err != nil {
			return 0, err
		}
		n += k
	}
	return n, nil
}
