package datanode

import (
	"bytes"
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/security"
)

// flipper is a client stream interceptor that, while armed, flips one bit
// in the data of the first WriteBlock packet it sends (a copy: the
// sender's buffer stays intact), as a bad link or NIC would.
type flipper struct {
	armed atomic.Bool
	flips atomic.Int32
}

func (f *flipper) dialOption() grpc.DialOption {
	return grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		s, err := streamer(ctx, desc, cc, method, opts...)
		if err != nil || method != api.DataService_WriteBlock_FullMethodName {
			return s, err
		}
		return &flipStream{ClientStream: s, f: f}, nil
	})
}

type flipStream struct {
	grpc.ClientStream
	f *flipper
}

func (s *flipStream) SendMsg(m any) error {
	if r, ok := m.(*api.WriteBlockRequest); ok {
		if p := r.GetPacket(); p != nil && len(p.Data) > 0 && s.f.armed.CompareAndSwap(true, false) {
			data := bytes.Clone(p.Data)
			data[len(data)/2] ^= 0x10
			s.f.flips.Add(1)
			m = &api.WriteBlockRequest{Msg: &api.WriteBlockRequest_Packet{Packet: &api.WritePacket{
				Seqno: p.Seqno, Offset: p.Offset, Data: data, Crcs: p.Crcs, Last: p.Last}}}
		}
	}
	return s.ClientStream.SendMsg(m)
}

// TestBitFlippedInTransit: a bit flipped between the client and the first
// datanode, or between two datanodes, is caught by the receiving datanode
// before any ack; the write fails naming that datanode and the chunk's
// offset, and no replica of the block is left anywhere.
func TestBitFlippedInTransit(t *testing.T) {
	for _, hop := range []string{"client to first", "first to second"} {
		t.Run(hop, func(t *testing.T) {
			f := &flipper{}
			cfgA := testConfig(t)
			if hop == "first to second" {
				cfgA.DialOptions = append(cfgA.DialOptions, f.dialOption())
			}
			a, b := startDN(t, cfgA), startDN(t, testConfig(t))
			c := dataClient(t, a.Addr())
			if hop == "client to first" {
				c = dataClientWith(t, a.Addr(), f.dialOption())
			}
			data := randBytes(3000)
			f.armed.Store(true)
			next := []*api.DatanodeInfo{{Id: b.ID(), Addr: b.Addr()}}
			ack, tr, err := write(t, c, append([]*api.WriteBlockRequest{hdr(1, 1, 3000, next...)}, packets(data, 1024)...)...)
			if f.flips.Load() != 1 {
				t.Fatalf("%d flips", f.flips.Load())
			}
			catcher := a
			if hop == "first to second" {
				catcher = b
			}
			if status.Code(err) != codes.DataLoss || ack != nil {
				t.Fatalf("write with a flipped bit: ack %v, err %v; want DataLoss", ack, err)
			}
			if v := tr.Get(BadNodeKey); len(v) != 1 || v[0] != catcher.ID() {
				t.Fatalf("bad node %v, want %s", v, catcher.ID())
			}
			if v := tr.Get(BadOffsetKey); len(v) != 1 || v[0] != "512" {
				t.Fatalf("bad offset %v, want 512 (the chunk holding the flipped bit)", v)
			}
			if n := counterValue(catcher.met.corruptPackets); n != 1 {
				t.Fatalf("corrupt packets on %s = %v", catcher.ID(), n)
			}
			for _, d := range []*Datanode{a, b} {
				eventually(t, "no replica and no held bytes", func() bool {
					_, ok := d.Store().Stat(1)
					return !ok && d.inflightBytes.used.Load() == 0
				})
			}
			// The same block written again (the link is fine now) is
			// stored intact on both: nothing of the failed try remains.
			writeOK(t, c, 1, data, next...)
			for _, d := range []*Datanode{a, b} {
				if got, err := read(dataClient(t, d.Addr()), 1, 1, 0, 0); err != nil || !bytes.Equal(got, data) {
					t.Fatalf("replica on %s: %v", d.ID(), err)
				}
			}
		})
	}
}

func dataClientWith(t *testing.T, addr string, opt grpc.DialOption) api.DataServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(addr, append(dataDialOptions(), opt)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return api.NewDataServiceClient(conn)
}

// TestRangeReadSeeksPastCorruption: a bit flipped on disk is caught by a
// range read that touches its chunk, not by one that does not, and a
// small range read reads only its chunks from disk.
func TestRangeReadSeeksPastCorruption(t *testing.T) {
	d := startDN(t, testConfig(t))
	c := dataClient(t, d.Addr())
	data := randBytes(64 << 10)
	writeOK(t, c, 3, data)
	info, _ := d.Store().Stat(3)
	corruptOnDisk(t, info.Container+".data", data) // flips the byte at 32 KiB
	tests := []struct {
		name   string
		off, n uint64
		code   codes.Code
	}{
		{"before the chunk", 0, 1000, codes.OK},
		{"after the chunk", 40 << 10, 4 << 10, codes.OK},
		{"ends just before", 30 << 10, 2 << 10, codes.OK},
		{"touches the chunk", 32<<10 - 10, 20, codes.DataLoss},
		{"whole block", 0, 0, codes.DataLoss},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := d.Store().DiskBytesRead()
			got, err := read(c, 3, 1, tc.off, tc.n)
			if status.Code(err) != tc.code {
				t.Fatalf("read [%d,+%d): %v, want %v", tc.off, tc.n, err, tc.code)
			}
			if err != nil {
				if !bytes.Contains([]byte(status.Convert(err).Message()), []byte("block 3: chunk at block offset "+strconv.Itoa(32<<10))) {
					t.Fatalf("error does not name the chunk: %v", err)
				}
				return
			}
			if !bytes.Equal(got, data[tc.off:tc.off+tc.n]) {
				t.Fatal("wrong bytes")
			}
			// Only the touched chunks and their CRCs come off the disk.
			if rd, most := d.Store().DiskBytesRead()-before, int64(tc.n)+2*512+1024; rd > most {
				t.Fatalf("read %d bytes from disk for a %d-byte range", rd, tc.n)
			}
		})
	}
}

