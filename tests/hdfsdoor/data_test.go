package hdfsdoor

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/blockfs/blockfs/internal/testutil/hdfsdata"
	"github.com/blockfs/blockfs/localcluster"
	"github.com/blockfs/blockfs/namenode"
)

// TestDataThroughTheDoors: an unmodified HDFS client (colinmarc/hdfs)
// writes a file of several blocks with replication 3 through the
// namenode's HDFS door and the datanodes' data transfer doors, reads it
// back through them byte for byte, and gets HDFS's MD5-of-MD5-of-CRC32C
// file checksum; blockfs's own client reads the same bytes.
func TestDataThroughTheDoors(t *testing.T) {
	checkLeaks(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Config{
		Dir: t.TempDir(), Datanodes: 4, HDFSData: true,
		Namenode: func(_ int, nc *namenode.Config) { nc.HDFSRPC.Addr = "127.0.0.1:0" },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	cl := hdfsClient(t, c, "root")
	const blockSize = 1 << 20
	data := make([]byte, 2*blockSize+12345)
	for i := range data {
		data[i] = byte(rand.N(256))
	}
	w, err := cl.CreateFile("/data", 3, blockSize, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := cl.Open("/data")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back through the doors: %d bytes, %v", len(got), err)
	}
	sum, err := r.Checksum()
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	var blockSums [][]byte
	for off := 0; off < len(data); off += blockSize {
		blockSums = append(blockSums, hdfsdata.MD5CRC(data[off:min(off+blockSize, len(data))], 512))
	}
	if want := hdfsdata.FileMD5(blockSums); !bytes.Equal(sum, want) {
		t.Fatalf("file checksum %x, want %x", sum, want)
	}
	bc, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer bc.Close()
	if own, err := bc.ReadFile(ctx, "/data"); err != nil || !bytes.Equal(own, data) {
		t.Fatalf("read back through gRPC: %d bytes, %v", len(own), err)
	}
}

// TestWriteOnlyFile: a writer closes (complete) and hflushes (fsync) a
// file of several blocks that it may write but not read (mode 0200):
// HDFS's complete needs no read permission, and the door reads the
// file's earlier blocks from the namenode's state, not through a
// GetBlockLocations that would refuse. The writer is still refused a read.
func TestWriteOnlyFile(t *testing.T) {
	checkLeaks(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Config{
		Dir: t.TempDir(), Datanodes: 3, HDFSData: true,
		Namenode: func(_ int, nc *namenode.Config) { nc.HDFSRPC.Addr = "127.0.0.1:0" },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	root := hdfsClient(t, c, "root")
	if err := root.Mkdir("/drop", 0o777); err != nil {
		t.Fatal(err)
	}
	if err := root.Chmod("/drop", 0o777); err != nil {
		t.Fatal(err)
	}
	alice := hdfsClient(t, c, "alice")
	const blockSize = 1 << 20
	data := make([]byte, 2*blockSize+777)
	for i := range data {
		data[i] = byte(rand.N(256))
	}
	w, err := alice.CreateFile("/drop/f", 3, blockSize, 0o200)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data[:blockSize+10]); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatalf("hflush of a write-only file: %v", err)
	}
	if _, err := w.Write(data[blockSize+10:]); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("close of a write-only file: %v", err)
	}
	if r, err := alice.Open("/drop/f"); err == nil {
		_, err = io.ReadAll(r)
		r.Close()
		if err == nil {
			t.Fatal("the writer read a file of mode 0200")
		}
	}
	r, err := root.Open("/drop/f")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got, err := io.ReadAll(r); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back: %d bytes, %v", len(got), err)
	}
}
