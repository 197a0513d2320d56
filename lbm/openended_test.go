package lbm

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/blockfs/blockfs/errs"
)

// hflushTo writes data[start:p] at the start of the writer's short chunk
// (or at Written()), as a datanode does for a packet that ends an hflush:
// the partial chunk it stored last time is sent again, whole.
func hflushTo(t testing.TB, w *BlockWriter, data []byte, p int) {
	t.Helper()
	bpc := w.bpc
	start := int(w.Written()) / bpc * bpc
	piece := data[start:p]
	if err := w.WriteAt(int64(start), piece, chunkCRCs(piece, bpc)); err != nil {
		t.Fatalf("write [%d,%d): %v", start, p, err)
	}
	if got := w.Written(); got != int64(p) {
		t.Fatalf("written %d after write to %d", got, p)
	}
}

// checkWriterRead reads [0, Written()) and a middle range through the
// writer and compares with want.
func checkWriterRead(t testing.TB, w *BlockWriter, want []byte) {
	t.Helper()
	cr, err := w.ReadChunks(0, 0, nil)
	if err != nil || cr.Offset != 0 || !bytes.Equal(cr.Data, want) || cr.BytesPerChecksum != w.bpc {
		t.Fatalf("writer read chunks of %d bytes: %v (%d bytes back)", len(want), err, len(cr.Data))
	}
	if fmt.Sprint(cr.CRCs) != fmt.Sprint(chunkCRCs(want, w.bpc)) {
		t.Fatalf("writer read: chunk CRCs differ")
	}
	if len(want) > 2 {
		off, n := int64(len(want)/3), int64(len(want)/3)
		cr, err := w.ReadChunks(off, n, nil)
		if err != nil || cr.Offset > off || cr.Offset%int64(w.bpc) != 0 ||
			!bytes.Equal(cr.Data, want[cr.Offset:cr.Offset+int64(len(cr.Data))]) ||
			cr.Offset+int64(len(cr.Data)) < off+n {
			t.Fatalf("writer read [%d,+%d): %v", off, n, err)
		}
	}
}

// TestOpenEndedHflush: an open-ended write made of hflush-style calls,
// each ending with a partial chunk that the next call rewrites; read back
// through the writer after each call, then committed, replayed and read
// back byte-identical with the block CRC equal to crc32c of the bytes.
func TestOpenEndedHflush(t *testing.T) {
	cases := []struct {
		name   string
		bpc    int
		points []int // Written() after each call
	}{
		{"partial chunks", 512, []int{100, 700, 1024, 1500, 1500, 3000, 3001, 5000}},
		{"whole chunks only", 512, []int{512, 2048, 4096}},
		{"one partial chunk", 512, []int{1}},
		{"empty", 512, nil},
		{"grow a chunk byte by byte", 64, []int{1, 2, 3, 63, 64, 65, 127, 128, 129}},
		{"large", 4096, []int{70000, 70001, 300000, 1 << 20}},
	}
	for _, enc := range []bool{false, true} {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("enc=%v/%s", enc, tc.name), func(t *testing.T) {
				dir := t.TempDir()
				s := mustOpen(t, testConfig(nil, []string{dir}, enc))
				const id = 42
				final := 0
				if len(tc.points) > 0 {
					final = tc.points[len(tc.points)-1]
				}
				data := streamData(id, final)
				w, err := s.CreateWith(ctx, BlockMeta{ID: id, Inode: id + 100, GenStamp: id + 200, Length: 8 << 20},
					CreateOptions{BytesPerChecksum: tc.bpc, OpenEnded: true})
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range tc.points {
					hflushTo(t, w, data, p)
					checkWriterRead(t, w, data[:p])
					if _, ok := s.Stat(id); ok {
						t.Fatal("open write visible")
					}
				}
				if m := w.Meta(); m.ID != id || m.Inode != id+100 || m.GenStamp != id+200 || m.Length != int64(final) {
					t.Fatalf("meta %+v", m)
				}
				info, err := w.Commit(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if info.Length != int64(final) || info.CRC != crc32c(data) {
					t.Fatalf("commit: %+v, want length %d crc %08x", info, final, crc32c(data))
				}
				if _, err := w.ReadChunks(0, 0, nil); !errs.Is(err, errs.Precondition) {
					t.Fatalf("writer read after commit: %v", err)
				}
				checkStreamed(t, s, id, data, tc.bpc)
				s.Close()
				s = mustOpen(t, testConfig(nil, []string{dir}, enc))
				defer s.Close()
				checkStreamed(t, s, id, data, tc.bpc)
			})
		}
	}
}

