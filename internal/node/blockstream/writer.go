// Package blockstream is the sending end of a WriteBlock stream, shared
// by the client library (writes) and the datanode (re-replication): a
// header, then packets of whole checksummed chunks, with at most a window
// of packets unacknowledged (HDFS's data and ack queues). docs/FORMATS.md
// describes the stream.
package blockstream

import (
	"context"
	"errors"
	"io"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
)

// BadNodeKey is the trailer key in which a datanode names the pipeline
// member that failed a write; BadOffsetKey gives the block offset of the
// chunk that failed, when one did.
const (
	BadNodeKey   = "blockfs-bad-node"
	BadOffsetKey = "blockfs-bad-offset"
)

// Writer sends one block. Send and Finish are for one goroutine; acks
// are read by a goroutine of the Writer's own.
type Writer struct {
	stream grpc.BidiStreamingClient[api.WriteBlockRequest, api.WriteBlockAck]
	cancel context.CancelFunc
	slots  chan struct{} // one per unacknowledged packet
	done   chan struct{} // closed when the ack reader ends

	seq    uint64
	offset uint64

	mu      sync.Mutex
	cond    *sync.Cond // signalled on every ack and when the reader ends
	ends    []uint64   // block offset each unacknowledged packet ends at
	acked   uint64     // every byte before it is acknowledged
	over    bool       // the ack reader ended
	err     error
	trailer metadata.MD
	final   *api.WriteBlockAck
}

// Start opens a WriteBlock stream on c and sends hdr. window bounds the
// packets in flight.
func Start(ctx context.Context, c api.DataServiceClient, hdr *api.WriteBlockHeader, window int) (*Writer, error) {
	sctx, cancel := context.WithCancel(ctx)
	stream, err := c.WriteBlock(sctx)
	if err != nil {
		cancel()
		return nil, errs.FromStatus(err, nil)
	}
	w := &Writer{stream: stream, cancel: cancel, slots: make(chan struct{}, max(window, 1)), done: make(chan struct{})}
	w.cond = sync.NewCond(&w.mu)
	if hdr.ResumeOffset > 0 {
		w.offset, w.acked = hdr.ResumeOffset, hdr.ResumeOffset
	}
	go w.readAcks()
	if err := stream.Send(&api.WriteBlockRequest{Msg: &api.WriteBlockRequest_Header{Header: hdr}}); err != nil {
		return w, w.wait()
	}
	return w, nil
}

// Send sends data (whole chunks; only the block's final chunk may be
// short) with the CRC32C of each chunk, waiting while the window is full.
// The Writer holds on to data until the packet is acknowledged. last
// marks the block's final packet. An error is the stream's failure.
func (w *Writer) Send(data []byte, crcs []uint32, last bool) error {
	return w.SendAt(w.offset, data, crcs, last, false)
}

// SendAt is Send of a packet at block offset off, which an open-ended
// write may move back into the chunk the previous packet ended in (to
// resend a partial chunk after an hflush); hsync asks every datanode to
// make the packet durable before acknowledging it.
func (w *Writer) SendAt(off uint64, data []byte, crcs []uint32, last, hsync bool) error {
	select {
	case w.slots <- struct{}{}:
	case <-w.done:
		return w.wait()
	}
	p := &api.WritePacket{Seqno: w.seq, Offset: off, Data: data, Crcs: crcs, Last: last, Hsync: hsync}
	w.seq++
	w.offset = off + uint64(len(data))
	w.mu.Lock()
	w.ends = append(w.ends, w.offset)
	w.mu.Unlock()
	if err := w.stream.Send(&api.WriteBlockRequest{Msg: &api.WriteBlockRequest_Packet{Packet: p}}); err != nil {
		return w.wait() // the real error is the stream's status
	}
	if last {
		_ = w.stream.CloseSend()
	}
	return nil
}

// Acked is the block offset before which every byte was acknowledged by
// every datanode of the pipeline (the resume offset before any ack).
func (w *Writer) Acked() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.acked
}

// WaitAcked waits until every packet sent so far is acknowledged (an
// hflush), or the stream fails.
func (w *Writer) WaitAcked() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(w.ends) > 0 && !w.over {
		w.cond.Wait()
	}
	if len(w.ends) > 0 {
		if w.err != nil {
			return w.err
		}
		return errs.New(errs.Unavailable, "WriteBlock", "", "stream ended with packets unacknowledged")
	}
	return nil
}

// Finish waits for the final ack, after the last packet was sent.
func (w *Writer) Finish() (*api.WriteBlockAck, error) {
	err := w.wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.final, err
}

// Abort ends the stream (the datanodes drop the partial replica) and
// waits for the ack reader.
func (w *Writer) Abort() {
	w.cancel()
	<-w.done
}

// BadNode names the datanode the pipeline blamed for a failure, if any.
func (w *Writer) BadNode() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if v := w.trailer.Get(BadNodeKey); len(v) > 0 {
		return v[0]
	}
	return ""
}

func (w *Writer) wait() error {
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// readAcks takes acks in order, freeing a window slot for each, until the
// final ack or a failure.
func (w *Writer) readAcks() {
	defer close(w.done)
	defer w.cancel()
	defer func() {
		w.mu.Lock()
		w.over = true
		w.cond.Broadcast()
		w.mu.Unlock()
	}()
	var next uint64
	for {
		a, err := w.stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errs.New(errs.Unavailable, "WriteBlock", "", "datanode ended the stream before the final ack")
			} else {
				w.mu.Lock()
				w.trailer = w.stream.Trailer()
				w.mu.Unlock()
				err = errs.FromStatus(err, w.trailer)
			}
			w.setErr(err)
			return
		}
		if a.Seqno != next {
			w.setErr(errs.Newf(errs.Internal, "WriteBlock", "", "ack for packet %d, expected %d", a.Seqno, next))
			return
		}
		next++
		w.mu.Lock()
		if len(w.ends) > 0 {
			w.acked = max(w.acked, w.ends[0])
			w.ends = w.ends[1:]
		}
		w.cond.Broadcast()
		w.mu.Unlock()
		select {
		case <-w.slots:
		default:
			w.setErr(errs.Newf(errs.Internal, "WriteBlock", "", "ack for packet %d that was not sent", a.Seqno))
			return
		}
		if a.Last {
			w.mu.Lock()
			w.final = a
			w.mu.Unlock()
			return
		}
	}
}

func (w *Writer) setErr(err error) {
	w.mu.Lock()
	w.err = err
	w.mu.Unlock()
}
