package datanode

import (
	"context"
	"testing"
	"time"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/internal/base/chunks"
	"github.com/blockfs/blockfs/lbm"
)

// TestWaitingReplicaRecovery: replicas hsynced before a restart come back
// as waiting replicas: block recovery sees one as being written with its
// synced length and finalizes a prefix of it; the expiry drops another.
func TestWaitingReplicaRecovery(t *testing.T) {
	cfg := testConfig(t)
	d := startDN(t, cfg)
	data := randBytes(3000)
	for _, id := range []uint64{11, 12} {
		bw, err := d.Store().CreateWith(context.Background(), lbm.BlockMeta{ID: id, Inode: 5, GenStamp: 100},
			lbm.CreateOptions{BytesPerChecksum: 512, OpenEnded: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := bw.Write(data, chunks.Sums(nil, data, 512)); err != nil {
			t.Fatal(err)
		}
		if err := bw.Sync(); err != nil {
			t.Fatal(err)
		}
		d.rbws.add(&rbw{id: id, inode: 5, bpc: 512, bw: bw}, func() {})
		d.rbws.get(id).release()
	}
	d.Close()

	d = startDN(t, cfg)
	if got := d.Store().OpenStats().WaitingReplicas; got != 2 {
		t.Fatalf("%d waiting replicas after restart, want 2", got)
	}
	ctx := context.Background()
	st, err := d.initReplicaRecovery(ctx, 11, 200)
	if err != nil || st.State != api.ReplicaState_REPLICA_STATE_RBW || st.GenStamp != 100 || st.Length != 3000 {
		t.Fatalf("init replica recovery: %+v %v", st, err)
	}
	if _, err := d.updateReplicaUnderRecovery(ctx, 11, 200, 3001); err == nil {
		t.Fatal("finalized more bytes than the waiting replica holds")
	}
	info, err := d.updateReplicaUnderRecovery(ctx, 11, 200, 2000)
	if err != nil || info.GenStamp != 200 || info.Length != 2000 {
		t.Fatalf("update replica under recovery: %+v %v", info, err)
	}
	if again, err := d.updateReplicaUnderRecovery(ctx, 11, 200, 2000); err != nil || again.CRC != info.CRC {
		t.Fatalf("repeated update: %+v %v", again, err)
	}
	got, err := d.Store().Read(ctx, 11, 0, 2000)
	if err != nil || string(got) != string(data[:2000]) {
		t.Fatalf("recovered replica: %v", err)
	}
	d.expireWaiting(time.Now().Add(-time.Hour))
	if _, ok := d.Store().Waiting(12); !ok {
		t.Fatal("dropped a waiting replica synced within the expiry")
	}
	d.expireWaiting(time.Now().Add(time.Minute))
	if _, ok := d.Store().Waiting(12); ok {
		t.Fatal("a waiting replica past the expiry is still there")
	}
	if st, err := d.initReplicaRecovery(ctx, 12, 200); err != nil || st.State != api.ReplicaState_REPLICA_STATE_NONE {
		t.Fatalf("init replica recovery of a dropped replica: %+v %v", st, err)
	}
}