// TestWriteAtRefusals: offsets other than Written() or the short chunk's
// start, and a rewrite of the short chunk with other bytes, are refused
// and change nothing.
func TestWriteAtRefusals(t *testing.T) {
	const bpc = 512
	data := streamData(3, 4000)
	other := bytes.Clone(data)
	other[600] ^= 0xff // inside the stored part of the short chunk [512,700)
	cases := []struct {
		name string
		run  func(w *BlockWriter) error
		kind errs.Kind
		want string
	}{
		{"different bytes in the short chunk", func(w *BlockWriter) error {
			return w.WriteAt(512, other[512:1100], chunkCRCs(other[512:1100], bpc))
		}, errs.Invalid, "rewrite of a partial chunk with different bytes"},
		{"fewer bytes than the short chunk holds", func(w *BlockWriter) error {
			return w.WriteAt(512, data[512:600], chunkCRCs(data[512:600], bpc))
		}, errs.Invalid, "rewrite of a partial chunk"},
		{"append after the short chunk", func(w *BlockWriter) error {
			return w.Write(data[700:800], chunkCRCs(data[700:800], bpc))
		}, errs.Invalid, "short chunk"},
		{"offset before the short chunk", func(w *BlockWriter) error {
			return w.WriteAt(0, data[:1100], chunkCRCs(data[:1100], bpc))
		}, errs.Invalid, "write at offset 0"},
		{"offset past Written", func(w *BlockWriter) error {
			return w.WriteAt(1024, data[1024:1100], chunkCRCs(data[1024:1100], bpc))
		}, errs.Invalid, "write at offset 1024"},
		{"past the maximum", func(w *BlockWriter) error {
			return w.WriteAt(512, data[512:], chunkCRCs(data[512:], bpc))
		}, errs.Invalid, "maximum length"},
		{"bad chunk crc", func(w *BlockWriter) error {
			c := chunkCRCs(data[512:1100], bpc)
			c[1] ^= 1
			return w.WriteAt(512, data[512:1100], c)
		}, errs.Corrupt, "chunk at offset 1024"},
		{"crc count", func(w *BlockWriter) error {
			return w.WriteAt(512, data[512:1100], chunkCRCs(data[512:1100], bpc)[:1])
		}, errs.Invalid, "chunk CRCs"},
		{"truncate past Written", func(w *BlockWriter) error { return w.Truncate(701) }, errs.Invalid, "outside"},
		{"truncate negative", func(w *BlockWriter) error { return w.Truncate(-1) }, errs.Invalid, "outside"},
		{"genstamp not raised", func(w *BlockWriter) error { return w.SetGenStamp(5) }, errs.Invalid, "not above"},
		{"read past Written", func(w *BlockWriter) error {
			_, err := w.ReadChunks(600, 101, nil)
			return err
		}, errs.Invalid, "outside"},
	}
	for _, enc := range []bool{false, true} {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("enc=%v/%s", enc, tc.name), func(t *testing.T) {
				s := mustOpen(t, testConfig(nil, []string{t.TempDir()}, enc))
				defer s.Close()
				w, err := s.CreateWith(ctx, BlockMeta{ID: 3, GenStamp: 5, Length: 3000},
					CreateOptions{BytesPerChecksum: bpc, OpenEnded: true})
				if err != nil {
					t.Fatal(err)
				}
				hflushTo(t, w, data, 700)
				err = tc.run(w)
				if !errs.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("want %v containing %q, got %v", tc.kind, tc.want, err)
				}
				if w.Written() != 700 {
					t.Fatalf("written %d after a refusal", w.Written())
				}
				checkWriterRead(t, w, data[:700])
				// The writer goes on.
				hflushTo(t, w, data, 2000)
				info, err := w.Commit(ctx)
				if err != nil || info.Length != 2000 || info.CRC != crc32c(data[:2000]) {
					t.Fatalf("commit %+v: %v", info, err)
				}
			})
		}
	}
	t.Run("declared length writer", func(t *testing.T) {
		s := mustOpen(t, testConfig(nil, []string{t.TempDir()}, false))
		defer s.Close()
		w, err := s.CreateWith(ctx, BlockMeta{ID: 1, Length: 2000}, CreateOptions{BytesPerChecksum: bpc})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.WriteAt(0, data[:700], chunkCRCs(data[:700], bpc)); !errs.Is(err, errs.Invalid) {
			t.Fatalf("short chunk mid-block: %v", err)
		}
		if err := w.WriteAt(0, data[:1024], chunkCRCs(data[:1024], bpc)); err != nil {
			t.Fatal(err)
		}
		if err := w.Truncate(512); !errs.Is(err, errs.Precondition) {
			t.Fatalf("truncate of a declared-length writer: %v", err)
		}
		checkWriterRead(t, w, data[:1024])
		if _, err := w.Commit(ctx); !errs.Is(err, errs.Precondition) {
			t.Fatalf("commit short: %v", err)
		}
		if err := w.WriteAt(1024, data[1024:2000], chunkCRCs(data[1024:2000], bpc)); err != nil {
			t.Fatal(err)
		}
		// The final short chunk of a declared-length block may be rewritten too.
		if err := w.WriteAt(1536, data[1536:2000], chunkCRCs(data[1536:2000], bpc)); err != nil {
			t.Fatal(err)
		}
		if info, err := w.Commit(ctx); err != nil || info.CRC != crc32c(data[:2000]) {
			t.Fatalf("commit %+v: %v", info, err)
		}
		if _, err := s.CreateWith(ctx, BlockMeta{ID: 2, Length: 1 << 40}, CreateOptions{BytesPerChecksum: bpc, OpenEnded: true}); !errs.Is(err, errs.Invalid) {
			t.Fatalf("maximum above the container size: %v", err)
		}
	})
}

