package datanode

import (
	"bytes"
	"context"
	"testing"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/base/chunks"
	"github.com/blockfs/blockfs/lbm"
)

// TestCopyOnTruncate: a copy-on-truncate's update makes the new block
// from the old replica's prefix and leaves the old replica whole; it
// refuses a source of another inode, of another generation, or too
// short; a repeat is success, and a restarted recovery (a newer id)
// makes the copy again over an earlier attempt's.
func TestCopyOnTruncate(t *testing.T) {
	d := startDN(t, testConfig(t))
	ctx := context.Background()
	data := randBytes(3000)
	bw, err := d.Store().CreateWith(ctx, lbm.BlockMeta{ID: 21, Inode: 7, GenStamp: 100}, lbm.CreateOptions{BytesPerChecksum: 512, OpenEnded: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := bw.Write(data, chunks.Sums(nil, data, 512)); err != nil {
		t.Fatal(err)
	}
	if _, err := bw.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	src := &api.Block{Id: 21, GenStamp: 100, Length: 3000}
	for _, tc := range []struct {
		name  string
		inode uint64
		from  *api.Block
		n     int64
		kind  errs.Kind
	}{
		{"another inode's replica", 8, src, 1000, errs.Permission},
		{"another generation", 7, &api.Block{Id: 21, GenStamp: 99, Length: 3000}, 1000, errs.Precondition},
		{"too short", 7, src, 3001, errs.Precondition},
		{"no such replica", 7, &api.Block{Id: 22, GenStamp: 100}, 1000, errs.NotFound},
	} {
		if _, err := d.copyOnTruncate(ctx, 30, 200, tc.inode, tc.from, tc.n); errs.KindOf(err) != tc.kind {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.kind)
		}
	}
	if _, ok := d.Store().Stat(30); ok {
		t.Fatal("a refused copy left a block behind")
	}
	info, err := d.copyOnTruncate(ctx, 30, 200, 7, src, 1234)
	if err != nil || info.ID != 30 || info.GenStamp != 200 || info.Length != 1234 || info.Inode != 7 {
		t.Fatalf("copy: %+v %v", info, err)
	}
	if again, err := d.copyOnTruncate(ctx, 30, 200, 7, src, 1234); err != nil || again.CRC != info.CRC {
		t.Fatalf("repeated copy: %+v %v", again, err)
	}
	if _, err := d.copyOnTruncate(ctx, 30, 199, 7, src, 1234); errs.KindOf(err) != errs.Precondition {
		t.Fatalf("an older recovery's copy over a newer one: %v", err)
	}
	// A restarted recovery (a newer id) makes the copy again, over the
	// earlier attempt's.
	if re, err := d.copyOnTruncate(ctx, 30, 201, 7, src, 1234); err != nil || re.GenStamp != 201 || re.CRC != info.CRC {
		t.Fatalf("a restarted recovery's copy: %+v %v", re, err)
	}
	for id, want := range map[uint64][]byte{30: data[:1234], 21: data} {
		got, err := d.Store().Read(ctx, id, 0, int64(len(want)))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("block %d after the copy: %d bytes, %v", id, len(got), err)
		}
	}
}
