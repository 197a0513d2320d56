package datanode

import (
	"context"
	"strconv"

	"google.golang.org/grpc"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
)

// downstream is the WriteBlock stream to the next datanode of a pipeline.
// The receive loop sends on it (packets as they arrive), the responder
// receives on it (acks in order).
type downstream struct {
	node   *api.DatanodeInfo
	stream grpc.BidiStreamingClient[api.WriteBlockRequest, api.WriteBlockAck]
	broken bool // a Send failed: recv returns the stream's status (send's goroutine only)
}

// openDownstream opens the stream to h's next datanode and forwards the
// header with the rest of the pipeline. ctx ends the stream.
func (d *Datanode) openDownstream(ctx context.Context, h *api.WriteBlockHeader, bpc int) (*downstream, error) {
	ds := &downstream{node: h.Pipeline[0]}
	name := blockName(h.Block.GetId())
	conn, err := d.conn("WriteBlock", ds.node.Addr)
	if err != nil {
		return nil, &errs.Error{Kind: errs.Unavailable, Op: "WriteBlock", Path: name, Msg: "downstream datanode " + ds.node.Id, Err: err}
	}
	ds.stream, err = api.NewDataServiceClient(conn).WriteBlock(ctx)
	if err != nil {
		return nil, &errs.Error{Kind: errs.Unavailable, Op: "WriteBlock", Path: name, Msg: "downstream datanode " + ds.node.Id, Err: errs.FromStatus(err, nil)}
	}
	fwd := &api.WriteBlockHeader{Block: h.Block, InodeId: h.InodeId, Token: h.Token, Pipeline: h.Pipeline[1:],
		Replication: h.Replication, BytesPerChecksum: uint32(bpc),
		OpenEnded: h.OpenEnded, ResumeOffset: h.ResumeOffset, PreviousGenStamp: h.PreviousGenStamp}
	ds.send(&api.WriteBlockRequest{Msg: &api.WriteBlockRequest_Header{Header: fwd}})
	return ds, nil
}

// send forwards m. A failure is not returned: it shows as the stream's
// status on the next recv.
func (ds *downstream) send(m *api.WriteBlockRequest) {
	if ds.broken {
		return
	}
	if err := ds.stream.Send(m); err != nil {
		ds.broken = true
	}
}

// recv returns the next ack, or the stream's failure.
func (ds *downstream) recv() (*api.WriteBlockAck, error) {
	a, err := ds.stream.Recv()
	if err != nil {
		return nil, errs.FromStatus(err, ds.stream.Trailer())
	}
	return a, nil
}

// blame names the member the downstream stream blamed (the next datanode
// when it named none) and the offset it gave, or -1. Call it after recv
// failed.
func (ds *downstream) blame() (string, int64) {
	tr := ds.stream.Trailer()
	bad := ds.node.Id
	if v := tr.Get(BadNodeKey); len(v) > 0 && v[0] != "" {
		bad = v[0]
	}
	off := int64(-1)
	if v := tr.Get(BadOffsetKey); len(v) > 0 {
		if n, err := strconv.ParseInt(v[0], 10, 64); err == nil {
			off = n
		}
	}
	return bad, off
}

// close half-closes the stream; the context given to openDownstream ends it.
func (ds *downstream) close() { _ = ds.stream.CloseSend() }
