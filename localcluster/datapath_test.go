package localcluster_test

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/localcluster"
)

// wireFlipper flips one bit, once while armed, in the data of a
// WriteBlock packet the client sends or of a ReadBlock message it
// receives: a bad link between the client and a datanode.
type wireFlipper struct {
	write, read atomic.Bool // armed
	flips       atomic.Int32
}

func (f *wireFlipper) dialOption() grpc.DialOption {
	return grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		s, err := streamer(ctx, desc, cc, method, opts...)
		if err != nil {
			return s, err
		}
		return &wireFlipStream{ClientStream: s, f: f}, nil
	})
}

type wireFlipStream struct {
	grpc.ClientStream
	f *wireFlipper
}

func (s *wireFlipStream) SendMsg(m any) error {
	if r, ok := m.(*api.WriteBlockRequest); ok {
		if p := r.GetPacket(); p != nil && len(p.Data) > 0 && s.f.write.CompareAndSwap(true, false) {
			data := bytes.Clone(p.Data) // the writer's buffer stays intact
			data[len(data)-1] ^= 1
			s.f.flips.Add(1)
			m = &api.WriteBlockRequest{Msg: &api.WriteBlockRequest_Packet{Packet: &api.WritePacket{
				Seqno: p.Seqno, Offset: p.Offset, Data: data, Crcs: p.Crcs, Last: p.Last}}}
		}
	}
	return s.ClientStream.SendMsg(m)
}

func (s *wireFlipStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if r, ok := m.(*api.ReadBlockResponse); ok && err == nil && len(r.Data) > 0 && s.f.read.CompareAndSwap(true, false) {
		r.Data[0] ^= 0x40
		s.f.flips.Add(1)
	}
	return err
}

// TestClientCatchesBitFlips: a bit flipped on the wire between the client
// and a datanode is caught by a chunk CRC on either direction. A write
// fails over to a pipeline without the datanode that caught it and the
// file is intact on every replica; a read reports the replica and reads
// the block from another one.
func TestClientCatchesBitFlips(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Config{Namenodes: 1, Datanodes: 4, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.WaitDatanodes(ctx); err != nil {
		t.Fatal(err)
	}
	f := &wireFlipper{}
	cc := client.DefaultConfig(c.NamenodeAddrs()...)
	cc.User = "root"
	cc.DialOptions = append(cc.DialOptions, f.dialOption())
	cl, err := client.New(cc)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	data := bytes.Repeat([]byte("blockfs data path "), 200_000) // 3.6 MB: 4 blocks
	f.write.Store(true)
	if err := cl.WriteFile(ctx, "/f", data, client.CreateOptions{Replication: 3, BlockSize: 1 << 20, Perm: 0o644}); err != nil {
		t.Fatalf("write with one flipped bit: %v", err)
	}
	if f.flips.Load() != 1 {
		t.Fatalf("%d flips", f.flips.Load())
	}
	// Every replica of every block holds the writer's bytes.
	locs, err := cl.GetBlockLocations(ctx, "/f", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]int{}
	for i := range c.Datanodes() {
		byID[c.DatanodeID(i)] = i
	}
	for _, lb := range locs.Blocks {
		if lb.Block.Crc32C == nil {
			t.Fatalf("block %d has no CRC in the namespace", lb.Block.Id)
		}
		for _, d := range lb.Locations {
			st := c.Datanode(byID[d.Id]).Store()
			cr, err := st.ReadChunks(ctx, lb.Block.Id, 0, 0, nil)
			if err != nil {
				t.Fatalf("replica of block %d on %s: %v", lb.Block.Id, d.Id, err)
			}
			if !bytes.Equal(cr.Data, data[lb.Offset:lb.Offset+lb.Block.Length]) {
				t.Fatalf("replica of block %d on %s differs", lb.Block.Id, d.Id)
			}
		}
	}

	f.read.Store(true)
	got, err := cl.ReadFile(ctx, "/f")
	if err != nil {
		t.Fatalf("read with one flipped bit: %v", err)
	}
	if f.flips.Load() != 2 || !bytes.Equal(got, data) {
		t.Fatalf("flips %d, read back equal %v", f.flips.Load(), bytes.Equal(got, data))
	}
}
