package datanode

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/security"
)

// TestShortReads: a range that fits one message (served without the idle
// watch) and ranges that need more (served watched, the unwatched try
// having sent nothing) each come back whole and right, in as many
// messages as the range takes, and leave no read buffer reserved.
func TestShortReads(t *testing.T) {
	d := startDN(t, testConfig(t))
	c := dataClient(t, d.Addr())
	data := randBytes(3000)
	writeOK(t, c, 9, data)
	info, _ := d.Store().Stat(9)
	bpc := uint64(d.replicaBytesPerChecksum(info))
	span := max(uint64(d.cfg.ChunkSize)/bpc, 1) * bpc
	for _, tc := range []struct {
		name     string
		off, n   uint64
		messages int
	}{
		{"inside one message", 1, span - 2, 1},
		{"across two messages", span - 1, 2, 2},
		{"three messages", span - 1, span + 2, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			s, err := c.ReadBlock(ctx, &api.ReadBlockRequest{Block: &api.Block{Id: 9, GenStamp: 1}, InodeId: testInode,
				Offset: tc.off, Length: tc.n, Token: blockToken(9, 1, security.Read)})
			if err != nil {
				t.Fatal(err)
			}
			var got []byte
			msgs := 0
			for {
				m, err := s.Recv()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				msgs++
				got = append(got, m.Data...)
				if msgs == 1 {
					got = got[tc.off-m.Offset:]
				}
			}
			got = got[:min(uint64(len(got)), tc.n)]
			if !bytes.Equal(got, data[tc.off:tc.off+tc.n]) || msgs != tc.messages {
				t.Fatalf("%d bytes in %d messages, want the range's %d in %d", len(got), msgs, tc.n, tc.messages)
			}
			eventually(t, "read buffers released", func() bool { return d.readBufs.InUse() == 0 })
		})
	}
}

// TestShortReadStalled: a range no longer than a message that still takes
// two messages goes to the idle watch, so a reader that never reads is
// ended as idle (DeadlineExceeded) rather than holding the handler.
func TestShortReadStalled(t *testing.T) {
	cfg := testConfig(t)
	cfg.ChunkSize = 2 << 20 // the first message is more than gRPC's windows take
	cfg.ReadIdleTimeout = 100 * time.Millisecond
	cfg.Store.MaxContainerSize, cfg.MaxBlockSize = 64<<20, 64<<20
	d := startDN(t, cfg)
	c := dataClient(t, d.Addr())
	writeOK(t, c, 11, randBytes(3<<20))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := c.ReadBlock(ctx, &api.ReadBlockRequest{Block: &api.Block{Id: 11, GenStamp: 1}, InodeId: testInode,
		Offset: 600, Length: 2 << 20, Token: blockToken(11, 1, security.Read)})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the stalled read ended as idle", func() bool { return counterValue(d.met.idleStreams) == 1 })
	for {
		if _, err := s.Recv(); err != nil {
			if status.Code(err) != codes.DeadlineExceeded {
				t.Fatalf("stalled reader ended with %v", err)
			}
			break
		}
	}
}
