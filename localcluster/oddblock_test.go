package localcluster_test

import (
	"testing"

	"github.com/blockfs/blockfs/client"
)

// TestOddBlockSize: a block size that is not a multiple of the checksum
// chunk (HDFS's namenode takes one; colinmarc/hdfs's suite writes 1,050,000-
// byte blocks): every full block ends in a short chunk, and writes, reads
// from every offset, appends and the file checksum hold across them.
func TestOddBlockSize(t *testing.T) {
	_, cl := startCluster(t, false)
	const bs = 1500 // 2 chunks of 512 and one of 476
	data := randBytes(4*bs + 321)
	if err := cl.WriteFile(ctxT(t), "/odd", data, client.CreateOptions{Replication: 3, BlockSize: bs, Perm: 0o644}); err != nil {
		t.Fatal(err)
	}
	readBack(t, cl, "/odd", data)
	locs := waitReplicas(t, cl, "/odd", 3)
	if len(locs.Blocks) != 5 {
		t.Fatalf("%d blocks, want 5", len(locs.Blocks))
	}
	for _, b := range locs.Blocks[:4] {
		if b.Block.Length != bs {
			t.Fatalf("block %d holds %d bytes, want %d", b.Block.Id, b.Block.Length, bs)
		}
	}
	for _, off := range []int64{0, 511, 512, 1499, 1500, 1501, 3000, int64(len(data)) - 1} {
		r, err := cl.Open(ctxT(t), "/odd")
		if err != nil {
			t.Fatal(err)
		}
		got := make([]byte, min(700, int64(len(data))-off))
		if _, err := r.ReadAt(got, off); err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		r.Close()
		if string(got) != string(data[off:off+int64(len(got))]) {
			t.Fatalf("read at %d differs", off)
		}
	}
	w, err := cl.Append(ctxT(t), "/odd")
	if err != nil {
		t.Fatal(err)
	}
	more := randBytes(2000)
	if _, err := w.Write(more); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	readBack(t, cl, "/odd", append(data, more...))
}
