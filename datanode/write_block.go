package datanode

import (
	"context"
	"io"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/base/chunks"
	"github.com/blockfs/blockfs/lbm"
	"github.com/blockfs/blockfs/security"
)

// writeStream is one WriteBlock call: a receive loop that checks each
// packet, forwards it downstream, verifies and stores it, and queues its
// ack; and a responder that waits for the downstream ack of each queued
// packet and then acknowledges it upstream. The bytes of a packet are held
// (and counted in the datanode's in-flight cap) from its receipt to its
// ack; no stream buffers more of a block than that.
type writeStream struct {
	d      *Datanode
	up     grpc.BidiStreamingServer[api.WriteBlockRequest, api.WriteBlockAck]
	ctx    context.Context
	cancel context.CancelFunc
	start  time.Time

	h      *api.WriteBlockHeader
	name   string
	length int64
	bpc    int
	bw     blockWriter
	fresh  bool // bw stores a new replica (not a check of one already here)
	r      *rbw // an open-ended write's replica being written (rbw.go)
	ds     *downstream
	dsLost bool // the downstream failed and the write goes on without it (the responder's only)
	acks   chan pendingAck

	// Peer waits the idle watchdog looks at.
	recvW, sendW, fwdW, dsAckW peerWait

	// Written by the receive loop only, read by the responder after the
	// last packet's ack is queued (the channel orders them).
	crc       uint32
	info      lbm.BlockInfo
	committed bool

	// recvMu is held by the receive loop while it handles a packet (not
	// while it waits for one); quit, under it, tells the loop that the
	// call is over and it must touch nothing more.
	recvMu sync.Mutex
	quit   bool

	mu     sync.Mutex
	err    error  // the first failure
	bad    string // the pipeline member it blames ("" for none)
	badOff int64  // the block offset it concerns, or -1
}

// pendingAck is a packet stored here and waiting for its downstream ack.
type pendingAck struct {
	seqno uint64
	held  int64 // bytes counted in the in-flight cap
	last  bool
}

// ackQueue bounds the packets a stream queues for the responder; the
// in-flight cap usually binds first.
const ackQueue = 256

func (d *Datanode) writeBlock(up grpc.BidiStreamingServer[api.WriteBlockRequest, api.WriteBlockAck]) error {
	ctx, cancel := context.WithCancel(up.Context())
	defer cancel()
	w := &writeStream{d: d, up: up, ctx: ctx, cancel: cancel, start: time.Now(), acks: make(chan pendingAck, ackQueue), badOff: -1}
	return d.watch(cancel, "WriteBlock", "", d.cfg.StreamIdleTimeout,
		[]*peerWait{&w.recvW, &w.sendW, &w.fwdW, &w.dsAckW}, w.run)
}

// run is the whole call: header, then the receive loop and the responder.
func (w *writeStream) run() error {
	if err := w.open(); err != nil {
		return w.finish(err)
	}
	if o, ok := w.up.(interface{ writeOpened() }); ok {
		o.writeOpened() // an in-process stream's caller waits for this (hdfsdata_door.go)
	}
	recvDone := make(chan struct{})
	go func() {
		defer close(recvDone)
		if err := w.receive(); err != nil {
			w.fail(err, w.d.id, -1)
		}
	}()
	if err := w.respond(); err != nil {
		w.fail(err, "", -1)
	}
	// The responder ended: after the last ack, or on a failure. The
	// receive loop may be blocked reading the next packet from upstream,
	// which only the end of this call interrupts: it is told to touch
	// nothing more, and the call ends now, so that the upstream hears of
	// the failure at once (not after the idle timeout).
	select {
	case <-recvDone:
	default:
		w.recvMu.Lock()
		w.quit = true
		w.recvMu.Unlock()
	}
	for {
		select {
		case pa := <-w.acks:
			w.d.inflightBytes.release(pa.held)
			continue
		default:
		}
		break
	}
	w.mu.Lock()
	err := w.err
	w.mu.Unlock()
	return w.finish(err)
}

