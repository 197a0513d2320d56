package datatransfer

import (
	"errors"
	"net"
	"strconv"
	"sync"

	"google.golang.org/protobuf/proto"

	hdfs "github.com/blockfs/blockfs/api/hadoop/hdfs"
	"github.com/blockfs/blockfs/errs"
)

// ackBacklog bounds the packets a write has sent and not yet seen
// acknowledged; the datanode's in-flight cap usually binds first.
const ackBacklog = 1024

// writeBlock serves WRITE_BLOCK: the op is checked and translated into a
// write through the datanode's own write path, answered once that is set
// up; then packets come in, each passed to the write path in order, and a
// PipelineAckProto goes out for each once every member stored it, its
// replies one per member (this datanode first, then the targets). A
// failure is answered by an ack naming the member to blame, and the
// connection ends.
func (c *conn) writeBlock() outcome {
	const op = "WRITE_BLOCK"
	var req hdfs.OpWriteBlockProto
	if err := c.readOp(&req); err != nil {
		return c.respondError(op, err)
	}
	w, err := c.writeRequest(op, &req)
	if err != nil {
		return c.respondError(op, err)
	}
	bs, err := c.s.cfg.Writer.WriteBlock(c.ctx, w)
	if err != nil {
		resp := &hdfs.BlockOpResponseProto{Status: statusOf(err).Enum(), Message: proto.String(errs.WithOp(err, op).Error()),
			FirstBadLink: proto.String("")}
		if i := c.blame(err, w.Targets); i > 0 {
			resp.FirstBadLink = proto.String(xferAddr(req.Targets[i-1]))
		}
		return c.respond(resp, false)
	}
	defer bs.Close()
	// firstBadLink is always there: a client reads at least 5 bytes.
	if st := c.respond(&hdfs.BlockOpResponseProto{Status: hdfs.Status_SUCCESS.Enum(), FirstBadLink: proto.String("")}, true); !st.clean {
		return st
	}
	ws := &writeSession{c: c, bs: bs, w: w, members: 1 + len(w.Targets), seqs: make(chan int64, ackBacklog)}
	respDone := make(chan error, 1)
	go func() { respDone <- ws.respond() }()
	err = ws.receive()
	close(ws.seqs)
	if err != nil {
		// The write is over: the responder's Ack returns once it is closed.
		bs.Close()
	}
	if rerr := <-respDone; err == nil {
		err = rerr
	}
	if err != nil {
		c.log.Info("HDFS write failed", "block", w.Block.ID, "err", err)
		if !ws.failed {
			return outcome{status: "closed"}
		}
		return outcome{status: ws.failStatus.String()}
	}
	return outcome{status: hdfs.Status_SUCCESS.String(), clean: true}
}

// writeRequest translates the op: block, token, stage, checksum, targets.
func (c *conn) writeRequest(op string, req *hdfs.OpWriteBlockProto) (WriteRequest, error) {
	b, token, err := c.baseHeader(op, req.GetHeader().GetBaseHeader())
	if err != nil {
		return WriteRequest{}, err
	}
	w := WriteRequest{Block: b, Token: token}
	name := blockName(b.ID)
	switch st := req.GetStage(); st {
	case hdfs.OpWriteBlockProto_PIPELINE_SETUP_CREATE:
	case hdfs.OpWriteBlockProto_PIPELINE_SETUP_APPEND, hdfs.OpWriteBlockProto_PIPELINE_SETUP_APPEND_RECOVERY,
		hdfs.OpWriteBlockProto_PIPELINE_SETUP_STREAMING_RECOVERY, hdfs.OpWriteBlockProto_PIPELINE_CLOSE_RECOVERY:
		// The replica here holds at least the bytes the client had
		// acknowledged, under the block's stamp; it goes on under the
		// latest one (a client that bumped none sends the block's).
		w.ResumeOffset, w.PreviousGenStamp = req.GetMinBytesRcvd(), b.GenStamp
		if g := req.GetLatestGenerationStamp(); g != 0 {
			w.Block.GenStamp = g
		}
	default:
		return w, unsupported(op, "stage %v is not served (PIPELINE_SETUP_CREATE, PIPELINE_SETUP_APPEND and the recoveries are)", st)
	}
	cs := req.GetRequestedChecksum()
	switch cs.GetType() {
	case hdfs.ChecksumTypeProto_CHECKSUM_CRC32C:
	case hdfs.ChecksumTypeProto_CHECKSUM_CRC32:
		w.ieee = true
	default:
		return w, unsupported(op, "checksum %v: blockfs takes CRC32C or CRC32", cs.GetType())
	}
	w.BytesPerChecksum = int(cs.GetBytesPerChecksum())
	for i, t := range req.GetTargets() {
		id := t.GetId()
		host := id.GetHostName()
		if host == "" {
			host = id.GetIpAddr()
		}
		if id.GetDatanodeUuid() == "" || host == "" || id.GetIpcPort() == 0 {
			return w, errs.Newf(errs.Invalid, op, name, "target %d (%s) names no datanode uuid, host and ipc port", i, xferAddr(t))
		}
		w.Targets = append(w.Targets, Target{ID: id.GetDatanodeUuid(), Addr: net.JoinHostPort(host, strconv.Itoa(int(id.GetIpcPort())))})
	}
	return w, nil
}

