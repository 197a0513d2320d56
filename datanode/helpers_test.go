package datanode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/internal/base/chunks"
	"github.com/blockfs/blockfs/security"
)

func testConfig(t *testing.T, nns ...string) Config {
	c := DefaultConfig()
	c.DataDirs = []string{t.TempDir(), t.TempDir()}
	c.GRPCAddr = "127.0.0.1:0"
	c.HTTPAddr = "127.0.0.1:0"
	c.Namenodes = nns
	c.HeartbeatInterval = 20 * time.Millisecond
	c.IncrementalReportDelay = time.Millisecond
	c.RPCTimeout = time.Second
	c.ChunkSize = 100
	c.Store.Capacity = 1 << 30
	c.Store.MaxContainerSize = 1 << 20
	c.MaxBlockSize = 1 << 20
	c.Logger = slog.New(slog.DiscardHandler)
	c.Auth = AuthSimple
	return c
}

func startDN(t *testing.T, cfg Config) *Datanode {
	t.Helper()
	d, err := Start(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	// Datanodes started without a (fake) namenode learn the test key here,
	// as they would from a heartbeat reply.
	d.tokens.merge([][]byte{signer().pub})
	return d
}

// dataClient connects to a datanode as a user (simple auth).
func dataClient(t *testing.T, addr string) api.DataServiceClient {
	conn, err := grpc.NewClient(addr, dataDialOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return api.NewDataServiceClient(conn)
}

func dataDialOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(security.SimpleCredentials(security.Identity{Role: security.RoleUser, Name: "alice"}))}
}

func hdr(id, gen, length uint64, pipeline ...*api.DatanodeInfo) *api.WriteBlockRequest {
	return &api.WriteBlockRequest{Msg: &api.WriteBlockRequest_Header{Header: &api.WriteBlockHeader{
		Block: &api.Block{Id: id, GenStamp: gen, Length: length}, InodeId: testInode, Pipeline: pipeline,
		Token: blockToken(id, gen, security.Write)}}}
}

// pkt is packet seq at off carrying data with correct 512-byte chunk CRCs.
func pkt(seq, off uint64, data []byte, last bool) *api.WriteBlockRequest {
	return &api.WriteBlockRequest{Msg: &api.WriteBlockRequest_Packet{Packet: &api.WritePacket{
		Seqno: seq, Offset: off, Data: data, Crcs: chunks.Sums(nil, data, 512), Last: last}}}
}

// packets cuts data into packets of size bytes (a multiple of 512).
func packets(data []byte, size int) []*api.WriteBlockRequest {
	var out []*api.WriteBlockRequest
	for off := 0; ; off += size {
		end := min(off+size, len(data))
		out = append(out, pkt(uint64(len(out)), uint64(off), data[off:end], end == len(data)))
		if end == len(data) {
			return out
		}
	}
}

// msgs is a header followed by data in 512-byte packets.
func msgs(h *api.WriteBlockRequest, data []byte) []*api.WriteBlockRequest {
	return append([]*api.WriteBlockRequest{h}, packets(data, 512)...)
}

// write sends msgs, half-closes, and returns the final ack, the trailer
// and the error.
func write(t *testing.T, c api.DataServiceClient, msgs ...*api.WriteBlockRequest) (*api.WriteBlockAck, metadata.MD, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := c.WriteBlock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if s.Send(m) != nil {
			break
		}
	}
	s.CloseSend()
	for {
		a, err := s.Recv()
		if err == io.EOF {
			return nil, s.Trailer(), errors.New("stream ended without a final ack")
		}
		if err != nil {
			return nil, s.Trailer(), err
		}
		if a.Last {
			return a, s.Trailer(), nil
		}
	}
}

// read reads [off, off+n) (n 0: to the end), checking every chunk CRC and
// trimming the chunk-aligned messages to the range.
func read(c api.DataServiceClient, id, gen, off, n uint64) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := c.ReadBlock(ctx, &api.ReadBlockRequest{Block: &api.Block{Id: id, GenStamp: gen}, InodeId: testInode,
		Offset: off, Length: n, Token: blockToken(id, gen, security.Read)})
	if err != nil {
		return nil, err
	}
	var out []byte
	pos := off
	for {
		m, err := s.Recv()
		if err == io.EOF {
			if n > 0 && uint64(len(out)) > n {
				out = out[:n]
			}
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if chunks.Verify(m.Data, m.Crcs, int(m.BytesPerChecksum)) >= 0 || m.Offset > pos || m.Offset%uint64(m.BytesPerChecksum) != 0 {
			return nil, fmt.Errorf("bad message at offset %d", m.Offset)
		}
		out = append(out, m.Data[pos-m.Offset:]...)
		pos = m.Offset + uint64(len(m.Data))
	}
}

func randBytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rand.N(256))
	}
	return b
}

func writeOK(t *testing.T, c api.DataServiceClient, id uint64, data []byte, pipeline ...*api.DatanodeInfo) *api.WriteBlockAck {
	t.Helper()
	resp, _, err := write(t, c, append([]*api.WriteBlockRequest{hdr(id, 1, uint64(len(data)), pipeline...)}, packets(data, 1024)...)...)
	if err != nil {
		t.Fatalf("write block %d: %v", id, err)
	}
	return resp
}

// badCRC returns m with its packet changed by f.
func badCRC(m *api.WriteBlockRequest, f func(*api.WritePacket)) *api.WriteBlockRequest {
	f(m.GetPacket())
	return m
}

// withBPC returns header m with bytes per checksum bpc.
func withBPC(m *api.WriteBlockRequest, bpc uint32) *api.WriteBlockRequest {
	m.GetHeader().BytesPerChecksum = bpc
	return m
}
