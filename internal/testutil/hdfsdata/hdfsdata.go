// Package hdfsdata is a small HDFS DataTransferProtocol client for tests:
// READ_BLOCK, WRITE_BLOCK and BLOCK_CHECKSUM as an HDFS client sends them
// (data-transfer version 28), written from Hadoop's wire format and not
// from the datanode's door, so that tests of the door check one reading
// of the format against another. It also has the raw framing pieces that
// tests of bad input need.
package hdfsdata

import (
	"bufio"
	"crypto/md5"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"time"

	"google.golang.org/protobuf/proto"

	hadoopcommon "github.com/blockfs/blockfs/api/hadoop/common"
	hdfs "github.com/blockfs/blockfs/api/hadoop/hdfs"
)

// Version is the data-transfer version HDFS clients send.
const Version = 28

// Op codes.
const (
	WriteBlock    byte = 0x50
	ReadBlock     byte = 0x51
	BlockChecksum byte = 0x55
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CRC is a chunk's CRC32C.
func CRC(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// MD5CRC is an HDFS block checksum computed from the bytes: the MD5 of
// the big-endian CRC32C of each bpc-byte chunk.
func MD5CRC(data []byte, bpc int) []byte {
	h := md5.New()
	var be [4]byte
	for off := 0; off < len(data); off += bpc {
		binary.BigEndian.PutUint32(be[:], CRC(data[off:min(off+bpc, len(data))]))
		h.Write(be[:])
	}
	return h.Sum(nil)
}

// FileMD5 is an HDFS file checksum (MD5-of-MD5-of-CRC) from its blocks'
// checksums, as Hadoop's client combines them: the MD5 of the blocks'
// MD5s in order, in a buffer that grows by doubling from 32 bytes, its
// zero padding included (Hadoop digests DataOutputBuffer.getData()).
func FileMD5(blocks [][]byte) []byte {
	var b []byte
	size := 32
	for _, m := range blocks {
		b = append(b, m...)
		for size < len(b) {
			size *= 2
		}
	}
	sum := md5.Sum(append(b, make([]byte, size-len(b))...))
	return sum[:]
}

// Token is a block token as an HDFS client carries it.
func Token(identifier []byte) *hadoopcommon.TokenProto {
	return &hadoopcommon.TokenProto{Identifier: identifier, Password: []byte{}, Kind: proto.String("HDFS_BLOCK_TOKEN"), Service: proto.String("")}
}

// Block is an ExtendedBlockProto.
func Block(pool string, id, gen, n uint64) *hdfs.ExtendedBlockProto {
	return &hdfs.ExtendedBlockProto{PoolId: proto.String(pool), BlockId: proto.Uint64(id), GenerationStamp: proto.Uint64(gen), NumBytes: proto.Uint64(n)}
}

// Conn is one connection to a datanode's door.
type Conn struct {
	net.Conn
	R *bufio.Reader
}

// Dial connects to addr.
func Dial(addr string) (*Conn, error) {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	_ = c.SetDeadline(time.Now().Add(time.Minute))
	return &Conn{Conn: c, R: bufio.NewReader(c)}, nil
}

// Delimited is m with its varint length (required fields may be missing).
func Delimited(m proto.Message) []byte {
	b, err := proto.MarshalOptions{AllowPartial: true}.Marshal(m)
	if err != nil {
		panic(err)
	}
	return append(binary.AppendUvarint(nil, uint64(len(b))), b...)
}

// Op is a request: version, op code and the delimited message.
func Op(version uint16, code byte, m proto.Message) []byte {
	return append([]byte{byte(version >> 8), byte(version), code}, Delimited(m)...)
}

// Packet is a packet's bytes: PLEN (4 + checksums + data), HLEN, the
// header, the checksums and the data.
func Packet(h *hdfs.PacketHeaderProto, crcs []uint32, data []byte) []byte {
	hb, err := proto.Marshal(h)
	if err != nil {
		panic(err)
	}
	b := binary.BigEndian.AppendUint32(nil, uint32(4+4*len(crcs)+len(data)))
	b = binary.BigEndian.AppendUint16(b, uint16(len(hb)))
	b = append(b, hb...)
	for _, c := range crcs {
		b = binary.BigEndian.AppendUint32(b, c)
	}
	return append(b, data...)
}

// Header is a PacketHeaderProto.
func Header(off, seqno int64, n int, last bool) *hdfs.PacketHeaderProto {
	return &hdfs.PacketHeaderProto{OffsetInBlock: proto.Int64(off), Seqno: proto.Int64(seqno), LastPacketInBlock: proto.Bool(last), DataLen: proto.Int32(int32(n))}
}

// Sums are the CRC32Cs of data's bpc-byte chunks.
func Sums(data []byte, bpc int) []uint32 {
	var out []uint32
	for off := 0; off < len(data); off += bpc {
		out = append(out, CRC(data[off:min(off+bpc, len(data))]))
	}
	return out
}

// ReadMsg reads one delimited message into m.
func (c *Conn) ReadMsg(m proto.Message) error {
	n, err := binary.ReadUvarint(c.R)
	if err != nil {
		return err
	}
	if n > 1<<20 {
		return fmt.Errorf("message of %d bytes", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(c.R, b); err != nil {
		return err
	}
	return proto.Unmarshal(b, m)
}

// Response reads a BlockOpResponseProto.
func (c *Conn) Response() (*hdfs.BlockOpResponseProto, error) {
	r := &hdfs.BlockOpResponseProto{}
	return r, c.ReadMsg(r)
}

// ReadPacket reads one packet: its header, checksums and data.
func (c *Conn) ReadPacket() (*hdfs.PacketHeaderProto, []uint32, []byte, error) {
	var pre [6]byte
	if _, err := io.ReadFull(c.R, pre[:]); err != nil {
		return nil, nil, nil, err
	}
	plen, hlen := binary.BigEndian.Uint32(pre[:4]), binary.BigEndian.Uint16(pre[4:])
	if plen < 4 || plen > 16<<20 {
		return nil, nil, nil, fmt.Errorf("packet length %d", plen)
	}
	b := make([]byte, int(hlen)+int(plen)-4)
	if _, err := io.ReadFull(c.R, b); err != nil {
		return nil, nil, nil, err
	}
	h := &hdfs.PacketHeaderProto{}
	if err := proto.Unmarshal(b[:hlen], h); err != nil {
		return nil, nil, nil, err
	}
	payload := b[hlen:]
	n := int(h.GetDataLen())
	if n < 0 || n > len(payload) || (len(payload)-n)%4 != 0 {
		return nil, nil, nil, fmt.Errorf("packet %d: data length %d in %d payload bytes", h.GetSeqno(), n, len(payload))
	}
	sums := payload[:len(payload)-n]
	crcs := make([]uint32, len(sums)/4)
	for i := range crcs {
		crcs[i] = binary.BigEndian.Uint32(sums[4*i:])
	}
	return h, crcs, payload[len(sums):], nil
}

// StatusError is a datanode's answer other than SUCCESS.
type StatusError struct {
	Status       hdfs.Status
	Message      string
	FirstBadLink string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%v: %s (first bad link %q)", e.Status, e.Message, e.FirstBadLink)
}

func check(r *hdfs.BlockOpResponseProto) error {
	if r.GetStatus() != hdfs.Status_SUCCESS {
		return &StatusError{Status: r.GetStatus(), Message: r.GetMessage(), FirstBadLink: r.GetFirstBadLink()}
	}
	return nil
}

// Read reads n bytes at off of block b from the door at addr, checking
// every packet's seqno, offset and CRCs, and answers CHECKSUM_OK.
func Read(addr string, b *hdfs.ExtendedBlockProto, tok *hadoopcommon.TokenProto, off, n uint64) ([]byte, error) {
	c, err := Dial(addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.Read(b, tok, off, n)
}

// Read is Read on an open connection, which can then take another op.
func (c *Conn) Read(b *hdfs.ExtendedBlockProto, tok *hadoopcommon.TokenProto, off, n uint64) ([]byte, error) {
	op := &hdfs.OpReadBlockProto{
		Header: &hdfs.ClientOperationHeaderProto{BaseHeader: &hdfs.BaseHeaderProto{Block: b, Token: tok}, ClientName: proto.String("hdfsdata")},
		Offset: proto.Uint64(off), Len: proto.Uint64(n),
	}
	if _, err := c.Write(Op(Version, ReadBlock, op)); err != nil {
		return nil, err
	}
	r, err := c.Response()
	if err != nil {
		return nil, err
	}
	if err := check(r); err != nil {
		return nil, err
	}
	info := r.GetReadOpChecksumInfo()
	bpc := int(info.GetChecksum().GetBytesPerChecksum())
	if info.GetChecksum().GetType() != hdfs.ChecksumTypeProto_CHECKSUM_CRC32C || bpc <= 0 {
		return nil, fmt.Errorf("checksum %v", info.GetChecksum())
	}
	start := int64(info.GetChunkOffset())
	if start > int64(off) || start%int64(bpc) != 0 || int64(off)-start >= int64(bpc) {
		return nil, fmt.Errorf("chunk offset %d for a read at %d with chunks of %d", start, off, bpc)
	}
	var got []byte
	pos := start
	for seq := int64(0); ; seq++ {
		h, crcs, data, err := c.ReadPacket()
		if err != nil {
			return nil, err
		}
		if h.GetSeqno() != seq || h.GetOffsetInBlock() != pos {
			return nil, fmt.Errorf("packet seqno %d at %d, want %d at %d", h.GetSeqno(), h.GetOffsetInBlock(), seq, pos)
		}
		if h.GetLastPacketInBlock() {
			if len(data) != 0 {
				return nil, errors.New("last packet carries data")
			}
			break
		}
		if len(data) == 0 {
			return nil, fmt.Errorf("empty packet %d", seq)
		}
		want := Sums(data, bpc)
		if len(crcs) != len(want) {
			return nil, fmt.Errorf("packet %d: %d CRCs for %d chunks", seq, len(crcs), len(want))
		}
		for i := range want {
			if crcs[i] != want[i] {
				return nil, fmt.Errorf("packet %d chunk %d: CRC mismatch", seq, i)
			}
		}
		got = append(got, data...)
		pos += int64(len(data))
	}
	if _, err := c.Write(Delimited(&hdfs.ClientReadStatusProto{Status: hdfs.Status_CHECKSUM_OK.Enum()})); err != nil {
		return nil, err
	}
	skip := int64(off) - start
	if int64(len(got)) < skip+int64(n) {
		return nil, fmt.Errorf("got %d bytes from %d, want %d from %d", len(got), start, n, off)
	}
	return got[skip : skip+int64(n)], nil
}

// Write is one block write, as an HDFS client pipelines it.
type Write struct {
	Block   *hdfs.ExtendedBlockProto
	Token   *hadoopcommon.TokenProto
	Targets []*hdfs.DatanodeInfoProto // the pipeline after the first datanode
	Stage   hdfs.OpWriteBlockProto_BlockConstructionStage
	// MinBytes and LatestGen are minBytesRcvd and latestGenerationStamp.
	MinBytes, LatestGen uint64
	BPC                 int   // bytes per checksum (default 512)
	PacketBytes         int   // data per packet (default 64 KiB)
	Offset              int64 // where Data starts in the block
	Data                []byte
	FirstSeqno          int64
}

// Write sends w to the door at addr and waits for every ack: each must
// carry one SUCCESS per pipeline member.
func WriteTo(addr string, w Write) error {
	c, err := Dial(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	return c.WriteBlock(w)
}

// Setup sends w's op and reads the answer.
func (c *Conn) Setup(w *Write) error {
	if w.BPC == 0 {
		w.BPC = 512
	}
	if w.PacketBytes == 0 {
		w.PacketBytes = 64 << 10
	}
	op := &hdfs.OpWriteBlockProto{
		Header:                &hdfs.ClientOperationHeaderProto{BaseHeader: &hdfs.BaseHeaderProto{Block: w.Block, Token: w.Token}, ClientName: proto.String("hdfsdata")},
		Targets:               w.Targets,
		Stage:                 w.Stage.Enum(),
		PipelineSize:          proto.Uint32(uint32(1 + len(w.Targets))),
		MinBytesRcvd:          proto.Uint64(w.MinBytes),
		MaxBytesRcvd:          proto.Uint64(uint64(w.Offset)),
		LatestGenerationStamp: proto.Uint64(w.LatestGen),
		RequestedChecksum:     &hdfs.ChecksumProto{Type: hdfs.ChecksumTypeProto_CHECKSUM_CRC32C.Enum(), BytesPerChecksum: proto.Uint32(uint32(w.BPC))},
	}
	if _, err := c.Write(Op(Version, WriteBlock, op)); err != nil {
		return err
	}
	r, err := c.Response()
	if err != nil {
		return err
	}
	return check(r)
}

// WriteBlock is WriteTo on an open connection.
func (c *Conn) WriteBlock(w Write) error {
	if err := c.Setup(&w); err != nil {
		return err
	}
	members := 1 + len(w.Targets)
	acks := make(chan error, 1)
	sent := make(chan int64, 1<<16)
	go func() {
		for seq := range sent {
			if err := c.Ack(seq, members); err != nil {
				acks <- err
				for range sent {
				}
				return
			}
		}
		acks <- nil
	}()
	seq, off := w.FirstSeqno, w.Offset
	var err error
	for p := 0; p < len(w.Data) && err == nil; p += w.PacketBytes {
		data := w.Data[p:min(p+w.PacketBytes, len(w.Data))]
		sent <- seq
		_, err = c.Write(Packet(Header(off, seq, len(data), false), Sums(data, w.BPC), data))
		seq++
		off += int64(len(data))
	}
	if err == nil {
		sent <- seq
		_, err = c.Write(Packet(Header(off, seq, 0, true), nil, nil))
	}
	close(sent)
	if aerr := <-acks; aerr != nil {
		return aerr
	}
	return err
}

// AckError is an ack that is not all SUCCESS.
type AckError struct {
	Seqno int64
	Reply []hdfs.Status
}

func (e *AckError) Error() string { return fmt.Sprintf("ack of packet %d: %v", e.Seqno, e.Reply) }

// Ack reads acks until that of seq (heartbeats' are skipped): it must
// carry members SUCCESS replies.
func (c *Conn) Ack(seq int64, members int) error {
	for {
		a := &hdfs.PipelineAckProto{}
		if err := c.ReadMsg(a); err != nil {
			return err
		}
		ok := len(a.Reply) == members
		for _, st := range a.Reply {
			ok = ok && st == hdfs.Status_SUCCESS
		}
		if !ok {
			return &AckError{Seqno: a.GetSeqno(), Reply: a.Reply}
		}
		if a.GetSeqno() == -1 {
			continue
		}
		if a.GetSeqno() != seq {
			return fmt.Errorf("ack of packet %d, want %d", a.GetSeqno(), seq)
		}
		return nil
	}
}

// Checksum asks the door at addr for block b's checksum.
func Checksum(addr string, b *hdfs.ExtendedBlockProto, tok *hadoopcommon.TokenProto) (*hdfs.OpBlockChecksumResponseProto, error) {
	c, err := Dial(addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if _, err := c.Write(Op(Version, BlockChecksum, &hdfs.OpBlockChecksumProto{Header: &hdfs.BaseHeaderProto{Block: b, Token: tok}})); err != nil {
		return nil, err
	}
	r, err := c.Response()
	if err != nil {
		return nil, err
	}
	if err := check(r); err != nil {
		return nil, err
	}
	return r.GetChecksumResponse(), nil
}
