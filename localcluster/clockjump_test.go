package localcluster_test

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/localcluster"
	"github.com/blockfs/blockfs/namenode"
)

// TestLeaderClockJumpRecoversNoLiveWriter: the leader's wall clock jumps
// 20 s ahead (ten hard limits; within the datanodes' token clock skew) while a writer holds a file open and renews its lease.
// The lease table's renewal stamps are the old clock's, so by them every
// holder is far past the hard limit; the lease monitor must still not
// recover the live writer's file (it times silence on its own monotonic
// clock), and the writer goes on to hflush, close and read back every byte.
// Before the monitor had its own watch, it recovered the file at its next
// pass and the writer's next hflush failed.
func TestLeaderClockJumpRecoversNoLiveWriter(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var offset atomic.Int64
	c, err := localcluster.Start(ctx, localcluster.Config{
		Namenodes: 1, Datanodes: 3, Dir: t.TempDir(),
		Namenode: func(i int, nc *namenode.Config) {
			nc.Now = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
			nc.Leases.SoftLimit, nc.Leases.HardLimit = softLimit, hardLimit
			nc.Leases.CheckInterval, nc.Leases.RecoveryTimeout = 50*time.Millisecond, 3*time.Second
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl := clientAs(t, c, "root")
	w, err := cl.Create(ctx, "/open", client.CreateOptions{Replication: 3, BlockSize: blockSize, Perm: 0o644})
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Repeat([]byte("live writer "), 100)
	mustWrite(t, w, want[:600])
	if err := w.Hflush(); err != nil {
		t.Fatal(err)
	}
	offset.Store(int64(20 * time.Second))
	// Many monitor passes, and the hard limit again on the real clock.
	time.Sleep(hardLimit + 500*time.Millisecond)
	mustWrite(t, w, want[600:])
	if err := w.Hflush(); err != nil {
		t.Fatalf("hflush after the leader's clock jumped: %v (the monitor recovered a live writer's file)", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("close after the clock jump: %v", err)
	}
	got, err := cl.ReadFile(ctx, "/open")
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes (err %v), want the %d written", len(got), err, len(want))
	}
}
