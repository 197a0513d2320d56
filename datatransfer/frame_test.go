package datatransfer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	hdfs "github.com/blockfs/blockfs/api/hadoop/hdfs"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/base/chunks"
)

// rawPacket frames a packet by hand: plen and hlen as given.
func rawPacket(plen uint32, hlen uint16, hdr, rest []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, plen)
	b = binary.BigEndian.AppendUint16(b, hlen)
	return append(append(b, hdr...), rest...)
}

func hdrBytes(off, seq int64, n int32, last bool) []byte {
	b, _ := proto.Marshal(&hdfs.PacketHeaderProto{OffsetInBlock: proto.Int64(off), Seqno: proto.Int64(seq), LastPacketInBlock: proto.Bool(last), DataLen: proto.Int32(n)})
	return b
}

func TestReadPacket(t *testing.T) {
	data := bytes.Repeat([]byte{7}, 1000)
	sums := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, chunks.CRC(data[:512])), chunks.CRC(data[512:]))
	good := hdrBytes(512, 3, 1000, false)
	for _, tc := range []struct {
		name string
		in   []byte
		err  string // "" for a good packet
	}{
		{"good", rawPacket(4+8+1000, uint16(len(good)), good, append(append([]byte(nil), sums...), data...)), ""},
		{"last, empty", rawPacket(4, uint16(len(hdrBytes(0, 9, 0, true))), hdrBytes(0, 9, 0, true), nil), ""},
		{"length below itself", rawPacket(3, uint16(len(good)), good, nil), "less than its own 4 bytes"},
		{"length over the bound", rawPacket(4+1<<20, uint16(len(good)), good, nil), "exceeds the limit"},
		{"no header", rawPacket(4, 0, nil, nil), "header length 0"},
		{"header over the bound", rawPacket(4, 2000, nil, nil), "header length 2000"},
		{"garbage header", rawPacket(4, 3, []byte{0xff, 0xff, 0xff}, nil), "malformed packet header"},
		{"data length past the payload", rawPacket(4+10, uint16(len(good)), good, make([]byte, 10)), "data length 1000 does not fit its 10 payload bytes"},
		{"negative data length", rawPacket(4, uint16(len(hdrBytes(0, 1, -5, false))), hdrBytes(0, 1, -5, false), nil), "data length -5"},
		{"partial CRC", rawPacket(4+1003, uint16(len(good)), good, make([]byte, 1003)), "3 checksum bytes are not whole CRCs"},
		{"negative offset", rawPacket(4, uint16(len(hdrBytes(-1, 1, 0, false))), hdrBytes(-1, 1, 0, false), nil), "negative offset"},
		{"truncated", rawPacket(4+8+1000, uint16(len(good)), good, sums), "unexpected EOF"},
		{"truncated prefix", []byte{0, 0, 4}, "unexpected EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := readPacket(bufio.NewReader(bytes.NewReader(tc.in)), 64<<10)
			if tc.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				if h := p.hdr; h.GetSeqno() < 0 || len(p.data) != int(h.GetDataLen()) {
					t.Fatalf("packet %v with %d bytes", h, len(p.data))
				}
				if len(p.data) > 0 && (len(p.crcs) != 2 || chunks.Verify(p.data, p.crcs, 512) >= 0) {
					t.Fatalf("CRCs %v do not check", p.crcs)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("got %v, want an error mentioning %q", err, tc.err)
			}
		})
	}
}