// xferAddr is how HDFS names a datanode in firstBadLink.
func xferAddr(t *hdfs.DatanodeInfoProto) string {
	return net.JoinHostPort(t.GetId().GetIpAddr(), strconv.Itoa(int(t.GetId().GetXferPort())))
}

// blame is the pipeline index (0 this datanode, i the i-th target) err
// names, 0 when it names none.
func (c *conn) blame(err error, targets []Target) int {
	var pe *PipelineError
	if !errors.As(err, &pe) {
		return 0
	}
	for i, t := range targets {
		if t.ID == pe.Node {
			return i + 1
		}
	}
	return 0
}

// writeSession is the packet phase of one WRITE_BLOCK: the receive loop
// (the connection's goroutine) and the responder.
type writeSession struct {
	c       *conn
	bs      BlockStream
	w       WriteRequest
	members int
	seqs    chan int64 // the seqnos passed on, oldest first, for the responder

	failOnce   sync.Once
	failed     bool // an ack named the failure, with failStatus
	failStatus hdfs.Status
}

// receive reads packets and passes them on, until the last one.
func (ws *writeSession) receive() error {
	const op = "WRITE_BLOCK"
	c := ws.c
	next := int64(-1) // the seqno the next packet must have; -1 before the first
	for {
		c.readDeadline(c.s.cfg.IdleTimeout)
		p, err := readPacket(c.r, c.s.cfg.MaxPacketBytes)
		if err != nil {
			ws.fail(next, 0, hdfs.Status_ERROR)
			return err
		}
		h := p.hdr
		seq := h.GetSeqno()
		if seq == heartbeatSeqno {
			if len(p.data) != 0 || h.GetLastPacketInBlock() {
				ws.fail(seq, 0, hdfs.Status_ERROR)
				return errs.Newf(errs.Invalid, op, blockName(ws.w.Block.ID), "a heartbeat packet with %d data bytes (last %v)", len(p.data), h.GetLastPacketInBlock())
			}
			if err := ws.ack(heartbeatSeqno, ws.members, hdfs.Status_SUCCESS); err != nil {
				return err
			}
			continue
		}
		if seq < 0 || (next >= 0 && seq != next) {
			ws.fail(seq, 0, hdfs.Status_ERROR)
			return errs.Newf(errs.Invalid, op, blockName(ws.w.Block.ID), "packet %d out of order: expected packet %d", seq, next)
		}
		next = seq + 1
		select {
		case ws.seqs <- seq:
		case <-c.ctx.Done():
			return errs.Wrap(errs.Canceled, op, blockName(ws.w.Block.ID), c.ctx.Err())
		}
		pk := Packet{Offset: h.GetOffsetInBlock(), Data: p.data, CRCs: p.crcs, Last: h.GetLastPacketInBlock(), Sync: h.GetSyncBlock()}
		if ws.w.ieee {
			if err := toCRC32C(&pk, ws.w.BytesPerChecksum); err != nil {
				ws.fail(seq, 0, statusOf(err))
				return err
			}
		}
		if err := ws.bs.Send(pk); err != nil {
			return nil // the write is over; the responder's Ack says why
		}
		c.s.met.bytes.WithLabelValues(op).Add(float64(len(p.data)))
		if pk.Last {
			return nil
		}
	}
}

// respond acknowledges each packet passed on, in order, once the write
// path did: all members SUCCESS; a failure acks the packet with the
// member to blame.
func (ws *writeSession) respond() error {
	for seq := range ws.seqs {
		last, err := ws.bs.Ack()
		if err != nil {
			bad := ws.c.blame(err, ws.w.Targets)
			ws.fail(seq, bad, statusOf(err))
			return err
		}
		if err := ws.ack(seq, ws.members, hdfs.Status_SUCCESS); err != nil {
			return err
		}
		if last {
			return nil
		}
	}
	return nil
}

// ack sends a PipelineAckProto for seq: n replies, the last of them st and
// the others SUCCESS.
func (ws *writeSession) ack(seq int64, n int, st hdfs.Status) error {
	reply := make([]hdfs.Status, n)
	reply[n-1] = st
	return ws.c.write(appendDelimited(nil, &hdfs.PipelineAckProto{Seqno: proto.Int64(seq), Reply: reply}))
}

// fail answers the write's first failure, once: an ack of seq whose reply
// for member bad is st (the members before it SUCCESS), and the end of the
// connection, which also stops the other goroutine's wait on the client.
func (ws *writeSession) fail(seq int64, bad int, st hdfs.Status) {
	ws.failOnce.Do(func() {
		ws.failed, ws.failStatus = true, st
		_ = ws.ack(seq, bad+1, st)
		ws.c.c.Close()
	})
}