// open reads and checks the header, starts the local replica and opens
// the stream to the next datanode.
func (w *writeStream) open() error {
	const op = "WriteBlock"
	d := w.d
	w.recvW.begin()
	first, err := w.up.Recv()
	w.recvW.end()
	if err == io.EOF || (err == nil && first.GetHeader() == nil) {
		return errs.New(errs.Invalid, op, "", "first message must be the header")
	}
	if err != nil {
		return errs.FromStatus(err, nil)
	}
	h := first.GetHeader()
	b := h.GetBlock()
	if b == nil {
		return errs.New(errs.Invalid, op, "", "header has no block")
	}
	w.h, w.name, w.length = h, blockName(b.Id), int64(b.Length)
	if h.OpenEnded {
		w.length = int64(d.cfg.MaxBlockSize) // a bound until the last packet
	}
	if b.Length > d.cfg.MaxBlockSize {
		return errs.Newf(errs.Invalid, op, w.name, "declared length %d exceeds the maximum block size %d", b.Length, d.cfg.MaxBlockSize)
	}
	w.bpc = int(h.BytesPerChecksum)
	if w.bpc == 0 {
		w.bpc = lbm.DefaultBytesPerChecksum
	}
	if !chunks.Valid(w.bpc) || w.bpc > d.cfg.MaxPacketBytes {
		return errs.Newf(errs.Invalid, op, w.name, "bytes per checksum %d: want a power of two in [%d, %d], at most the packet size %d", h.BytesPerChecksum, chunks.Min, chunks.Max, d.cfg.MaxPacketBytes)
	}
	caller, _ := security.IdentityFromContext(w.ctx)
	if err := d.tokens.checkWrite(w.ctx, caller, h); err != nil {
		return err
	}
	if h.OpenEnded {
		if err := w.openRBW(); err != nil {
			if blames(err) {
				w.setBad(d.id, -1)
			}
			return err
		}
	} else if err := w.openReplica(); err != nil {
		return err
	}
	if len(h.Pipeline) > 0 {
		if w.ds, err = d.openDownstream(w.ctx, h, w.bpc); err != nil {
			w.setBad(h.Pipeline[0].Id, -1)
			return err
		}
	}
	return nil
}

// staleHere reports whether this datanode holds the header's block under
// an older generation stamp.
func (w *writeStream) staleHere() bool {
	info, ok := w.d.store.Stat(w.h.Block.Id)
	return ok && info.GenStamp < w.h.Block.GenStamp
}

// openReplica starts the local replica of a write of known length.
func (w *writeStream) openReplica() error {
	const op = "WriteBlock"
	d, h, b := w.d, w.h, w.h.Block
	meta := lbm.BlockMeta{ID: b.Id, Inode: h.InodeId, GenStamp: b.GenStamp, Length: w.length}
	var err error
	w.bw, err = d.createBlock(w.ctx, meta, w.bpc)
	switch {
	case err == nil:
		w.fresh = true
	case errs.Is(err, errs.Exist) && h.Replication && w.dropLeftover():
		// A re-replication replaces what a pipeline that went on without
		// this datanode left here (write_survive.go).
		if w.bw, err = d.createBlock(w.ctx, meta, w.bpc); err != nil {
			w.setBad(d.id, -1)
			return err
		}
		w.fresh = true
	case errs.Is(err, errs.Exist) && h.Replication && w.staleHere():
		// A re-replication replaces a replica of an older generation here
		// (left by a rebuilt pipeline or a recovery).
		w.bw, err = d.store.CreateWith(w.ctx, meta, lbm.CreateOptions{BytesPerChecksum: w.bpc, Replace: true})
		if err != nil {
			w.setBad(d.id, -1)
			return err
		}
		w.fresh = true
	case errs.Is(err, errs.Exist):
		// A retried write or a repeated replication: take the stream only
		// to check that it is the replica already here.
		info, ok := d.store.Stat(b.Id)
		if !ok || info.GenStamp != b.GenStamp || info.Length != w.length {
			return errs.Newf(errs.Exist, op, w.name, "a different replica (generation or length) is already stored or being written")
		}
		w.bw = &existingReplica{info: info, name: w.name, bpc: w.bpc}
	default:
		w.setBad(d.id, -1)
		return err
	}
	return nil
}

