package lbm

import (
	"bytes"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"testing"

	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/base/chunks"
)

// streamData is n seeded bytes for block id.
func streamData(id uint64, n int) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(int64(id)*31 + 7)).Read(b)
	return b
}

// chunkCRCs is what a client computes: one CRC32C per bpc-byte chunk.
func chunkCRCs(b []byte, bpc int) []uint32 { return chunks.Sums(nil, b, bpc) }

// streamBlock writes data as block id through Create/Write/Commit, in
// writes of `chunks` chunks each.
func streamBlock(t testing.TB, s *Store, id uint64, data []byte, bpc, chunks int) BlockInfo {
	t.Helper()
	w, err := s.Create(ctx, BlockMeta{ID: id, Inode: id + 100, GenStamp: id + 200, Length: int64(len(data))}, bpc)
	if err != nil {
		t.Fatalf("create %d: %v", id, err)
	}
	for p := 0; p < len(data); p += chunks * bpc {
		piece := data[p:min(p+chunks*bpc, len(data))]
		if err := w.Write(piece, chunkCRCs(piece, bpc)); err != nil {
			t.Fatalf("write %d at %d: %v", id, p, err)
		}
	}
	info, err := w.Commit(ctx)
	if err != nil {
		t.Fatalf("commit %d: %v", id, err)
	}
	return info
}

// checkStreamed reads block id back whole and by chunks and compares.
func checkStreamed(t testing.TB, s *Store, id uint64, want []byte, bpc int) {
	t.Helper()
	info, ok := s.Stat(id)
	if !ok {
		t.Fatalf("block %d missing", id)
	}
	if info.Length != int64(len(want)) || info.CRC != crc32c(want) || info.BytesPerChecksum != bpc ||
		info.Inode != id+100 || info.GenStamp != id+200 {
		t.Fatalf("block %d: stat %+v", id, info)
	}
	got, err := s.Read(ctx, id, 0, int64(len(want)))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read %d: %v", id, err)
	}
	cr, err := s.ReadChunks(ctx, id, 0, 0, nil)
	if err != nil || cr.Offset != 0 || !bytes.Equal(cr.Data, want) || cr.BytesPerChecksum != bpc {
		t.Fatalf("read chunks %d: %v", id, err)
	}
	if fmt.Sprint(cr.CRCs) != fmt.Sprint(chunkCRCs(want, bpc)) {
		t.Fatalf("block %d: chunk CRCs differ", id)
	}
}

func TestStreamedWriteReplay(t *testing.T) {
	sizes := []struct {
		n, bpc, chunks int
	}{
		{0, 512, 1}, {1, 512, 1}, {511, 512, 4}, {512, 512, 1}, {513, 512, 1},
		{5000, 512, 3}, {5000, 64, 7}, {70000, 4096, 2}, {1 << 20, 1 << 20, 1},
		{3<<20 + 5, 4096, 1024}, // one Write of it all: past the encrypting scratch bound
	}
	for _, enc := range []bool{false, true} {
		for _, mode := range replayModes {
			t.Run(fmt.Sprintf("enc=%v/%s", enc, mode.name), func(t *testing.T) {
				dir := t.TempDir()
				cfg := testConfig(nil, []string{dir}, enc)
				mode.apply(&cfg)
				s := mustOpen(t, cfg)
				for i, sz := range sizes {
					id := uint64(i + 1)
					info := streamBlock(t, s, id, streamData(id, sz.n), sz.bpc, sz.chunks)
					if info.CRC != crc32c(streamData(id, sz.n)) || info.BytesPerChecksum != sz.bpc {
						t.Fatalf("commit info %+v", info)
					}
				}
				// A Put block sits beside them in the same containers.
				if err := s.Put(ctx, BlockMeta{ID: 99, Inode: 199, GenStamp: 299}, streamData(99, 3000)); err != nil {
					t.Fatal(err)
				}
				s.Close()
				s = mustOpen(t, cfg)
				defer s.Close()
				for i, sz := range sizes {
					checkStreamed(t, s, uint64(i+1), streamData(uint64(i+1), sz.n), sz.bpc)
				}
				checkStreamed(t, s, 99, streamData(99, 3000), DefaultBytesPerChecksum)
				if got := len(s.Blocks()); got != len(sizes)+1 {
					t.Fatalf("%d blocks after replay", got)
				}
			})
		}
	}
}

