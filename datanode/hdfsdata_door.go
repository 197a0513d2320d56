package datanode

import (
	"context"
	"net"
	"strconv"
	"sync"

	"google.golang.org/grpc/metadata"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/datatransfer"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/node/serve"
	"github.com/blockfs/blockfs/security"
)

// The HDFS DataTransferProtocol door (package datatransfer) on
// --hdfs-data-addr: its reads are this datanode's ReadBlock and its writes
// this datanode's WriteBlock, each run on an in-process stream in place of
// a gRPC one, so that the same checks, token verification, store and
// pipeline serve both doors. The door speaks plain TCP (HDFS clients
// cannot present certificates); a block token is its only credential.

// startHDFSData starts the door if --hdfs-data-addr is set.
func (d *Datanode) startHDFSData() error {
	const op = "datanode.Start"
	addr := d.cfg.HDFSDataAddr
	if addr == "" {
		return nil
	}
	if !serve.Loopback(addr) {
		if !d.cfg.HDFSDataInsecure {
			return errs.Newf(errs.Invalid, op, addr,
				"refusing the HDFS data transfer door on a non-loopback address: it is plain TCP (HDFS clients show no certificate), "+
					"a block token its only credential, and anyone on the path can read the data and the tokens; bind loopback or pass --hdfs-data-insecure")
		}
		d.log.Warn("INSECURE HDFS DATA DOOR: plain TCP on a non-loopback address; block tokens and data cross the network unencrypted (--hdfs-data-insecure)", "addr", addr)
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return errs.Wrap(errs.Unavailable, op, addr, err)
	}
	p := hdfsPaths{d: d}
	door, err := datatransfer.New(datatransfer.Config{
		Reader: p, Writer: p, DatanodeID: d.id, PoolID: "BP-" + d.cfg.TrustDomain,
		MaxPacketBytes: d.cfg.MaxPacketBytes, IdleTimeout: d.cfg.StreamIdleTimeout, Log: d.log, Registerer: d.reg,
	})
	if err != nil {
		lis.Close()
		return err
	}
	d.hdfsLis, d.hdfsDoor = lis, door
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		if err := door.Serve(lis); err != nil {
			d.log.Error("HDFS data transfer door stopped", "err", err)
		}
	}()
	return nil
}

// HDFSDataAddr returns the HDFS data transfer door's bound address, or "".
func (d *Datanode) HDFSDataAddr() string {
	if d.hdfsLis == nil {
		return ""
	}
	return d.hdfsLis.Addr().String()
}

// hdfsPaths are the datanode's read and write paths as the door takes
// them. An HDFS op names a block but not its inode: the inode a request
// claims is the token's (security.Unverified), and the token is then
// verified against it as for gRPC; a read checks the inode recorded with
// the replica, never the claim.
type hdfsPaths struct{ d *Datanode }

// hdfsContext carries the identity the paths account a request to: the
// token's user (read buffers are per user), unverified until the token is.
func hdfsContext(ctx context.Context, token []byte) (context.Context, uint64) {
	user, inode, _ := security.Unverified(token)
	if user == "" {
		user = "anonymous"
	}
	return security.WithIdentity(ctx, security.Identity{Role: security.RoleUser, Name: "hdfs:" + user}), inode
}

func (p hdfsPaths) ReadBlock(ctx context.Context, r datatransfer.ReadRequest, send func(datatransfer.Chunks) error) error {
	ctx, inode := hdfsContext(ctx, r.Token)
	req := &api.ReadBlockRequest{Block: &api.Block{Id: r.Block.ID, GenStamp: r.Block.GenStamp}, InodeId: inode,
		Offset: r.Offset, Length: r.Length, Token: r.Token}
	return p.d.readBlock(req, &localReadStream{localStream: localStream{ctx: ctx}, send: send})
}

func (p hdfsPaths) WriteBlock(ctx context.Context, w datatransfer.WriteRequest) (datatransfer.BlockStream, error) {
	ctx, inode := hdfsContext(ctx, w.Token)
	h := &api.WriteBlockHeader{Block: &api.Block{Id: w.Block.ID, GenStamp: w.Block.GenStamp}, InodeId: inode, Token: w.Token,
		BytesPerChecksum: uint32(w.BytesPerChecksum), OpenEnded: true, ResumeOffset: w.ResumeOffset, PreviousGenStamp: w.PreviousGenStamp}
	for _, t := range w.Targets {
		h.Pipeline = append(h.Pipeline, &api.DatanodeInfo{Id: t.ID, Addr: t.Addr})
	}
	s := &localWriteStream{header: h, in: make(chan *api.WriteBlockRequest), acks: make(chan *api.WriteBlockAck, ackQueue),
		opened: make(chan struct{}), done: make(chan struct{})}
	s.ctx, s.cancel = context.WithCancel(ctx)
	p.d.wg.Add(1)
	go func() {
		defer p.d.wg.Done()
		err := p.d.writeBlock(s)
		s.mu.Lock()
		s.err = err
		s.mu.Unlock()
		close(s.done)
		s.cancel()
	}()
	select {
	case <-s.opened:
		return hdfsWrite{s}, nil
	case <-s.done:
		return nil, s.failure()
	}
}

