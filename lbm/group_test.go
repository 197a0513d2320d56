package lbm

import (
	"bytes"
	"fmt"
	"math/rand"
	"runtime"
	"sync"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/base/chunks"
)

// writeSmall writes blockData(id) through a declared-length writer and
// commits it.
func writeSmall(s *Store, id uint64) error {
	d := blockData(id)
	w, err := s.CreateWith(ctx, BlockMeta{ID: id, Inode: 1, GenStamp: 2, Length: int64(len(d))}, CreateOptions{BytesPerChecksum: 512})
	if err != nil {
		return err
	}
	if err := w.Write(d, chunks.Sums(nil, d, 512)); err != nil {
		w.Abort()
		return err
	}
	_, err = w.Commit(ctx)
	return err
}

// groups is what the group commit histogram saw: groups and blocks.
func groups(t *testing.T, s *Store) (uint64, float64) {
	t.Helper()
	var m dto.Metric
	if err := s.metrics.groupBlocks.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
}

// TestGroupCommitShares: small blocks committing while a group is being
// stored go out together as the next group, in one container, and are
// whole after a reopen.
func TestGroupCommitShares(t *testing.T) {
	for _, enc := range []bool{false, true} {
		t.Run(fmt.Sprintf("enc=%v", enc), func(t *testing.T) {
			m := NewMemFS()
			cfg := testConfig(m, []string{"/d"}, enc)
			cfg.KeyFile = "/key"
			s := mustOpen(t, cfg)
			// Stand in for a leader busy with an earlier group.
			g := s.group
			g.mu.Lock()
			g.busy = true
			g.mu.Unlock()
			const n = 16
			errc := make(chan error, n)
			for i := range n {
				go func() { errc <- writeSmall(s, uint64(100+i)) }()
			}
			for queued := 0; queued < n; {
				g.mu.Lock()
				queued = len(g.queue)
				g.mu.Unlock()
				runtime.Gosched()
			}
			g.mu.Lock()
			g.busy = false
			g.cond.Broadcast()
			g.mu.Unlock()
			for range n {
				if err := <-errc; err != nil {
					t.Fatal(err)
				}
			}
			if count, sum := groups(t, s); count != 1 || sum != n {
				t.Fatalf("%d groups of %v blocks in all, want 1 of %d", count, sum, n)
			}
			var container string
			for i := range n {
				info, ok := s.Stat(uint64(100 + i))
				if !ok {
					t.Fatalf("block %d missing", 100+i)
				}
				if container == "" {
					container = info.Container
				} else if info.Container != container {
					t.Fatalf("block %d in %s, the group's first in %s", 100+i, info.Container, container)
				}
			}
			s.Close()
			s = mustOpen(t, cfg)
			defer s.Close()
			for i := range n {
				checkBlock(t, s, uint64(100+i))
			}
			checkUsage(t, s)
		})
	}
}