// TestStreamedWriteRefusals: every refused call leaves nothing visible
// and nothing of that call written.
func TestStreamedWriteRefusals(t *testing.T) {
	const bpc = 512
	data := streamData(1, 3*bpc+100)
	crcs := chunkCRCs(data, bpc)
	bad := append([]uint32(nil), crcs...)
	bad[1] ^= 1
	cases := []struct {
		name   string
		length int64
		run    func(w *BlockWriter) error
		kind   errs.Kind
		want   string // in the error text
	}{
		{"bad chunk crc", int64(len(data)), func(w *BlockWriter) error { return w.Write(data, bad) },
			errs.Corrupt, "chunk at offset 512"},
		{"bad crc after a good write", int64(len(data)), func(w *BlockWriter) error {
			if err := w.Write(data[:bpc], crcs[:1]); err != nil {
				return err
			}
			return w.Write(data[bpc:], bad[1:])
		}, errs.Corrupt, "chunk at offset 512"},
		{"past declared length", 2 * bpc, func(w *BlockWriter) error { return w.Write(data, crcs) },
			errs.Invalid, "declared length"},
		{"short chunk mid-block", int64(len(data)), func(w *BlockWriter) error {
			return w.Write(data[:100], crcs[:1])
		}, errs.Invalid, "short chunk"},
		{"crc count", int64(len(data)), func(w *BlockWriter) error { return w.Write(data, crcs[:2]) },
			errs.Invalid, "chunk CRCs"},
		{"commit short", int64(len(data)), func(w *BlockWriter) error {
			if err := w.Write(data[:2*bpc], crcs[:2]); err != nil {
				return err
			}
			_, err := w.Commit(ctx)
			return err
		}, errs.Precondition, "of 1636 declared"},
	}
	for _, enc := range []bool{false, true} {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("enc=%v/%s", enc, tc.name), func(t *testing.T) {
				s := mustOpen(t, testConfig(nil, []string{t.TempDir()}, enc))
				defer s.Close()
				w, err := s.Create(ctx, BlockMeta{ID: 7, Length: tc.length}, bpc)
				if err != nil {
					t.Fatal(err)
				}
				before := w.Written()
				err = tc.run(w)
				if !errs.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("want %v containing %q, got %v", tc.kind, tc.want, err)
				}
				if tc.kind != errs.Precondition && w.Written() > before+bpc {
					t.Fatalf("refused write counted: %d", w.Written())
				}
				if _, ok := s.Stat(7); ok || len(s.Blocks()) != 0 {
					t.Fatal("uncommitted block visible")
				}
				if _, err := s.Read(ctx, 7, 0, 0); !errs.Is(err, errs.NotFound) {
					t.Fatalf("read of uncommitted block: %v", err)
				}
				if _, err := s.Create(ctx, BlockMeta{ID: 7}, bpc); !errs.Is(err, errs.Exist) {
					t.Fatalf("second create: %v", err)
				}
				if err := s.Put(ctx, BlockMeta{ID: 7}, data); !errs.Is(err, errs.Exist) {
					t.Fatalf("put over an open write: %v", err)
				}
				w.Abort()
				s.Close()
				s = mustOpen(t, testConfig(nil, s.cfg.Dirs, enc))
				if len(s.Blocks()) != 0 {
					t.Fatal("refused block visible after replay")
				}
			})
		}
	}
	t.Run("bad bytes per checksum", func(t *testing.T) {
		s := mustOpen(t, testConfig(nil, []string{t.TempDir()}, false))
		defer s.Close()
		for _, bpc := range []int{0, 32, 100, 513, 2 << 20} {
			if _, err := s.Create(ctx, BlockMeta{ID: 1, Length: 10}, bpc); !errs.Is(err, errs.Invalid) {
				t.Fatalf("bpc %d: %v", bpc, err)
			}
		}
		if _, err := s.Create(ctx, BlockMeta{ID: 1, Length: -1}, 512); !errs.Is(err, errs.Invalid) {
			t.Fatalf("negative length: %v", err)
		}
		if err := s.Put(ctx, BlockMeta{ID: 1, Length: 5}, []byte("abc")); !errs.Is(err, errs.Invalid) {
			t.Fatalf("put with a wrong declared length: %v", err)
		}
	})
}