// TestTruncate: cut an open-ended write mid-chunk, at a chunk boundary and
// to zero, continue (the resend of the same bytes), commit, replay.
// Different bytes over the truncated range are refused.
func TestTruncate(t *testing.T) {
	const bpc = 512
	data := streamData(9, 6000)
	cases := []struct {
		name  string
		steps func(t *testing.T, w *BlockWriter) int // returns the final length
	}{
		{"mid-chunk then continue", func(t *testing.T, w *BlockWriter) int {
			hflushTo(t, w, data, 3000)
			if err := w.Truncate(1300); err != nil {
				t.Fatal(err)
			}
			checkWriterRead(t, w, data[:1300])
			hflushTo(t, w, data, 2500)
			return 2500
		}},
		{"mid-chunk then commit", func(t *testing.T, w *BlockWriter) int {
			hflushTo(t, w, data, 3000)
			if err := w.Truncate(1300); err != nil {
				t.Fatal(err)
			}
			return 1300
		}},
		{"chunk boundary then a shorter chunk (read-back check)", func(t *testing.T, w *BlockWriter) int {
			hflushTo(t, w, data, 3000)
			if err := w.Truncate(1024); err != nil {
				t.Fatal(err)
			}
			hflushTo(t, w, data, 1100)
			hflushTo(t, w, data, 4000)
			return 4000
		}},
		{"twice, then past the first cut", func(t *testing.T, w *BlockWriter) int {
			hflushTo(t, w, data, 3000)
			if err := w.Truncate(2100); err != nil {
				t.Fatal(err)
			}
			hflushTo(t, w, data, 2200)
			if err := w.Truncate(700); err != nil {
				t.Fatal(err)
			}
			hflushTo(t, w, data, 2900)
			hflushTo(t, w, data, 6000)
			return 6000
		}},
		{"to zero", func(t *testing.T, w *BlockWriter) int {
			hflushTo(t, w, data, 1500)
			if err := w.Truncate(0); err != nil {
				t.Fatal(err)
			}
			checkWriterRead(t, w, nil)
			hflushTo(t, w, data, 1000)
			return 1000
		}},
		{"no-op", func(t *testing.T, w *BlockWriter) int {
			hflushTo(t, w, data, 1500)
			if err := w.Truncate(1500); err != nil {
				t.Fatal(err)
			}
			return 1500
		}},
	}
	for _, enc := range []bool{false, true} {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("enc=%v/%s", enc, tc.name), func(t *testing.T) {
				dir := t.TempDir()
				s := mustOpen(t, testConfig(nil, []string{dir}, enc))
				w, err := s.CreateWith(ctx, BlockMeta{ID: 9, Inode: 109, GenStamp: 209, Length: 1 << 20},
					CreateOptions{BytesPerChecksum: bpc, OpenEnded: true})
				if err != nil {
					t.Fatal(err)
				}
				n := tc.steps(t, w)
				checkWriterRead(t, w, data[:n])
				info, err := w.Commit(ctx)
				if err != nil || info.Length != int64(n) || info.CRC != crc32c(data[:n]) {
					t.Fatalf("commit %+v (want %d bytes): %v", info, n, err)
				}
				s.Close()
				s = mustOpen(t, testConfig(nil, []string{dir}, enc))
				defer s.Close()
				checkStreamed(t, s, 9, data[:n], bpc)
			})
		}
	}
	refusals := []struct {
		name  string
		cut   int64
		start int64 // rewrite from here (chunk-aligned)
		end   int64
		flip  int64 // byte changed
		want  string
	}{
		{"past the cut, whole chunk", 1300, 1024, 2500, 2000, "truncated bytes"},
		{"past the cut, the cut's chunk", 1300, 1024, 2500, 1400, "truncated bytes"},
		{"before the cut", 1300, 1024, 2500, 1100, "partial chunk"},
		{"shorter than a stale chunk", 1024, 1024, 1100, 1050, "truncated bytes"},
		{"longer than the stale short chunk", 1024, 1024, 3500, 2999, "truncated bytes"},
	}
	for _, enc := range []bool{false, true} {
		for _, tc := range refusals {
			t.Run(fmt.Sprintf("enc=%v/refuse %s", enc, tc.name), func(t *testing.T) {
				s := mustOpen(t, testConfig(nil, []string{t.TempDir()}, enc))
				defer s.Close()
				w, err := s.CreateWith(ctx, BlockMeta{ID: 9, Length: 1 << 20}, CreateOptions{BytesPerChecksum: bpc, OpenEnded: true})
				if err != nil {
					t.Fatal(err)
				}
				hflushTo(t, w, data, 3000)
				if err := w.Truncate(tc.cut); err != nil {
					t.Fatal(err)
				}
				other := bytes.Clone(data)
				other[tc.flip] ^= 1
				piece := other[tc.start:tc.end]
				err = w.WriteAt(tc.start, piece, chunkCRCs(piece, bpc))
				if !errs.Is(err, errs.Invalid) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("want Invalid with %q, got %v", tc.want, err)
				}
				if w.Written() != tc.cut {
					t.Fatalf("written %d", w.Written())
				}
				checkWriterRead(t, w, data[:tc.cut])
				hflushTo(t, w, data, 3500)
				if info, err := w.Commit(ctx); err != nil || info.CRC != crc32c(data[:3500]) {
					t.Fatalf("commit %+v: %v", info, err)
				}
			})
		}
	}
}

