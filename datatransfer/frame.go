package datatransfer

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"

	"google.golang.org/protobuf/proto"

	hdfs "github.com/blockfs/blockfs/api/hadoop/hdfs"
	"github.com/blockfs/blockfs/errs"
)

// The framing, as docs/FORMATS.md ("HDFS data transfer") draws it.
//
// A request is a 2-byte big-endian data-transfer version, a 1-byte op and
// the op's message, varint-length-delimited. Every answer message
// (BlockOpResponseProto, PipelineAckProto, and the client's
// ClientReadStatusProto) is varint-length-delimited too. A packet is a
// 4-byte big-endian length PLEN (4 + the checksum bytes + the data bytes:
// itself, not the header), a 2-byte big-endian header length HLEN, the
// PacketHeaderProto, the checksums (4 bytes each, big endian) and the
// data.

// Version is the data-transfer version the door speaks (Hadoop 2 and 3).
const Version = 28

// Ops the door serves.
const (
	OpWriteBlock    byte = 0x50
	OpReadBlock     byte = 0x51
	OpBlockChecksum byte = 0x55
)

// Bounds of the framing.
const (
	// maxPacketHeader bounds HLEN: a PacketHeaderProto is about 30 bytes.
	maxPacketHeader = 1 << 10
	// heartbeatSeqno is the seqno of a writer's keep-alive packet.
	heartbeatSeqno = -1
)

// frameError is a violation of the framing: the door answers it, when it
// can, and closes the connection.
func frameError(format string, a ...any) error {
	return errs.Newf(errs.Invalid, "datatransfer", "", format, a...)
}

// readOpHeader reads a request's version and op.
func readOpHeader(r io.Reader) (version uint16, op byte, err error) {
	var b [3]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, 0, err
	}
	return binary.BigEndian.Uint16(b[:2]), b[2], nil
}

// readDelimited reads one varint-length-delimited message of at most max
// bytes into m. Hadoop's required fields must be present.
func readDelimited(r *bufio.Reader, max int, m proto.Message) error {
	name := m.ProtoReflect().Descriptor().Name()
	truncated := func(err error) error {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return &errs.Error{Kind: errs.Invalid, Op: "datatransfer", Msg: fmt.Sprintf("truncated %s", name), Err: err}
	}
	n, err := binary.ReadUvarint(r)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || isNetErr(err) {
		return truncated(err)
	}
	if err != nil {
		return frameError("%s length: %v", name, err)
	}
	if n > uint64(max) {
		return frameError("%s of %d bytes exceeds the limit of %d", name, n, max)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return truncated(err)
	}
	if err := proto.Unmarshal(b, m); err != nil {
		return frameError("malformed %s: %v", name, err)
	}
	return nil
}

// appendDelimited appends m with its varint length to b.
func appendDelimited(b []byte, m proto.Message) []byte {
	out, err := proto.MarshalOptions{AllowPartial: true}.Marshal(m)
	if err != nil { // only a message too large to encode: none of ours
		panic(fmt.Sprintf("datatransfer: encoding %T: %v", m, err))
	}
	b = binary.AppendUvarint(b, uint64(len(out)))
	return append(b, out...)
}

// packet is one packet as it came off the wire.
type packet struct {
	hdr  *hdfs.PacketHeaderProto
	crcs []uint32
	data []byte
}

// readPacket reads one packet of at most maxData data bytes; its checksum
// part must be whole 4-byte CRCs.
func readPacket(r *bufio.Reader, maxData int) (packet, error) {
	var pre [6]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return packet{}, err
	}
	plen := binary.BigEndian.Uint32(pre[:4])
	hlen := int(binary.BigEndian.Uint16(pre[4:]))
	// The CRC table is at most a sixteenth of the data (chunks of 64 bytes
	// or more), plus a partial chunk at either end.
	maxPayload := uint64(maxData) + uint64(maxData)/16 + 8
	switch {
	case plen < 4:
		return packet{}, frameError("packet length %d: less than its own 4 bytes", plen)
	case uint64(plen-4) > maxPayload:
		return packet{}, frameError("packet length %d exceeds the limit of %d", plen, maxPayload+4)
	case hlen == 0 || hlen > maxPacketHeader:
		return packet{}, frameError("packet header length %d: want 1 to %d", hlen, maxPacketHeader)
	}
	buf := make([]byte, hlen+int(plen-4))
	if _, err := io.ReadFull(r, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return packet{}, err
	}
	h := &hdfs.PacketHeaderProto{}
	if err := proto.Unmarshal(buf[:hlen], h); err != nil {
		return packet{}, frameError("malformed packet header: %v", err)
	}
	payload := buf[hlen:]
	n := int64(h.GetDataLen())
	switch {
	case n < 0 || n > int64(len(payload)):
		return packet{}, frameError("packet %d: data length %d does not fit its %d payload bytes", h.GetSeqno(), n, len(payload))
	case n > int64(maxData):
		return packet{}, frameError("packet %d: %d data bytes exceed the limit of %d", h.GetSeqno(), n, maxData)
	case (int64(len(payload))-n)%4 != 0:
		return packet{}, frameError("packet %d: %d checksum bytes are not whole CRCs", h.GetSeqno(), int64(len(payload))-n)
	case h.GetOffsetInBlock() < 0:
		return packet{}, frameError("packet %d: negative offset %d", h.GetSeqno(), h.GetOffsetInBlock())
	}
	sums := payload[:int64(len(payload))-n]
	p := packet{hdr: h, data: payload[len(sums):], crcs: make([]uint32, len(sums)/4)}
	for i := range p.crcs {
		p.crcs[i] = binary.BigEndian.Uint32(sums[4*i:])
	}
	return p, nil
}

// packetPrefix is a packet's length, header length, header and checksums:
// what goes before its data.
func packetPrefix(h *hdfs.PacketHeaderProto, crcs []uint32, dataLen int) []byte {
	hb, err := proto.Marshal(h)
	if err != nil {
		panic(fmt.Sprintf("datatransfer: encoding a packet header: %v", err))
	}
	b := make([]byte, 6, 6+len(hb)+4*len(crcs))
	binary.BigEndian.PutUint32(b, uint32(4+4*len(crcs)+dataLen))
	binary.BigEndian.PutUint16(b[4:], uint16(len(hb)))
	b = append(b, hb...)
	for _, c := range crcs {
		b = binary.BigEndian.AppendUint32(b, c)
	}
	return b
}

func packetHeader(off, seqno int64, n int, last bool) *hdfs.PacketHeaderProto {
	return &hdfs.PacketHeaderProto{OffsetInBlock: proto.Int64(off), Seqno: proto.Int64(seqno),
		LastPacketInBlock: proto.Bool(last), DataLen: proto.Int32(int32(n))}
}

// isNetErr reports whether err is the connection's (closed, timed out),
// not the framing's.
func isNetErr(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, net.ErrClosed)
}