func TestAbortFreesID(t *testing.T) {
	for _, enc := range []bool{false, true} {
		t.Run(fmt.Sprintf("enc=%v", enc), func(t *testing.T) {
			m := NewMemFS()
			cfg := testConfig(m, []string{"/d"}, enc)
			cfg.KeyFile = "/key"
			s := mustOpen(t, cfg)
			defer s.Close()
			data := streamData(5, 20000)
			w, err := s.Create(ctx, BlockMeta{ID: 5, Length: int64(len(data))}, 512)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Write(data[:8192], chunkCRCs(data[:8192], 512)); err != nil {
				t.Fatal(err)
			}
			if err := w.Sync(); err != nil {
				t.Fatal(err)
			}
			off := w.off
			w.Abort()
			w.Abort()
			if err := w.Write(data[8192:8704], chunkCRCs(data[8192:8704], 512)); !errs.Is(err, errs.Precondition) {
				t.Fatalf("write after abort: %v", err)
			}
			if _, ok := s.Stat(5); ok {
				t.Fatal("aborted block visible")
			}
			if _, used := s.Usage(); used != 0 {
				t.Fatalf("aborted block uses %d bytes", used)
			}
			// The written range was punched: zeros on disk.
			df := metaFiles(t, m, "/d")[0]
			raw := readAll(t, m, strings.TrimSuffix(df, ".metadata")+".data")
			if zeroFrom(raw[off:off+8192]) != 0 {
				t.Fatal("aborted range not punched")
			}
			info := streamBlock(t, s, 5, streamData(5, 20000), 512, 5)
			if info.Length != 20000 {
				t.Fatalf("recreated %+v", info)
			}
			w2, _ := s.Create(ctx, BlockMeta{ID: 6}, 512)
			if _, err := w2.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			w2.Abort() // no-op after Commit
			if _, err := w2.Commit(ctx); !errs.Is(err, errs.Precondition) {
				t.Fatalf("second commit: %v", err)
			}
			if _, ok := s.Stat(6); !ok {
				t.Fatal("Abort after Commit dropped the block")
			}
			checkStreamed(t, s, 5, streamData(5, 20000), 512)
		})
	}
}

// TestStreamedWriteCrash cuts power at every point of a streamed write
// (Create, writes, Sync, Commit): after replay the block is either absent
// or whole, never partial, and nothing else is lost or corrupt.
func TestStreamedWriteCrash(t *testing.T) {
	for _, enc := range []bool{false, true} {
		for crashAt := range 14 {
			t.Run(fmt.Sprintf("enc=%v/crash=%d", enc, crashAt), func(t *testing.T) {
				m := NewMemFS()
				cfg := testConfig(m, []string{"/d"}, enc)
				cfg.KeyFile = "/key"
				s := mustOpen(t, cfg)
				if err := s.Put(ctx, BlockMeta{ID: 1, Inode: 101, GenStamp: 201}, streamData(1, 3000)); err != nil {
					t.Fatal(err)
				}
				data := streamData(2, 6*512+17)
				m.CrashAfter(crashAt)
				committed := false
				if w, err := s.Create(ctx, BlockMeta{ID: 2, Inode: 102, GenStamp: 202, Length: int64(len(data))}, 512); err == nil {
					ok := true
					for p := 0; p < len(data) && ok; p += 1024 {
						piece := data[p:min(p+1024, len(data))]
						ok = w.Write(piece, chunkCRCs(piece, 512)) == nil
						if ok && p == 2048 {
							ok = w.Sync() == nil
						}
					}
					if ok {
						_, err := w.Commit(ctx)
						committed = err == nil
					}
					w.Abort()
				}
				s.Close()
				for seed := range int64(4) {
					img := m.CrashClone(seed)
					cfg.FS = img
					s2, err := Open(ctx, cfg)
					if err != nil {
						t.Fatalf("seed %d: replay after crash: %v", seed, err)
					}
					checkStreamed(t, s2, 1, streamData(1, 3000), DefaultBytesPerChecksum)
					if _, ok := s2.Stat(2); ok || committed {
						checkStreamed(t, s2, 2, data, 512)
					}
					// The store takes new streamed writes after the crash.
					streamBlock(t, s2, 3, streamData(3, 1500), 512, 1)
					s2.Close()
				}
			})
		}
	}
}

