package lbm

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/blockfs/blockfs/errs"
)

// TestReadChunksSkipsBySeek: a small range at the start or the end of a
// 64 MiB block reads at most two chunks and their CRC slice from disk.
func TestReadChunksSkipsBySeek(t *testing.T) {
	const size, bpc = 64 << 20, 512
	data := streamData(1, size)
	for _, enc := range []bool{false, true} {
		t.Run(fmt.Sprintf("enc=%v", enc), func(t *testing.T) {
			cfg := testConfig(nil, []string{t.TempDir()}, enc)
			cfg.MaxContainerSize = 1 << 30
			s := mustOpen(t, cfg)
			defer s.Close()
			streamBlock(t, s, 1, data, bpc, 128)
			cases := []struct {
				name   string
				off, n int64
				chunks int64 // chunks touched
			}{
				{"first byte", 0, 1, 1},
				{"start, across a chunk boundary", 500, 24, 2},
				{"last chunk", size - 100, 100, 1},
				{"last two chunks", size - bpc - 1, bpc + 1, 2},
				{"to the end (n=0)", size - 10, 0, 1},
				{"4 KiB at the end", size - 4096, 4096, 8},
			}
			for _, tc := range cases {
				before := s.DiskBytesRead()
				cr, err := s.ReadChunks(ctx, 1, tc.off, tc.n, nil)
				if err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
				n := tc.n
				if n == 0 {
					n = size - tc.off
				}
				got := cr.Data[tc.off-cr.Offset : tc.off-cr.Offset+n]
				if !bytes.Equal(got, data[tc.off:tc.off+n]) || cr.Offset%bpc != 0 || int64(len(cr.CRCs)) != tc.chunks {
					t.Fatalf("%s: wrong range (offset %d, %d chunks)", tc.name, cr.Offset, len(cr.CRCs))
				}
				if read, max := s.DiskBytesRead()-before, tc.chunks*(bpc+4); read > max {
					t.Fatalf("%s: read %d bytes from disk, want at most %d", tc.name, read, max)
				}
			}
			// Read (the whole-range API) also skips.
			before := s.DiskBytesRead()
			if b, err := s.Read(ctx, 1, size-3, 3); err != nil || !bytes.Equal(b, data[size-3:]) {
				t.Fatalf("read: %v", err)
			}
			if read := s.DiskBytesRead() - before; read > bpc+4 {
				t.Fatalf("Read of 3 bytes read %d from disk", read)
			}
			// buf is reused when large enough.
			buf := make([]byte, 8192)
			cr, err := s.ReadChunks(ctx, 1, 4096, 4096, buf)
			if err != nil || &cr.Data[0] != &buf[0] {
				t.Fatalf("buf not reused: %v", err)
			}
		})
	}
}

// TestChunkFlipCaughtOnlyByItsChunk flips one bit on disk in chunk k (or
// in its CRC table entry): a read touching chunk k fails with Corrupt
// naming the block, the data file and the chunk offset; reads of other
// chunks succeed.
func TestChunkFlipCaughtOnlyByItsChunk(t *testing.T) {
	const bpc, chunks = 512, 9
	data := streamData(3, bpc*chunks-77)
	for _, enc := range []bool{false, true} {
		for _, where := range []string{"data", "table"} {
			for _, k := range []int64{0, 4, chunks - 1} {
				t.Run(fmt.Sprintf("enc=%v/%s/chunk=%d", enc, where, k), func(t *testing.T) {
					s := mustOpen(t, testConfig(nil, []string{t.TempDir()}, enc))
					defer s.Close()
					streamBlock(t, s, 3, data, bpc, 2)
					e, _ := s.index.get(3)
					at := e.off + k*bpc + 100
					if k == chunks-1 {
						at = e.off + e.length - 1
					}
					if where == "table" {
						at = e.off + e.length + k*4 + 2
					}
					f, err := os.OpenFile(e.c.dataPath, os.O_RDWR, 0)
					if err != nil {
						t.Fatal(err)
					}
					var b [1]byte
					f.ReadAt(b[:], at)
					b[0] ^= 0x10
					f.WriteAt(b[:], at)
					f.Close()
					for j := int64(0); j < chunks; j++ {
						_, err := s.ReadChunks(ctx, 3, j*bpc, 1, nil)
						_, rerr := s.Read(ctx, 3, j*bpc, 1)
						if j != k {
							if err != nil || rerr != nil {
								t.Fatalf("chunk %d (flip in %d): %v / %v", j, k, err, rerr)
							}
							continue
						}
						want := fmt.Sprintf("chunk at block offset %d", k*bpc)
						for _, err := range []error{err, rerr} {
							if !errs.Is(err, errs.Corrupt) || !strings.Contains(err.Error(), want) ||
								!strings.Contains(err.Error(), e.c.dataPath) || !strings.Contains(err.Error(), "block 3") {
								t.Fatalf("chunk %d: want Corrupt naming block 3, %s and %q, got %v", k, e.c.dataPath, want, err)
							}
						}
					}
					if _, err := s.ReadChunks(ctx, 3, 0, 0, nil); !errs.Is(err, errs.Corrupt) {
						t.Fatalf("whole-block read: %v", err)
					}
				})
			}
		}
	}
}