// receive takes packets until the last one.
func (w *writeStream) receive() error {
	d := w.d
	hold := int64(d.cfg.MaxPacketBytes) + packetOverhead(d.cfg.MaxPacketBytes, w.bpc)
	var seq uint64
	var off int64
	for {
		// Room for a whole packet before taking one: past the cap the
		// stream stops receiving and flow control holds the sender.
		if err := d.inflightBytes.acquire(w.ctx, hold); err != nil {
			return err
		}
		w.recvW.begin()
		m, err := w.up.Recv()
		w.recvW.end()
		w.recvMu.Lock()
		done, err := w.take(m, err, hold, &seq, &off)
		w.recvMu.Unlock()
		if err != nil || done {
			return err
		}
	}
}

// take handles one message the receive loop read (with recvMu held):
// done after the last packet, or once the call is over.
func (w *writeStream) take(m *api.WriteBlockRequest, err error, hold int64, seq *uint64, off *int64) (bool, error) {
	const op = "WriteBlock"
	d := w.d
	if w.quit {
		d.inflightBytes.release(hold)
		return true, nil
	}
	if err != nil {
		d.inflightBytes.release(hold)
		if err == io.EOF {
			return false, errs.Newf(errs.Invalid, op, w.name, "stream ended at offset %d of %d: no last packet", *off, w.length)
		}
		return false, errs.FromStatus(err, nil)
	}
	p := m.GetPacket()
	held := int64(len(p.GetData())) + packetOverhead(len(p.GetData()), w.bpc)
	if held > hold {
		d.inflightBytes.release(hold)
		return false, errs.Newf(errs.Invalid, op, w.name, "packet at offset %d: %d bytes exceed the packet size %d", p.GetOffset(), len(p.GetData()), d.cfg.MaxPacketBytes)
	}
	d.inflightBytes.release(hold - held)
	if err := w.store(m, p, *seq, *off); err != nil {
		d.inflightBytes.release(held)
		return false, err
	}
	select {
	case w.acks <- pendingAck{seqno: *seq, held: held, last: p.Last}:
	case <-w.ctx.Done():
		d.inflightBytes.release(held)
		return false, errs.Wrap(errs.Canceled, op, w.name, context.Cause(w.ctx))
	}
	if p.Last {
		return true, nil
	}
	*seq++
	*off += int64(len(p.Data))
	return false, nil
}

// packetOverhead is what a packet of n data bytes holds besides them.
func packetOverhead(n, bpc int) int64 { return int64(4*chunks.Count(n, bpc)) + 64 }

// store checks packet p (the seq-th, expected at off), forwards it, and
// writes it; on the last packet it commits the replica.
func (w *writeStream) store(m *api.WriteBlockRequest, p *api.WritePacket, seq uint64, off int64) error {
	const op = "WriteBlock"
	if p == nil {
		if m.GetHeader() != nil {
			return errs.New(errs.Invalid, op, w.name, "header sent twice")
		}
		return errs.Newf(errs.Invalid, op, w.name, "message at offset %d is neither header nor packet", off)
	}
	n := int64(len(p.Data))
	if w.r != nil {
		return w.storeOpen(m, p, seq)
	}
	switch {
	case p.Seqno != seq:
		return errs.Newf(errs.Invalid, op, w.name, "packet %d at offset %d out of order: expected packet %d", p.Seqno, p.Offset, seq)
	case int64(p.Offset) != off:
		return errs.Newf(errs.Invalid, op, w.name, "packet %d at wrong offset %d: expected %d", p.Seqno, p.Offset, off)
	case off+n > w.length:
		return errs.Newf(errs.Invalid, op, w.name, "packet at offset %d: chunk past the declared length %d (ends at %d)", off, w.length, off+n)
	case p.Last && off+n != w.length:
		return errs.Newf(errs.Invalid, op, w.name, "short write: last packet ends at offset %d of %d declared bytes", off+n, w.length)
	case !p.Last && n == 0:
		return errs.Newf(errs.Invalid, op, w.name, "empty packet at offset %d", off)
	case !p.Last && n%int64(w.bpc) != 0:
		return errs.Newf(errs.Invalid, op, w.name, "packet at offset %d: %d bytes are not whole chunks of %d", off, n, w.bpc)
	case len(p.Crcs) != chunks.Count(len(p.Data), w.bpc):
		return errs.Newf(errs.Invalid, op, w.name, "packet at offset %d: %d CRCs for %d chunks", off, len(p.Crcs), chunks.Count(len(p.Data), w.bpc))
	}
	if err := w.checkAndForward(m, p, off); err != nil {
		return err
	}
	if err := w.bw.Write(p.Data, p.Crcs); err != nil {
		w.setBad(w.d.id, off)
		return err
	}
	w.crc = chunks.Update(w.crc, p.Data)
	if !p.Last {
		return nil
	}
	if want := w.h.Block.Crc32C; want != nil && *want != w.crc {
		return errs.Newf(errs.Corrupt, op, w.name, "block CRC32C %08x differs from the expected %08x", w.crc, *want)
	}
	info, err := w.bw.Commit(w.ctx)
	if err != nil {
		return err
	}
	w.info, w.committed = info, true
	return nil
}

