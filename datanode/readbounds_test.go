package datanode

import (
	"context"
	"runtime"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/security"
)

// stalledClient connects as user with the smallest HTTP/2 windows gRPC
// allows (64 KiB, which also turns off its window growth), so a stream it
// never reads holds the datanode's sends after 64 KiB.
func stalledClient(t *testing.T, addr, user string) api.DataServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(security.SimpleCredentials(security.Identity{Role: security.RoleUser, Name: user})),
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return api.NewDataServiceClient(conn)
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// TestReadBuffersBounded (finding 5): ReadBlock streams that are never
// read hold no more of the datanode's memory than --read-buffer-bytes-*
// allow (the streams past the per-user cap are refused with
// ResourceExhausted and counted), another user's read succeeds meanwhile,
// and the stalled streams are ended by --read-idle-timeout with
// DeadlineExceeded, giving their bytes back.
func TestReadBuffersBounded(t *testing.T) {
	cfg := testConfig(t)
	cfg.ChunkSize = 256 << 10
	cfg.Store.MaxContainerSize = 64 << 20
	cfg.MaxBlockSize = 64 << 20
	cfg.ReadBufferBytesPerUser = 8 << 20 // three streams of 256 KiB messages (2.3 MiB each)
	cfg.ReadBufferBytesTotal = 12 << 20
	cfg.ReadIdleTimeout = 2 * time.Second
	d := startDN(t, cfg)
	data := randBytes(8 << 20)
	writeOK(t, dataClient(t, d.Addr()), 9, data)

	const streams = 40
	before := heapInUse()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	alice := stalledClient(t, d.Addr(), "alice")
	var stalled []api.DataService_ReadBlockClient
	for range streams {
		s, err := alice.ReadBlock(ctx, &api.ReadBlockRequest{Block: &api.Block{Id: 9, GenStamp: 1}, InodeId: testInode, Token: blockToken(9, 1, security.Read)})
		if err != nil {
			t.Fatal(err)
		}
		stalled = append(stalled, s) // never read until the end
	}
	eventually(t, "alice's streams refused or holding their reservation", func() bool {
		return counterValue(d.met.readRefused.WithLabelValues("per_user"))+float64(d.readBufs.InUse()/readReservation(cfg.ChunkSize)) >= streams
	})
	held := heapInUse() - min(before, heapInUse())
	t.Logf("%d stalled streams: heap grew %d KiB (%d KiB a stream, client side included); %d bytes reserved, cap %d",
		streams, held>>10, held/streams>>10, d.readBufs.InUse(), cfg.ReadBufferBytesPerUser)
	if got := d.readBufs.InUse(); got > int(cfg.ReadBufferBytesPerUser) {
		t.Fatalf("alice holds %d bytes of read buffers, cap %d", got, cfg.ReadBufferBytesPerUser)
	}
	// The reservation is the real memory: the heap (client side and
	// connection buffers included) grows by about what is reserved, not by
	// 2.3 MiB for each of the 40 streams.
	if held > uint64(cfg.ReadBufferBytesPerUser)*3/2 {
		t.Fatalf("heap grew %d KiB for the stalled streams, %d KiB reserved", held>>10, d.readBufs.InUse()>>10)
	}
	if counterValue(d.met.readRefused.WithLabelValues("per_user")) == 0 {
		t.Fatal("no stream refused past the per-user cap")
	}
	// Bob is not held up by alice.
	bob := dataClientAs(t, d.Addr(), "bob")
	if got, err := read(bob, 9, 1, 0, 0); err != nil || len(got) != len(data) {
		t.Fatalf("bob's read during alice's stall: %d bytes, %v", len(got), err)
	}
	// The idle timeout ends alice's stalled streams and frees their bytes.
	eventually(t, "stalled streams ended by the idle timeout", func() bool {
		return d.readBufs.InUse() == 0 && counterValue(d.met.readRefused.WithLabelValues("idle")) > 0
	})
	for _, s := range stalled {
		var err error
		for err == nil {
			_, err = s.Recv() // what the transport buffered, then the status
		}
		if c := status.Code(err); c != codes.ResourceExhausted && c != codes.DeadlineExceeded {
			t.Fatalf("a stalled stream ended with %v", err)
		}
	}
}

// dataClientAs connects to a datanode as user (simple auth).
func dataClientAs(t *testing.T, addr, user string) api.DataServiceClient {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(security.SimpleCredentials(security.Identity{Role: security.RoleUser, Name: user})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return api.NewDataServiceClient(conn)
}