// TestSetGenStamp: a raised genstamp is what Commit records and replay
// keeps.
func TestSetGenStamp(t *testing.T) {
	for _, enc := range []bool{false, true} {
		t.Run(fmt.Sprintf("enc=%v", enc), func(t *testing.T) {
			dir := t.TempDir()
			s := mustOpen(t, testConfig(nil, []string{dir}, enc))
			data := streamData(4, 1000)
			w, err := s.CreateWith(ctx, BlockMeta{ID: 4, Inode: 104, GenStamp: 10, Length: 4096},
				CreateOptions{BytesPerChecksum: 512, OpenEnded: true})
			if err != nil {
				t.Fatal(err)
			}
			hflushTo(t, w, data, 1000)
			for _, gs := range []uint64{9, 10} {
				if err := w.SetGenStamp(gs); !errs.Is(err, errs.Invalid) {
					t.Fatalf("SetGenStamp(%d): %v", gs, err)
				}
			}
			if err := w.SetGenStamp(11); err != nil {
				t.Fatal(err)
			}
			if err := w.SetGenStamp(204); err != nil {
				t.Fatal(err)
			}
			if m := w.Meta(); m.GenStamp != 204 || m.Length != 1000 {
				t.Fatalf("meta %+v", m)
			}
			if info, err := w.Commit(ctx); err != nil || info.GenStamp != 204 {
				t.Fatalf("commit %+v: %v", info, err)
			}
			if err := w.SetGenStamp(300); !errs.Is(err, errs.Precondition) {
				t.Fatalf("SetGenStamp after commit: %v", err)
			}
			s.Close()
			s = mustOpen(t, testConfig(nil, []string{dir}, enc))
			defer s.Close()
			checkStreamed(t, s, 4, data, 512) // checks GenStamp == id+200
		})
	}
}

