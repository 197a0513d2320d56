package datanode

import (
	"context"
	"testing"
	"time"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
)

// TestPacer: the pacer's arithmetic, read from its limiter's reservations
// at explicit instants (no clock is read): a tenth of a second's bytes of
// burst, then the configured rate, shared by every caller; unlimited
// never waits; a wait that cannot finish by the deadline or is canceled
// fails at once with its kind.
func TestPacer(t *testing.T) {
	for _, tc := range []struct {
		rate, burst int64
	}{
		{64 << 20, 1 << 20}, // capped at 1 MiB
		{10 << 20, 1 << 20},
		{1 << 20, 1 << 20 / 10},
		{1000, 4 << 10}, // at least 4 KiB
	} {
		p := newPacer(tc.rate)
		if int64(p.lim.Burst()) != tc.burst {
			t.Fatalf("rate %d: burst %d, want %d", tc.rate, p.lim.Burst(), tc.burst)
		}
		t0 := time.Unix(1000, 0)
		// The burst goes at once; then one transfer's next burst and a
		// second transfer's after it wait one and two bursts' time: the
		// rate is the datanode's, not each transfer's.
		if d := p.lim.ReserveN(t0, int(tc.burst)).DelayFrom(t0); d != 0 {
			t.Fatalf("rate %d: the burst waits %v", tc.rate, d)
		}
		per := time.Duration(float64(tc.burst) / float64(tc.rate) * float64(time.Second))
		for i := 1; i <= 2; i++ {
			d := p.lim.ReserveN(t0, int(tc.burst)).DelayFrom(t0)
			if want := time.Duration(i) * per; d < want-time.Millisecond || d > want+time.Millisecond {
				t.Fatalf("rate %d: burst %d waits %v, want %v", tc.rate, i, d, want)
			}
		}
	}
	ctx := context.Background()
	if err := newPacer(0).wait(ctx, 1<<30); err != nil {
		t.Fatal(err)
	}
	var none *pacer
	if err := none.wait(ctx, 1<<30); err != nil {
		t.Fatal(err)
	}
	slow := newPacer(4 << 10)
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := slow.wait(short, 1<<20); !errs.Is(err, errs.Timeout) { // 256 s of bytes
		t.Fatalf("past the deadline: %v", err)
	}
	gone, cancel2 := context.WithCancel(ctx)
	cancel2()
	if err := slow.wait(gone, 1<<20); !errs.Is(err, errs.Canceled) {
		t.Fatalf("canceled: %v", err)
	}
}

// TestTransferPaced: a datanode's copies go through its pacer. At 4 KiB/s
// a 64 KiB copy cannot finish within half a second, and the transfer says
// so at once (Timeout) rather than sending; the same copy from a datanode
// without a limit lands.
func TestTransferPaced(t *testing.T) {
	target := startDN(t, testConfig(t))
	data := randBytes(64 << 10)
	for _, tc := range []struct {
		name string
		bw   int64
		kind errs.Kind
	}{{"unlimited", 0, 0}, {"4 KiB/s", 4 << 10, errs.Timeout}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			cfg.ReplicationBandwidth = tc.bw
			d := startDN(t, cfg)
			id := uint64(100 + tc.bw)
			writeOK(t, dataClient(t, d.Addr()), id, data)
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			_, err := d.transfer(ctx, &api.Block{Id: id, GenStamp: 1, Length: uint64(len(data))}, testInode,
				copyToken(id, 1, target.ID()), []*api.DatanodeInfo{{Id: target.ID(), Addr: target.Addr()}}, nil)
			if tc.kind == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if _, ok := target.Store().Stat(id); !ok {
					t.Fatal("the copy did not land")
				}
				return
			}
			if !errs.Is(err, tc.kind) {
				t.Fatalf("paced transfer: %v, want %v", err, tc.kind)
			}
		})
	}
}
