package localcluster_test

import (
	"bytes"
	"hash/crc32"
	"io"
	"strings"
	"testing"

	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/errs"
)

// TestAppendTwice: a file appended twice reads back exactly, whole and by
// ranges that cross where the appends began, its checksum is the CRC32C of
// all its bytes, and each block starts where the ones before it end. With
// Append the short last block is reopened and filled (every block but the
// last is full); with AppendNewBlock (NEW_BLOCK) each append starts a
// block after it.
func TestAppendTwice(t *testing.T) {
	_, cl := startCluster(t, false)
	parts := [][]byte{randBytes(blockSize + 300), randBytes(blockSize/3 + 11), randBytes(2*blockSize + 5)}
	total := uint64(len(parts[0]) + len(parts[1]) + len(parts[2]))
	for _, mode := range []struct {
		name     string
		open     func(*client.Client, string) (*client.Writer, error)
		wantLens []uint64
	}{
		{"reopen last block", func(cl *client.Client, p string) (*client.Writer, error) { return cl.Append(ctxT(t), p) },
			[]uint64{blockSize, blockSize, blockSize, total - 3*blockSize}},
		{"new block", func(cl *client.Client, p string) (*client.Writer, error) { return cl.AppendNewBlock(ctxT(t), p) },
			[]uint64{blockSize, 300, blockSize/3 + 11, blockSize, blockSize, 5}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			appendTwice(t, cl, "/app-"+strings.ReplaceAll(mode.name, " ", "-"), parts, mode.open, mode.wantLens)
		})
	}
}

func appendTwice(t *testing.T, cl *client.Client, path string, parts [][]byte, open func(*client.Client, string) (*client.Writer, error), wantLens []uint64) {
	writeFile(t, cl, path, parts[0])
	for _, p := range parts[1:] {
		w, err := open(cl, path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(p); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	all := bytes.Join(parts, nil)
	readBack(t, cl, path, all)
	sum, err := cl.FileChecksum(ctxT(t), path)
	if want := crc32.Checksum(all, crc32.MakeTable(crc32.Castagnoli)); err != nil || sum.CRC != want {
		t.Fatalf("checksum %+v, %v; want %08x", sum, err, want)
	}
	locs, err := cl.GetBlockLocations(ctxT(t), path, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var off uint64
	for i, lb := range locs.Blocks {
		if lb.Offset != off || i >= len(wantLens) || lb.Block.Length != wantLens[i] {
			t.Fatalf("block %d: offset %d length %d; want offset %d, lengths %v", i, lb.Offset, lb.Block.Length, off, wantLens)
		}
		off += lb.Block.Length
	}
	if off != uint64(len(all)) || len(locs.Blocks) != len(wantLens) {
		t.Fatalf("%d blocks end at %d, file is %d bytes", len(locs.Blocks), off, len(all))
	}
	r, err := cl.Open(ctxT(t), path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, rg := range [][2]int{{blockSize + 250, 100}, {blockSize + 299, blockSize/3 + 20}, {len(all) - 7, 7}} {
		got := make([]byte, rg[1])
		if _, err := r.ReadAt(got, int64(rg[0])); err != nil && err != io.EOF {
			t.Fatalf("read %v: %v", rg, err)
		}
		if !bytes.Equal(got, all[rg[0]:rg[0]+rg[1]]) {
			t.Fatalf("read %v: bytes differ", rg)
		}
	}
}

// TestAppendRefusedWhileOpen: a file someone is writing cannot be appended
// to, and an Append with nothing written closes the file unchanged.
func TestAppendRefusedWhileOpen(t *testing.T) {
	_, cl := startCluster(t, false)
	w, err := cl.Create(ctxT(t), "/open", client.CreateOptions{Replication: 3, BlockSize: blockSize})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Append(ctxT(t), "/open"); errs.KindOf(err) != errs.Precondition {
		t.Fatalf("append to an open file: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	a, err := cl.Append(ctxT(t), "/open")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	readBack(t, cl, "/open", nil)
}
