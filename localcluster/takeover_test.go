package localcluster_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/errs"
)

// TestCreateTakesOverExpiredLease: a create with overwrite, or an
// append, of a file whose holder's soft limit passed starts the file's
// lease recovery itself, as HDFS's create does, on every door (here the
// Go client's): a file with no byte anywhere is closed at once and the
// call goes on in the same call; one whose pipeline may hold bytes is
// refused with RecoveryInProgress "try again later" and a later call
// succeeds.
func TestCreateTakesOverExpiredLease(t *testing.T) {
	c, _ := startLeaseCluster(t)
	alice, bob := clientAs(t, c, "alice"), clientAs(t, c, "bob")
	ctx := ctxT(t)

	// Nothing written: no block at all.
	w, err := alice.Create(ctx, "/shared/empty", client.CreateOptions{Replication: 3, BlockSize: blockSize, Perm: 0o666})
	if err != nil {
		t.Fatal(err)
	}
	w.Abort()
	if _, err := bob.Create(ctx, "/shared/empty", client.CreateOptions{Overwrite: true, BlockSize: blockSize}); errs.KindOf(err) != errs.Precondition || !strings.Contains(err.Error(), "AlreadyBeingCreated") {
		t.Fatalf("create within alice's soft limit: %v", err)
	}
	time.Sleep(softLimit + 200*time.Millisecond)
	bw, err := bob.Create(ctx, "/shared/empty", client.CreateOptions{Overwrite: true, BlockSize: blockSize})
	if err != nil {
		t.Fatalf("create after alice's soft limit: %v", err)
	}
	mustWrite(t, bw, []byte("bob's"))
	if err := bw.Close(); err != nil {
		t.Fatal(err)
	}
	readBack(t, bob, "/shared/empty", []byte("bob's"))

	// Bytes in the pipeline: recovery runs first; the append that
	// started it is told to try again, and its retry appends.
	data := randBytes(blockSize + 100)
	w = create(t, alice, "/shared/written")
	mustWrite(t, w, data)
	if err := w.Hflush(); err != nil {
		t.Fatal(err)
	}
	w.Abort()
	time.Sleep(softLimit + 200*time.Millisecond)
	attempts := 0
	for {
		attempts++
		aw, err := bob.Append(ctx, "/shared/written")
		if err == nil {
			mustWrite(t, aw, []byte("tail"))
			if err := aw.Close(); err != nil {
				t.Fatal(err)
			}
			break
		}
		if errs.KindOf(err) != errs.Precondition || !strings.Contains(err.Error(), "Try again later") {
			t.Fatalf("append %d after alice's soft limit: %v", attempts, err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no append succeeded in %d attempts: %v", attempts, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	if attempts < 2 {
		t.Fatalf("the first append after the soft limit succeeded: it was not told to wait for the recovery of hflushed bytes")
	}
	readBack(t, bob, "/shared/written", bytes.Join([][]byte{data, []byte("tail")}, nil))
}