// putOldFormat stores data as block id the way the store did before
// chunk tables: the bytes, then a CREATE (type 1) with the whole-block CRC.
func putOldFormat(t testing.TB, s *Store, id uint64, data []byte) {
	t.Helper()
	c, err := s.acquire()
	if err != nil {
		t.Fatal(err)
	}
	defer s.release(c)
	fc, err := c.dataCipher()
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	off := c.nextBlock
	w := bytes.Clone(data)
	if fc != nil {
		fc.xorAt(w, w, off)
	}
	if _, err := c.data.WriteAt(w, off); err != nil {
		t.Fatal(err)
	}
	rec := createRec{ID: id, Inode: id + 100, GenStamp: id + 200, Offset: off, Length: int64(len(data)),
		CRC: crc32c(data), TimestampUS: time.Now().UnixMicro()}
	if err := c.appendMetaLocked(appendCreate(nil, &rec)); err != nil {
		t.Fatal(err)
	}
	c.nextBlock = alignUp(off + int64(len(data)))
	c.created++
	c.addLocked(id, rec.entry(c))
}

func TestOldFormatBlocksStillRead(t *testing.T) {
	for _, enc := range []bool{false, true} {
		for _, mode := range replayModes {
			t.Run(fmt.Sprintf("enc=%v/%s", enc, mode.name), func(t *testing.T) {
				cfg := testConfig(nil, []string{t.TempDir()}, enc)
				mode.apply(&cfg)
				s := mustOpen(t, cfg)
				old := streamData(1, 2000)
				putOldFormat(t, s, 1, old)
				streamBlock(t, s, 2, streamData(2, 1500), 512, 1)
				putOldFormat(t, s, 3, streamData(3, 700))
				s.Close()
				s = mustOpen(t, cfg)
				defer s.Close()
				info, _ := s.Stat(1)
				if info.BytesPerChecksum != 0 || info.CRC != crc32c(old) {
					t.Fatalf("old block stat %+v", info)
				}
				if b, err := s.Read(ctx, 1, 10, 1500); err != nil || !bytes.Equal(b, old[10:1510]) {
					t.Fatalf("read: %v", err)
				}
				cr, err := s.ReadChunks(ctx, 1, 600, 500, nil)
				if err != nil || cr.Offset != 512 || cr.BytesPerChecksum != DefaultBytesPerChecksum ||
					!bytes.Equal(cr.Data, old[512:1536]) || fmt.Sprint(cr.CRCs) != fmt.Sprint(chunkCRCs(old[512:1536], 512)) {
					t.Fatalf("read chunks: %v (offset %d)", err, cr.Offset)
				}
				checkStreamed(t, s, 2, streamData(2, 1500), 512)
				// Old blocks are verified whole: a flip anywhere fails any range.
				e, _ := s.index.get(1)
				f, _ := os.OpenFile(e.c.dataPath, os.O_RDWR, 0)
				f.WriteAt([]byte{old[1999] ^ 1}, e.off+1999)
				f.Close()
				if _, err := s.ReadChunks(ctx, 1, 0, 1, nil); !errs.Is(err, errs.Corrupt) {
					t.Fatalf("old block, flip at the end, read at the start: %v", err)
				}
				if _, err := s.Read(ctx, 1, 0, 1); !errs.Is(err, errs.Corrupt) {
					t.Fatalf("old block Read: %v", err)
				}
				// Deleting and compacting keep both formats.
				if err := s.Delete(ctx, 1); err != nil {
					t.Fatal(err)
				}
				s.Close()
				s = mustOpen(t, cfg)
				if info, _ := s.Stat(3); info.BytesPerChecksum != 0 {
					t.Fatalf("block 3 after reopen: %+v", info)
				}
				checkStreamed(t, s, 2, streamData(2, 1500), 512)
				s.Close()
			})
		}
	}
}