func TestReadDelimited(t *testing.T) {
	msg := appendDelimited(nil, &hdfs.ClientReadStatusProto{Status: hdfs.Status_CHECKSUM_OK.Enum()})
	for _, tc := range []struct {
		name string
		in   []byte
		err  string
		kind errs.Kind
	}{
		{"good", msg, "", 0},
		{"over the bound", binary.AppendUvarint(nil, 101), "ClientReadStatusProto of 101 bytes exceeds the limit of 100", errs.Invalid},
		{"bad varint", bytes.Repeat([]byte{0xff}, 11), "ClientReadStatusProto length", errs.Invalid},
		{"empty", nil, "truncated ClientReadStatusProto", errs.Invalid},
		{"truncated", msg[:len(msg)-1], "truncated ClientReadStatusProto: unexpected EOF", errs.Invalid},
		{"missing required field", appendDelimited(nil, &hdfs.ClientReadStatusProto{}), "required field", errs.Invalid},
		{"garbage", append([]byte{2}, 0xff, 0xff), "malformed ClientReadStatusProto", errs.Invalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m hdfs.ClientReadStatusProto
			err := readDelimited(bufio.NewReader(bytes.NewReader(tc.in)), 100, &m)
			if tc.err == "" {
				if err != nil || m.GetStatus() != hdfs.Status_CHECKSUM_OK {
					t.Fatalf("got %v, %v", &m, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) || errs.KindOf(err) != tc.kind {
				t.Fatalf("got %v (%v), want %v mentioning %q", err, errs.KindOf(err), tc.kind, tc.err)
			}
		})
	}
}

// TestPacketPrefix: what the door sends reads back as what it meant.
func TestPacketPrefix(t *testing.T) {
	data := bytes.Repeat([]byte{1, 2, 3}, 400)
	crcs := chunks.Sums(nil, data, 512)
	b := append(packetPrefix(packetHeader(1024, 2, len(data), false), crcs, len(data)), data...)
	p, err := readPacket(bufio.NewReader(bytes.NewReader(b)), 4096)
	if err != nil || p.hdr.GetOffsetInBlock() != 1024 || p.hdr.GetSeqno() != 2 || !bytes.Equal(p.data, data) || chunks.Verify(p.data, p.crcs, 512) >= 0 {
		t.Fatalf("read back %v, %v", p.hdr, err)
	}
}

func FuzzReadPacket(f *testing.F) {
	data := bytes.Repeat([]byte{9}, 600)
	f.Add(append(packetPrefix(packetHeader(0, 0, len(data), false), chunks.Sums(nil, data, 512), len(data)), data...))
	f.Add(packetPrefix(packetHeader(0, -1, 0, false), nil, 0))
	f.Add(rawPacket(4+1<<20, 10, nil, nil))
	f.Fuzz(func(t *testing.T, in []byte) {
		p, err := readPacket(bufio.NewReader(bytes.NewReader(in)), 4096)
		if err != nil {
			return
		}
		if len(p.data) != int(p.hdr.GetDataLen()) || len(p.data) > 4096 || p.hdr.GetOffsetInBlock() < 0 {
			t.Fatalf("accepted %v with %d data bytes", p.hdr, len(p.data))
		}
	})
}

// nullPaths serve one block of 1000 zero bytes to the token "ok" and
// store what they are sent nowhere.
type nullPaths struct{}

func (nullPaths) ReadBlock(_ context.Context, r ReadRequest, send func(Chunks) error) error {
	if string(r.Token) != "ok" {
		return errs.New(errs.Unauthenticated, "ReadBlock", "", "bad token")
	}
	if r.Offset+r.Length > 1000 {
		return errs.New(errs.Invalid, "ReadBlock", "", "read past the end")
	}
	data := make([]byte, 1000)
	return send(Chunks{Offset: 0, BytesPerChecksum: 512, Data: data, CRCs: chunks.Sums(nil, data, 512)})
}

func (nullPaths) WriteBlock(context.Context, WriteRequest) (BlockStream, error) {
	return &nullStream{acks: make(chan bool, 1<<10)}, nil
}

type nullStream struct{ acks chan bool }

func (s *nullStream) Send(p Packet) error {
	select {
	case s.acks <- p.Last:
		return nil
	default:
		return errs.New(errs.Exhausted, "WriteBlock", "", "full")
	}
}

func (s *nullStream) Ack() (bool, error) {
	select {
	case last := <-s.acks:
		return last, nil
	case <-time.After(time.Second):
		return false, errs.New(errs.Timeout, "WriteBlock", "", "no packet")
	}
}
func (s *nullStream) Close() {}

// FuzzConn: whatever a client sends, the door answers and ends the
// connection without a panic.
func FuzzConn(f *testing.F) {
	tok := Token([]byte("ok"))
	eb := &hdfs.ExtendedBlockProto{PoolId: proto.String("BP-x"), BlockId: proto.Uint64(1), GenerationStamp: proto.Uint64(1)}
	read := appendDelimited([]byte{0, Version, OpReadBlock}, &hdfs.OpReadBlockProto{
		Header: &hdfs.ClientOperationHeaderProto{BaseHeader: &hdfs.BaseHeaderProto{Block: eb, Token: tok}, ClientName: proto.String("f")},
		Offset: proto.Uint64(10), Len: proto.Uint64(100)})
	f.Add(read)
	f.Add(appendDelimited(read, &hdfs.ClientReadStatusProto{Status: hdfs.Status_CHECKSUM_OK.Enum()}))
	f.Add(appendDelimited([]byte{0, Version, OpBlockChecksum}, &hdfs.OpBlockChecksumProto{Header: &hdfs.BaseHeaderProto{Block: eb, Token: tok}}))
	write := appendDelimited([]byte{0, Version, OpWriteBlock}, &hdfs.OpWriteBlockProto{
		Header: &hdfs.ClientOperationHeaderProto{BaseHeader: &hdfs.BaseHeaderProto{Block: eb, Token: tok}, ClientName: proto.String("f")},
		Stage:  hdfs.OpWriteBlockProto_PIPELINE_SETUP_CREATE.Enum(), PipelineSize: proto.Uint32(1), MinBytesRcvd: proto.Uint64(0),
		MaxBytesRcvd: proto.Uint64(0), LatestGenerationStamp: proto.Uint64(0),
		RequestedChecksum: &hdfs.ChecksumProto{Type: hdfs.ChecksumTypeProto_CHECKSUM_CRC32C.Enum(), BytesPerChecksum: proto.Uint32(512)}})
	data := make([]byte, 700)
	write = append(write, packetPrefix(packetHeader(0, 0, len(data), false), chunks.Sums(nil, data, 512), len(data))...)
	write = append(write, data...)
	f.Add(append(write, packetPrefix(packetHeader(700, 1, 0, true), nil, 0)...))
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	s, err := New(Config{Reader: nullPaths{}, Writer: nullPaths{}, PoolID: "BP-x", MaxPacketBytes: 4096, IdleTimeout: time.Second, KeepAlive: time.Millisecond})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		client, server := net.Pipe()
		go func() { io.Copy(io.Discard, client) }()
		go func() { client.Write(in); time.Sleep(time.Millisecond); client.Close() }()
		done := make(chan struct{})
		go func() { s.serveConn(server); server.Close(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("the connection was not ended")
		}
	})
}