// TestBufferedWriter: a small declared-length writer keeps its bytes in
// memory, and does what any writer does: read back, Sync (it moves to a
// container), Abort (the id is free, nothing stored), a short Commit
// refused and the writer still open, a closed store refused.
func TestBufferedWriter(t *testing.T) {
	d := streamData(7, 3000)
	crcs := chunks.Sums(nil, d, 512)
	cases := []struct {
		name string
		max  int64 // GroupCommitMax
		run  func(t *testing.T, s *Store, w *BlockWriter)
	}{
		{"read back before commit", 64 << 10, func(t *testing.T, s *Store, w *BlockWriter) {
			cr, err := w.ReadChunks(1000, 100, nil)
			if err != nil || cr.Offset != 512 || !bytes.Equal(cr.Data, d[512:1536]) || len(cr.CRCs) != 2 {
				t.Fatalf("ReadChunks: %+v %v", cr, err)
			}
			commitAndCheck(t, s, w, d, 1)
		}},
		{"sync spills", 64 << 10, func(t *testing.T, s *Store, w *BlockWriter) {
			if err := w.Sync(); err != nil {
				t.Fatal(err)
			}
			if w.c == nil || w.buffered {
				t.Fatal("a synced writer has no container")
			}
			commitAndCheck(t, s, w, d, 0)
		}},
		{"off", 0, func(t *testing.T, s *Store, w *BlockWriter) {
			if w.buffered || w.c == nil {
				t.Fatal("GroupCommitMax 0 buffered the writer")
			}
			commitAndCheck(t, s, w, d, 0)
		}},
		{"abort", 64 << 10, func(t *testing.T, s *Store, w *BlockWriter) {
			w.Abort()
			if _, ok := s.Stat(1); ok {
				t.Fatal("aborted block is live")
			}
			if err := writeSmall(s, 1); err != nil {
				t.Fatalf("the id is not free again: %v", err)
			}
		}},
		{"closed store", 64 << 10, func(t *testing.T, s *Store, w *BlockWriter) {
			s.Close()
			if _, err := w.Commit(ctx); !errs.Is(err, errs.Unavailable) {
				t.Fatalf("commit on a closed store: %v", err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(NewMemFS(), []string{"/d"}, false)
			cfg.GroupCommitMax = tc.max
			s := mustOpen(t, cfg)
			defer s.Close()
			w, err := s.CreateWith(ctx, BlockMeta{ID: 1, Inode: 3, GenStamp: 4, Length: int64(len(d))}, CreateOptions{BytesPerChecksum: 512})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Write(d[:2048], crcs[:4]); err != nil {
				t.Fatal(err)
			}
			if _, err := w.Commit(ctx); !errs.Is(err, errs.Precondition) {
				t.Fatalf("short commit: %v", err)
			}
			if err := w.Write(d[2048:], crcs[4:]); err != nil {
				t.Fatal(err)
			}
			tc.run(t, s, w)
		})
	}
}

func commitAndCheck(t *testing.T, s *Store, w *BlockWriter, d []byte, wantGroups uint64) {
	t.Helper()
	info, err := w.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Length != int64(len(d)) || info.CRC != crc32c(d) || info.GenStamp != 4 {
		t.Fatalf("committed %+v", info)
	}
	checkBlockBytes(t, s, 1, d)
	if n, _ := groups(t, s); n != wantGroups {
		t.Fatalf("%d group commits, want %d", n, wantGroups)
	}
}

// TestGroupCommitCrash: concurrent small commits with power cut at a
// random point: after replay every acknowledged block is whole, no other
// block appears, and one that may have been stored is whole if present.
func TestGroupCommitCrash(t *testing.T) {
	for seed := int64(1); seed <= 8; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewSource(seed))
			m := NewMemFS()
			cfg := testConfig(m, []string{"/d0", "/d1"}, seed%2 == 0)
			cfg.MaxBlocksPerContainer = 8
			s := mustOpen(t, cfg)
			l := &ledger{acked: map[uint64]bool{}, deleted: map[uint64]bool{}, maybe: map[uint64]bool{}}
			var mu sync.Mutex
			run := func(base uint64) {
				var wg sync.WaitGroup
				for c := range uint64(8) {
					wg.Go(func() {
						for i := range uint64(25) {
							id := base + c*100 + i
							err := writeSmall(s, id)
							mu.Lock()
							if err == nil {
								l.acked[id] = true
							} else {
								l.maybe[id] = true
							}
							mu.Unlock()
						}
					})
				}
				wg.Wait()
			}
			run(1000)
			m.CrashAfter(r.Intn(400))
			run(2000)
			s.Close()
			for round := int64(0); round < 3; round++ {
				cfg.FS = m.CrashClone(seed*10 + round)
				s2, err := Open(ctx, cfg)
				if err != nil {
					t.Fatalf("reopen after crash: %v", err)
				}
				verifyLedger(t, s2, l)
				s2.Close()
			}
		})
	}
}

// TestBufferedOpenEnded: an open-ended writer is kept in memory while its
// bytes stay within GroupCommitMax (and commits with a group), and moves
// to a container once a write takes it past (and commits on its own);
// either way the committed block is the bytes written, hflushed short
// chunk rewritten included.
func TestBufferedOpenEnded(t *testing.T) {
	d := streamData(9, 6000)
	crcs := chunks.Sums(nil, d, 512)
	cases := []struct {
		name         string
		max          int64
		wantBuffered bool
		wantGroups   uint64
	}{
		{"within the limit", 64 << 10, true, 1},
		{"grown past it", 4096, false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(NewMemFS(), []string{"/d"}, true)
			cfg.KeyFile = "/key"
			cfg.GroupCommitMax = tc.max
			s := mustOpen(t, cfg)
			defer s.Close()
			w, err := s.CreateWith(ctx, BlockMeta{ID: 1, Inode: 3, GenStamp: 4}, CreateOptions{BytesPerChecksum: 512, OpenEnded: true})
			if err != nil {
				t.Fatal(err)
			}
			// An hflush of 1,100 bytes (a short chunk), then the rest from
			// that chunk's start.
			if err := w.WriteAt(0, d[:1100], chunks.Sums(nil, d[:1100], 512)); err != nil {
				t.Fatal(err)
			}
			if cr, err := w.ReadChunks(0, 0, nil); err != nil || !bytes.Equal(cr.Data, d[:1100]) {
				t.Fatalf("hflushed bytes: %d, %v", len(cr.Data), err)
			}
			if err := w.WriteAt(1024, d[1024:], crcs[2:]); err != nil {
				t.Fatal(err)
			}
			if w.buffered != tc.wantBuffered || (w.c == nil) != tc.wantBuffered {
				t.Fatalf("buffered %v (container %v), want buffered %v", w.buffered, w.c != nil, tc.wantBuffered)
			}
			info, err := w.Commit(ctx)
			if err != nil || info.Length != int64(len(d)) || info.CRC != crc32c(d) {
				t.Fatalf("commit: %+v, %v", info, err)
			}
			checkBlockBytes(t, s, 1, d)
			if n, _ := groups(t, s); n != tc.wantGroups {
				t.Fatalf("%d group commits, want %d", n, tc.wantGroups)
			}
		})
	}
}