// TestConcurrentStreamsAndReads runs streamed writers, range readers and
// deleters at once (for the race detector): every committed block reads
// back, every range read returns verified bytes.
func TestConcurrentStreamsAndReads(t *testing.T) {
	for _, enc := range []bool{false, true} {
		t.Run(fmt.Sprintf("enc=%v", enc), func(t *testing.T) {
			cfg := testConfig(nil, []string{t.TempDir(), t.TempDir()}, enc)
			cfg.MaxContainerSize = 64 << 10
			s := mustOpen(t, cfg)
			defer s.Close()
			const writers, perWriter = 4, 12
			var wg sync.WaitGroup
			errc := make(chan error, 64)
			for g := range writers {
				wg.Go(func() {
					for i := range perWriter {
						id := uint64(g*perWriter + i + 1)
						data := streamData(id, 1+int(id*997)%20000)
						w, err := s.Create(ctx, BlockMeta{ID: id, Inode: id + 100, GenStamp: id + 200, Length: int64(len(data))}, 512)
						if err != nil {
							errc <- err
							return
						}
						for p := 0; p < len(data); p += 2048 {
							piece := data[p:min(p+2048, len(data))]
							if err := w.Write(piece, chunkCRCs(piece, 512)); err != nil {
								errc <- err
								return
							}
						}
						if _, err := w.Commit(ctx); err != nil {
							errc <- err
							return
						}
						if i%3 == 0 {
							if err := s.Delete(ctx, id); err != nil {
								errc <- err
							}
						}
					}
				})
			}
			for range 2 {
				wg.Go(func() {
					r := rand.New(rand.NewSource(1))
					for range 400 {
						id := uint64(1 + r.Intn(writers*perWriter))
						info, ok := s.Stat(id)
						if !ok {
							continue
						}
						off := r.Int63n(info.Length)
						cr, err := s.ReadChunks(ctx, id, off, 1, nil)
						if errs.Is(err, errs.NotFound) {
							continue // deleted meanwhile
						}
						want := streamData(id, int(info.Length))
						if err != nil || !bytes.Equal(cr.Data, want[cr.Offset:cr.Offset+int64(len(cr.Data))]) {
							errc <- fmt.Errorf("read %d at %d: %v", id, off, err)
							return
						}
					}
				})
			}
			wg.Wait()
			close(errc)
			for err := range errc {
				t.Fatal(err)
			}
			for _, b := range s.Blocks() {
				checkStreamed(t, s, b.ID, streamData(b.ID, int(b.Length)), 512)
			}
		})
	}
}

// TestWriterAfterClose: a write open when the store closes fails with
// Unavailable and does not mark its data dir failed.
func TestWriterAfterClose(t *testing.T) {
	s := mustOpen(t, testConfig(nil, []string{t.TempDir()}, false))
	w, err := s.Create(ctx, BlockMeta{ID: 1, Length: 1024}, 512)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	data := streamData(1, 512)
	if err := w.Write(data, chunkCRCs(data, 512)); !errs.Is(err, errs.Unavailable) {
		t.Fatalf("write after close: %v", err)
	}
	if _, err := w.Commit(ctx); !errs.Is(err, errs.Precondition) {
		t.Fatalf("commit after close: %v", err)
	}
	w.Abort()
	if len(s.FailedDirs()) != 0 {
		t.Fatalf("close failed dirs %v", s.FailedDirs())
	}
}