// checkAndForward verifies every chunk of packet p (at block offset off)
// before forwarding it downstream: a chunk damaged on the way here goes no
// further, and this datanode is the one that names the damage.
func (w *writeStream) checkAndForward(m *api.WriteBlockRequest, p *api.WritePacket, off int64) error {
	if bad := verifyPacket(off, p.Data, p.Crcs, w.bpc); bad >= 0 {
		w.d.met.corruptPackets.Inc()
		w.setBad(w.d.id, bad)
		return errs.Newf(errs.Corrupt, "WriteBlock", w.name, "chunk at offset %d: checksum mismatch on datanode %s", bad, w.d.id)
	}
	if w.ds != nil {
		w.fwdW.begin()
		w.ds.send(m)
		w.fwdW.end()
	}
	return nil
}

// verifyChunks checks each chunk of data, which starts at block offset
// off, against crcs: a mismatch is Corrupt naming block and offset.
func verifyChunks(name string, off int64, bpc int, data []byte, crcs []uint32) error {
	if i := chunks.Verify(data, crcs, bpc); i >= 0 {
		return errs.Newf(errs.Corrupt, "WriteBlock", name, "chunk at offset %d: checksum mismatch", off+int64(i*bpc))
	}
	return nil
}

// respond acknowledges each stored packet once the downstream datanode
// acknowledged it too.
func (w *writeStream) respond() error {
	const op = "WriteBlock"
	for {
		var pa pendingAck
		select {
		case pa = <-w.acks:
		case <-w.ctx.Done():
			return errs.Wrap(errs.Canceled, op, w.name, context.Cause(w.ctx))
		}
		ack := &api.WriteBlockAck{Seqno: pa.seqno, Last: pa.last}
		if w.ds != nil && !w.dsLost {
			w.dsAckW.begin()
			da, err := w.ds.recv()
			w.dsAckW.end()
			if err == nil && (da.Seqno != pa.seqno || da.Last != pa.last) {
				err = errs.Newf(errs.Internal, op, w.name, "downstream acked packet %d (last %v), expected %d", da.Seqno, da.Last, pa.seqno)
			}
			if err == nil && pa.last && (int64(da.Length) != w.length || da.Crc32C != w.crc) {
				err = errs.Newf(errs.Corrupt, op, w.name, "downstream stored %d bytes with CRC32C %08x, sent %d with %08x", da.Length, da.Crc32C, w.length, w.crc)
			}
			if err != nil && w.survivesDownstream() {
				bad, _ := w.ds.blame()
				w.loseDownstream(bad, err)
			} else if err != nil {
				w.d.inflightBytes.release(pa.held)
				bad, off := w.ds.blame()
				w.setBad(bad, off)
				kind := errs.KindOf(err)
				if kind == errs.Canceled {
					kind = errs.Unavailable // the downstream's call ended, not ours
				}
				return &errs.Error{Kind: kind, Op: op, Path: w.name, Msg: "downstream datanode " + bad + " failed", Err: err}
			}
			ack.StoredOn = da.GetStoredOn() // none once the downstream is lost
			ack.Receipts = da.GetReceipts()
		}
		if pa.last {
			ack.Length, ack.Crc32C = uint64(w.length), w.crc
			ack.StoredOn = append([]string{w.d.id}, ack.StoredOn...)
			ack.Receipts = w.d.receipts(w.info, ack.Receipts)
			if w.fresh {
				w.d.reportReceived(w.info)
			}
		}
		w.sendW.begin()
		err := w.up.Send(ack)
		w.sendW.end()
		w.d.inflightBytes.release(pa.held)
		if err != nil {
			return errs.FromStatus(err, nil)
		}
		if pa.last {
			return nil
		}
	}
}