// TestWriterDisconnectsMidBlock: a writer that goes away after some
// acknowledged packets leaves no replica on any pipeline member, and the
// id is free for a new write.
func TestWriterDisconnectsMidBlock(t *testing.T) {
	a, b := startDN(t, testConfig(t)), startDN(t, testConfig(t))
	c := dataClient(t, a.Addr())
	data := randBytes(4096)
	next := &api.DatanodeInfo{Id: b.ID(), Addr: b.Addr()}
	ctx, cancel := context.WithCancel(context.Background())
	s, err := c.WriteBlock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []*api.WriteBlockRequest{hdr(4, 1, 4096, next), pkt(0, 0, data[:1024], false), pkt(1, 1024, data[1024:2048], false)} {
		if err := s.Send(m); err != nil {
			t.Fatal(err)
		}
	}
	for seq := uint64(0); seq < 2; seq++ {
		if ack, err := s.Recv(); err != nil || ack.Seqno != seq {
			t.Fatalf("ack %v, %v", ack, err)
		}
	}
	cancel()
	for _, d := range []*Datanode{a, b} {
		eventually(t, "the partial replica dropped", func() bool {
			return d.inflightBytes.used.Load() == 0 && len(d.Store().Blocks()) == 0
		})
	}
	writeOK(t, c, 4, data, next)
}

// TestInflightCap: many streams at once never hold more packet bytes
// than the cap; the ones over it wait (and the sender with them).
func TestInflightCap(t *testing.T) {
	cfg := testConfig(t)
	cfg.MaxPacketBytes = 16 << 10
	cfg.MaxInflightBytes = 64 << 10
	cfg.Store.MaxContainerSize = 64 << 20
	cfg.MaxBlockSize = 64 << 20
	d := startDN(t, cfg)
	c := dataClient(t, d.Addr())
	const streams = 12
	blocks := make([][]byte, streams)
	var wg sync.WaitGroup
	for i := range streams {
		blocks[i] = randBytes(512 << 10)
		wg.Go(func() {
			if _, _, err := write(t, c, append([]*api.WriteBlockRequest{hdr(uint64(100+i), 1, 512<<10)}, packets(blocks[i], 16<<10)...)...); err != nil {
				t.Errorf("stream %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if peak := d.inflightBytes.peak.Load(); peak > cfg.MaxInflightBytes || peak == 0 {
		t.Fatalf("peak in-flight %d, cap %d", peak, cfg.MaxInflightBytes)
	}
	if used := d.inflightBytes.used.Load(); used != 0 {
		t.Fatalf("%d bytes still held", used)
	}
	for i := range streams {
		if got, err := read(c, uint64(100+i), 1, 0, 0); err != nil || !bytes.Equal(got, blocks[i]) {
			t.Fatalf("block %d: %v", 100+i, err)
		}
	}
}

// TestIdleStreams: a reader that never reads and a writer that stops
// sending are ended by the idle timeout, not held forever.
func TestIdleStreams(t *testing.T) {
	cfg := testConfig(t)
	cfg.StreamIdleTimeout = 100e6 // 100ms
	cfg.ReadIdleTimeout = 100e6
	cfg.Store.MaxContainerSize = 64 << 20
	cfg.MaxBlockSize = 64 << 20
	d := startDN(t, cfg)
	c := dataClient(t, d.Addr())
	data := randBytes(8 << 20)
	writeOK(t, c, 5, data)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rs, err := c.ReadBlock(ctx, &api.ReadBlockRequest{Block: &api.Block{Id: 5, GenStamp: 1}, InodeId: testInode, Token: blockToken(5, 1, security.Read)})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := c.WriteBlock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ws.Send(hdr(6, 1, 4096))
	ws.Send(pkt(0, 0, data[:1024], false))
	eventually(t, "both streams ended as idle", func() bool { return counterValue(d.met.idleStreams) == 2 })
	for {
		if _, err := rs.Recv(); err != nil {
			if status.Code(err) != codes.DeadlineExceeded {
				t.Fatalf("idle reader ended with %v", err)
			}
			break
		}
	}
	for {
		ack, err := ws.Recv()
		if err != nil {
			break
		}
		if ack.Last || ack.Seqno != 0 {
			t.Fatalf("idle writer got ack %v", ack)
		}
	}
	if _, ok := d.Store().Stat(6); ok {
		t.Fatal("idle writer's block visible")
	}
}

func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}