// TestWriterReadConcurrent: readers of the writer's bytes run while it
// writes, hflushes and truncates; every read is a verified prefix of the
// data (go test -race).
func TestWriterReadConcurrent(t *testing.T) {
	for _, enc := range []bool{false, true} {
		t.Run(fmt.Sprintf("enc=%v", enc), func(t *testing.T) {
			s := mustOpen(t, testConfig(nil, []string{t.TempDir()}, enc))
			defer s.Close()
			const bpc = 512
			data := streamData(8, 200000)
			w, err := s.CreateWith(ctx, BlockMeta{ID: 8, Length: 1 << 20}, CreateOptions{BytesPerChecksum: bpc, OpenEnded: true})
			if err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			errc := make(chan error, 4)
			for r := range 4 {
				wg.Go(func() {
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						cr, err := w.ReadChunks(int64(r*97+i)%max(w.Written(), 1)/2, 0, nil)
						if errs.Is(err, errs.Invalid) {
							continue // truncated between Written() and the read
						}
						if err != nil {
							errc <- err
							return
						}
						if !bytes.Equal(cr.Data, data[cr.Offset:cr.Offset+int64(len(cr.Data))]) {
							errc <- fmt.Errorf("read at %d: bytes differ", cr.Offset)
							return
						}
					}
				})
			}
			for p := 1000; p < len(data); p += 7777 {
				hflushTo(t, w, data, p)
				if p%3 == 0 {
					if err := w.Truncate(int64(p - 3000)); err != nil {
						t.Fatal(err)
					}
				}
			}
			hflushTo(t, w, data, len(data))
			close(stop)
			wg.Wait()
			select {
			case err := <-errc:
				t.Fatal(err)
			default:
			}
			if info, err := w.Commit(ctx); err != nil || info.CRC != crc32c(data) {
				t.Fatalf("commit %+v: %v", info, err)
			}
		})
	}
}