// fail records the first failure and stops the stream. bad is the member
// to blame unless one was named already.
func (w *writeStream) fail(err error, bad string, off int64) {
	w.mu.Lock()
	if w.err == nil {
		w.err = err
		if w.bad == "" && bad != "" && blames(err) {
			w.bad, w.badOff = bad, off
		}
	}
	w.mu.Unlock()
	w.cancel()
}

func (w *writeStream) setBad(bad string, off int64) {
	w.mu.Lock()
	if w.err == nil && w.bad == "" {
		w.bad, w.badOff = bad, off
	}
	w.mu.Unlock()
}

// blames reports whether err says something about a pipeline member, not
// about the request or the caller.
func blames(err error) bool {
	switch errs.KindOf(err) {
	case errs.Exist, errs.Invalid, errs.Canceled, errs.Permission, errs.Unauthenticated:
		return false
	}
	return true
}

// finish ends the call: on failure it drops what was stored here and
// names the failed member in the trailer.
func (w *writeStream) finish(err error) error {
	if w.ds != nil {
		w.ds.close()
	}
	if err == nil {
		w.d.met.writeBytes.Add(float64(w.length))
		w.d.met.writeSeconds.Observe(time.Since(w.start).Seconds())
		how := "direct"
		if len(w.h.Pipeline) > 0 {
			how = "pipelined"
		}
		w.d.met.writeStreams.WithLabelValues(how).Inc()
		return nil
	}
	if w.r != nil {
		// Keep what was written for the writer's pipeline recovery or the
		// namenode's block recovery; a committed replica stays as it is.
		if !w.committed {
			w.r.release()
		}
	} else if w.bw != nil && w.fresh {
		if !w.committed {
			w.bw.Abort()
		} else if derr := w.d.store.Delete(context.Background(), w.h.Block.Id); derr != nil {
			// Nothing of a failed write stays visible: the client abandons
			// the block, so drop the copy rather than report it.
			w.d.log.Warn("dropping the local copy of a failed pipeline write", "block", w.h.Block.Id, "err", derr)
		}
	}
	w.mu.Lock()
	bad, off := w.bad, w.badOff
	w.mu.Unlock()
	if bad != "" {
		md := metadata.Pairs(BadNodeKey, bad)
		if off >= 0 {
			md.Append(BadOffsetKey, strconv.FormatInt(off, 10))
		}
		w.up.SetTrailer(md)
	}
	w.d.log.Debug("write block failed", "block", w.name, "bad", bad, "err", err)
	return err
}

// existingReplica takes a write of a replica already stored here (same
// generation and length) and checks, chunk by chunk and at the end, that
// the bytes are the same; it stores nothing.
type existingReplica struct {
	info lbm.BlockInfo
	name string
	bpc  int
	n    int64
	crc  uint32
}

func (r *existingReplica) Write(data []byte, crcs []uint32) error {
	if err := verifyChunks(r.name, r.n, r.bpc, data, crcs); err != nil {
		return err
	}
	r.n += int64(len(data))
	r.crc = chunks.Update(r.crc, data)
	return nil
}

func (r *existingReplica) Written() int64 { return r.n }

func (r *existingReplica) Commit(context.Context) (lbm.BlockInfo, error) {
	if r.n != r.info.Length || r.crc != r.info.CRC {
		return r.info, errs.Newf(errs.Exist, "WriteBlock", r.name, "a different replica (content) is already stored")
	}
	return r.info, nil
}

func (r *existingReplica) Abort() {}