// localStream is the part of grpc.ServerStream an in-process stream has.
type localStream struct {
	ctx context.Context

	mu      sync.Mutex
	trailer metadata.MD
}

func (s *localStream) Context() context.Context     { return s.ctx }
func (s *localStream) SetHeader(metadata.MD) error  { return nil }
func (s *localStream) SendHeader(metadata.MD) error { return nil }
func (s *localStream) SendMsg(any) error {
	return errs.New(errs.Internal, "datanode.localStream", "", "SendMsg")
}
func (s *localStream) RecvMsg(any) error {
	return errs.New(errs.Internal, "datanode.localStream", "", "RecvMsg")
}
func (s *localStream) SetTrailer(md metadata.MD) {
	s.mu.Lock()
	s.trailer = metadata.Join(s.trailer, md)
	s.mu.Unlock()
}
func (s *localStream) trailerValue(key string) string { return first(s.trailer.Get(key)) }

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// localReadStream hands ReadBlock's messages to the door as they are sent.
type localReadStream struct {
	localStream
	send func(datatransfer.Chunks) error
}

func (s *localReadStream) Send(m *api.ReadBlockResponse) error {
	return s.send(datatransfer.Chunks{Offset: int64(m.Offset), BytesPerChecksum: int(m.BytesPerChecksum), Data: m.Data, CRCs: m.Crcs})
}

// localWriteStream is a WriteBlock call fed by the door: the header, then
// the door's packets (numbered 0, 1, ... as the write path wants them); the
// write path's acks go back to the door in order.
type localWriteStream struct {
	localStream
	cancel     context.CancelFunc
	header     *api.WriteBlockHeader
	headerSent bool // the write path's goroutines call Recv one at a time
	in         chan *api.WriteBlockRequest
	acks       chan *api.WriteBlockAck
	seq        uint64 // the door's goroutine only
	openOnce   sync.Once
	opened     chan struct{} // closed when the write is set up
	done       chan struct{} // closed when the call is over; err is then set
	err        error
}

// survivesDownstream: an HDFS client may not rebuild a pipeline, so the
// write goes on without a failed downstream (write_survive.go).
func (s *localWriteStream) survivesDownstream() bool { return true }

// writeOpened is called by the write path once the header is checked, the
// replica opened and the downstream stream open (writeStream.run).
func (s *localWriteStream) writeOpened() { s.openOnce.Do(func() { close(s.opened) }) }

func (s *localWriteStream) Recv() (*api.WriteBlockRequest, error) {
	if !s.headerSent {
		s.headerSent = true
		return &api.WriteBlockRequest{Msg: &api.WriteBlockRequest_Header{Header: s.header}}, nil
	}
	select {
	case m := <-s.in:
		return m, nil
	case <-s.ctx.Done():
		return nil, errs.Wrap(errs.Canceled, "WriteBlock", blockName(s.header.Block.Id), context.Cause(s.ctx))
	}
}

func (s *localWriteStream) Send(a *api.WriteBlockAck) error {
	select {
	case s.acks <- a:
		return nil
	case <-s.ctx.Done():
		return errs.Wrap(errs.Canceled, "WriteBlock", blockName(s.header.Block.Id), context.Cause(s.ctx))
	}
}

// SendPacket is the door's Send (datatransfer.BlockStream).
func (s *localWriteStream) sendPacket(p datatransfer.Packet) error {
	m := &api.WriteBlockRequest{Msg: &api.WriteBlockRequest_Packet{Packet: &api.WritePacket{
		Seqno: s.seq, Offset: uint64(p.Offset), Data: p.Data, Crcs: p.CRCs, Last: p.Last, Hsync: p.Sync}}}
	s.seq++
	select {
	case s.in <- m:
		return nil
	case <-s.done:
		return s.failure()
	}
}

// ack is the door's Ack: the next ack, or once the call is over and its
// acks are taken, why it ended.
func (s *localWriteStream) ack() (bool, error) {
	select {
	case a := <-s.acks:
		return a.Last, nil
	case <-s.done:
		select {
		case a := <-s.acks:
			return a.Last, nil
		default:
			return false, s.failure()
		}
	}
}

// failure is why the call ended, with the member its trailer blames.
func (s *localWriteStream) failure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.err
	if err == nil {
		return errs.New(errs.Internal, "WriteBlock", blockName(s.header.Block.Id), "the write ended before its last ack")
	}
	bad := s.trailerValue(BadNodeKey)
	if bad == "" {
		return err
	}
	off := int64(-1)
	if n, perr := strconv.ParseInt(s.trailerValue(BadOffsetKey), 10, 64); perr == nil {
		off = n
	}
	return &datatransfer.PipelineError{Node: bad, Offset: off, Err: err}
}

// hdfsWrite is the door's view of a localWriteStream.
type hdfsWrite struct{ s *localWriteStream }

func (w hdfsWrite) Send(p datatransfer.Packet) error { return w.s.sendPacket(p) }
func (w hdfsWrite) Ack() (bool, error)               { return w.s.ack() }
func (w hdfsWrite) Close()                           { w.s.cancel(); <-w.s.done }
