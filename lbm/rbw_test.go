package lbm

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blockfs/blockfs/errs"
)

// syncedWrite starts an open-ended write of block id (generation gen)
// and, for each point, writes up to it (hflush style) and Syncs. It
// returns the writer and the bytes.
func syncedWrite(t *testing.T, s *Store, id, gen uint64, bpc int, points []int, o CreateOptions) (*BlockWriter, []byte) {
	t.Helper()
	final := 0
	for _, p := range points {
		final = max(final, p)
	}
	data := streamData(id, final+bpc*3)
	o.BytesPerChecksum, o.OpenEnded = bpc, true
	w, err := s.CreateWith(ctx, BlockMeta{ID: id, Inode: id + 100, GenStamp: gen}, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range points {
		if int64(p) < w.Written() {
			if err := w.Truncate(int64(p)); err != nil {
				t.Fatal(err)
			}
		} else {
			hflushTo(t, w, data, p)
		}
		if err := w.Sync(); err != nil {
			t.Fatalf("sync at %d: %v", p, err)
		}
	}
	return w, data
}

// checkRecovers checks the waiting replica of id (want bytes, generation
// gen), recovers its first n bytes under gen+1 and reads them back.
func checkRecovers(t *testing.T, s *Store, id, gen uint64, bpc int, want []byte, n int64) {
	t.Helper()
	wr, ok := s.Waiting(id)
	if !ok || wr.ID != id || wr.Inode != id+100 || wr.GenStamp != gen || wr.Length != int64(len(want)) || wr.BytesPerChecksum != bpc || wr.Synced.IsZero() {
		t.Fatalf("waiting replica of %d: %+v %v; want %d bytes under generation %d", id, wr, ok, len(want), gen)
	}
	if all := s.WaitingReplicas(); len(all) != 1 || all[0] != wr {
		t.Fatalf("WaitingReplicas: %+v", all)
	}
	if _, ok := s.Stat(id); ok {
		t.Fatalf("a waiting replica is visible to Stat")
	}
	if len(s.Blocks()) != 0 {
		t.Fatalf("a waiting replica is in Blocks: %+v", s.Blocks())
	}
	if _, err := s.ReadChunks(ctx, id, 0, 0, nil); errs.KindOf(err) != errs.NotFound {
		t.Fatalf("ReadChunks of a waiting replica: %v", err)
	}
	if _, err := s.RecoverWaiting(ctx, id, gen, n); errs.KindOf(err) != errs.Invalid {
		t.Fatalf("recover under the same generation: %v", err)
	}
	if _, err := s.RecoverWaiting(ctx, id, gen+1, int64(len(want))+1); errs.KindOf(err) != errs.Invalid {
		t.Fatalf("recover past the length: %v", err)
	}
	info, err := s.RecoverWaiting(ctx, id, gen+1, n)
	if err != nil {
		t.Fatalf("recover: %v", err)
	}
	if info.GenStamp != gen+1 || info.Length != n || info.CRC != crc32c(want[:n]) || info.BytesPerChecksum != bpc {
		t.Fatalf("recovered %+v", info)
	}
	checkBlockBytes(t, s, id, want[:n])
	if _, ok := s.Waiting(id); ok {
		t.Fatalf("still waiting after recovery")
	}
}

func checkBlockBytes(t *testing.T, s *Store, id uint64, want []byte) {
	t.Helper()
	cr, err := s.ReadChunks(ctx, id, 0, 0, nil)
	if err != nil || !bytes.Equal(cr.Data, want) {
		t.Fatalf("block %d: %d bytes, %v; want %d bytes", id, len(cr.Data), err, len(want))
	}
}

// TestWaitingReplicaAfterCrash: an open-ended write synced at several
// lengths (some past a Truncate), then more bytes unsynced, then a power
// cut: after Open the replica waits with the last synced length, is
// invisible, and recovers byte-identical (whole or a prefix); the
// recovered block survives a reopen and the replica waits no more.
func TestWaitingReplicaAfterCrash(t *testing.T) {
	cases := []struct {
		name   string
		bpc    int
		points []int
		n      int64 // recovered length; -1: all
	}{
		{"one partial chunk", 512, []int{100}, -1},
		{"growing", 512, []int{100, 700, 1024, 5000}, -1},
		{"same length twice", 512, []int{1500, 1500}, -1},
		{"after a truncate", 512, []int{3000, 1200, 2000}, -1},
		{"empty", 512, []int{0}, -1},
		{"prefix", 64, []int{1, 65, 4097}, 100},
		{"large prefix", 4096, []int{70000, 1<<20 + 3}, 1 << 20},
	}
	for _, enc := range []bool{false, true} {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("enc=%v/%s", enc, tc.name), func(t *testing.T) {
				m := NewMemFS()
				s := mustOpen(t, testConfig(m, []string{"/d"}, enc))
				const id, gen = 7, 1001
				w, data := syncedWrite(t, s, id, gen, tc.bpc, tc.points, CreateOptions{})
				synced := tc.points[len(tc.points)-1]
				hflushTo(t, w, data, synced+2*tc.bpc+1) // never synced
				for seed := range int64(3) {
					s2 := mustOpen(t, testConfig(m.CrashClone(seed), []string{"/d"}, enc))
					if st := s2.OpenStats(); st.WaitingReplicas != 1 {
						t.Fatalf("OpenStats: %+v", st)
					}
					n := tc.n
					if n < 0 {
						n = int64(synced)
					}
					checkRecovers(t, s2, id, gen, tc.bpc, data[:synced], n)
					s2.Close()
					s3 := mustOpen(t, testConfig(s2.cfg.FS, []string{"/d"}, enc))
					if _, ok := s3.Waiting(id); ok || s3.OpenStats().WaitingReplicas != 0 {
						t.Fatalf("waiting after recovery and reopen")
					}
					checkBlockBytes(t, s3, id, data[:n])
					s3.Close()
				}
				w.Abort()
				s.Close()
			})
		}
	}
}

// TestWaitingReplicaMetadataCut: the metadata log cut at every point
// (a torn tail): the replica waits with the length of the last whole RBW
// record, or not at all before the first.
func TestWaitingReplicaMetadataCut(t *testing.T) {
	points := []int{100, 600, 1024, 3333}
	for _, enc := range []bool{false, true} {
		t.Run(fmt.Sprintf("enc=%v", enc), func(t *testing.T) {
			dir := t.TempDir()
			s := mustOpen(t, testConfig(nil, []string{dir}, enc))
			const id, gen = 9, 5
			w, data := syncedWrite(t, s, id, gen, 512, points, CreateOptions{})
			w.Abandon() // a datanode shutting down
			s.Close()
			metas, _ := filepath.Glob(filepath.Join(dir, "*.metadata"))
			if len(metas) != 1 {
				t.Fatalf("metadata files: %v", metas)
			}
			fi, err := os.Stat(metas[0])
			if err != nil {
				t.Fatal(err)
			}
			hdr := int64(fileHeaderLen)
			if enc {
				hdr += encHeaderLen
			}
			rec := int64(frameLen(rbwBodyLen))
			if fi.Size() != hdr+rec*int64(len(points)) {
				t.Fatalf("metadata of %d bytes, want %d RBW records", fi.Size(), len(points))
			}
			var cuts []int64 // every record boundary, and cuts inside each record
			for b := hdr; b <= fi.Size(); b += rec {
				cuts = append(cuts, b)
				for _, in := range []int64{1, frameHeaderLen, 40, rec - 1} {
					if b+in < fi.Size() {
						cuts = append(cuts, b+in)
					}
				}
			}
			for _, cut := range cuts {
				cdir := t.TempDir()
				copyDir(t, dir, cdir)
				if err := os.Truncate(filepath.Join(cdir, filepath.Base(metas[0])), cut); err != nil {
					t.Fatal(err)
				}
				s2 := mustOpen(t, testConfig(nil, []string{cdir}, enc))
				k := (cut - hdr) / rec
				wr, ok := s2.Waiting(id)
				switch {
				case k == 0 && ok:
					t.Fatalf("cut at %d: waiting %+v before any RBW record", cut, wr)
				case k > 0:
					checkRecovers(t, s2, id, gen, 512, data[:points[k-1]], int64(points[k-1]))
				}
				s2.Close()
			}
		})
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	ents, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err == nil {
			err = os.WriteFile(filepath.Join(to, e.Name()), b, 0o600)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestWaitingReplicaSuperseded: a commit after Sync, an Abort after Sync
// (its RBW-drop record) and DropWaiting leave no waiting replica after a
// reopen; a commit's CREATE2 supersedes the RBW records before it.
func TestWaitingReplicaSuperseded(t *testing.T) {
	for _, enc := range []bool{false, true} {
		t.Run(fmt.Sprintf("enc=%v", enc), func(t *testing.T) {
			dir := t.TempDir()
			cfg := testConfig(nil, []string{dir}, enc)
			s := mustOpen(t, cfg)
			w, data := syncedWrite(t, s, 1, 10, 512, []int{100, 2000}, CreateOptions{})
			if _, err := w.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			w, _ = syncedWrite(t, s, 2, 10, 512, []int{700}, CreateOptions{})
			w.Abort()
			w, _ = syncedWrite(t, s, 3, 10, 512, []int{900}, CreateOptions{})
			w.Abandon()
			s.Close()

			s = mustOpen(t, cfg)
			if got := s.WaitingReplicas(); len(got) != 1 || got[0].ID != 3 || got[0].Length != 900 {
				t.Fatalf("waiting: %+v", got)
			}
			checkBlockBytes(t, s, 1, data[:2000])
			if err := s.DropWaiting(ctx, 3); err != nil {
				t.Fatal(err)
			}
			if err := s.DropWaiting(ctx, 3); errs.KindOf(err) != errs.NotFound {
				t.Fatalf("second drop: %v", err)
			}
			if _, err := s.RecoverWaiting(ctx, 3, 11, 0); errs.KindOf(err) != errs.NotFound {
				t.Fatalf("recover a dropped replica: %v", err)
			}
			s.Close()
			s = mustOpen(t, cfg)
			defer s.Close()
			if got := s.WaitingReplicas(); len(got) != 0 || s.OpenStats().WaitingReplicas != 0 {
				t.Fatalf("waiting after drop: %+v", got)
			}
			if b := s.Blocks(); len(b) != 1 || b[0].ID != 1 {
				t.Fatalf("blocks: %+v", b)
			}
			// New blocks go past the dropped replica's bytes.
			w, _ = syncedWrite(t, s, 4, 1, 512, []int{10}, CreateOptions{})
			if w.off < 4*fsBlockSize {
				t.Fatalf("new write at %d reuses earlier bytes", w.off)
			}
			w.Abort()
		})
	}
}

// TestWaitingReplicaReplace: a Replace write (an append) of a live block
// synced, then a crash: the old version stays live, the new one waits,
// and recovery replaces the old one.
func TestWaitingReplicaReplace(t *testing.T) {
	for _, enc := range []bool{false, true} {
		t.Run(fmt.Sprintf("enc=%v", enc), func(t *testing.T) {
			dir := t.TempDir()
			cfg := testConfig(nil, []string{dir}, enc)
			s := mustOpen(t, cfg)
			const id = 5
			w, data := syncedWrite(t, s, id, 1, 512, []int{1000}, CreateOptions{})
			if _, err := w.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			w2, err := s.CreateWith(ctx, BlockMeta{ID: id, Inode: id + 100, GenStamp: 2},
				CreateOptions{BytesPerChecksum: 512, OpenEnded: true, Replace: true})
			if err != nil {
				t.Fatal(err)
			}
			hflushTo(t, w2, data, 1000)
			hflushTo(t, w2, data, 1700)
			if err := w2.Sync(); err != nil {
				t.Fatal(err)
			}
			w2.Abandon()
			s.Close()
			s = mustOpen(t, cfg)
			defer s.Close()
			if info, ok := s.Stat(id); !ok || info.GenStamp != 1 || info.Length != 1000 {
				t.Fatalf("old version: %+v %v", info, ok)
			}
			if wr, ok := s.Waiting(id); !ok || wr.GenStamp != 2 || wr.Length != 1700 {
				t.Fatalf("waiting: %+v %v", wr, ok)
			}
			info, err := s.RecoverWaiting(ctx, id, 3, 1700)
			if err != nil || info.GenStamp != 3 {
				t.Fatalf("recover: %+v %v", info, err)
			}
			checkBlockBytes(t, s, id, data[:1700])
		})
	}
}

// TestWaitingReplicaCorrupt: a waiting replica whose bytes changed on disk
// is errs.Corrupt on recovery, and dropped for good; a malformed RBW
// record is corruption of the container.
func TestWaitingReplicaCorrupt(t *testing.T) {
	for _, enc := range []bool{false, true} {
		t.Run(fmt.Sprintf("enc=%v", enc), func(t *testing.T) {
			dir := t.TempDir()
			cfg := testConfig(nil, []string{dir}, enc)
			s := mustOpen(t, cfg)
			w, _ := syncedWrite(t, s, 8, 3, 512, []int{3000}, CreateOptions{})
			w.Abandon()
			s.Close()
			datas, _ := filepath.Glob(filepath.Join(dir, "*.data"))
			f, err := os.OpenFile(datas[0], os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			var b [1]byte
			f.ReadAt(b[:], firstBlockOffset+2500)
			b[0] ^= 0x10
			f.WriteAt(b[:], firstBlockOffset+2500)
			f.Close()
			s = mustOpen(t, cfg)
			if _, err := s.RecoverWaiting(ctx, 8, 4, 100); errs.KindOf(err) != errs.Corrupt {
				t.Fatalf("recover corrupt bytes: %v", err)
			}
			if _, ok := s.Waiting(8); ok {
				t.Fatalf("still waiting after a corrupt recovery")
			}
			if _, ok := s.Stat(8); ok {
				t.Fatalf("corrupt replica committed")
			}
			s.Close()
			s = mustOpen(t, cfg)
			if _, ok := s.Waiting(8); ok {
				t.Fatalf("waiting again after reopen")
			}
			s.Close()

			if enc {
				return
			}
			// A malformed RBW record (bytes per checksum 3).
			metas, _ := filepath.Glob(filepath.Join(dir, "*.metadata"))
			mf, err := os.OpenFile(metas[0], os.O_RDWR|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			mf.Write(appendRBW(nil, &createRec{ID: 9, GenStamp: 1, Offset: firstBlockOffset, Length: 10, BPC: 3}))
			mf.Close()
			if _, err := Open(ctx, cfg); errs.KindOf(err) != errs.Corrupt || !strings.Contains(err.Error(), "RBW") {
				t.Fatalf("open with a malformed RBW record: %v", err)
			}
		})
	}
}

// TestWaitingReplicaKeepsContainer: a full container holding a waiting
// replica is neither removed when its last block is deleted nor compacted
// (at Open or at runtime): the replica still recovers after reopens; once
// it is recovered the dead container goes.
func TestWaitingReplicaKeepsContainer(t *testing.T) {
	for _, enc := range []bool{false, true} {
		t.Run(fmt.Sprintf("enc=%v", enc), func(t *testing.T) {
			dir := t.TempDir()
			cfg := testConfig(nil, []string{dir}, enc)
			cfg.MaxBlocksPerContainer = 4
			s := mustOpen(t, cfg)
			if err := s.Put(ctx, BlockMeta{ID: 1, GenStamp: 1}, blockData(1)); err != nil {
				t.Fatal(err)
			}
			w, data := syncedWrite(t, s, 2, 7, 512, []int{2500}, CreateOptions{})
			w.Abandon()
			for _, id := range []uint64{3, 4, 5} {
				if err := s.Put(ctx, BlockMeta{ID: id, GenStamp: 1}, blockData(id)); err != nil {
					t.Fatal(err)
				}
			}
			s.Close()
			containers := func() int {
				m, _ := filepath.Glob(filepath.Join(dir, "*.metadata"))
				return len(m)
			}
			before := containers()
			s = mustOpen(t, cfg)
			if _, ok := s.Waiting(2); !ok {
				t.Fatal("no waiting replica")
			}
			if err := s.DeleteBatch(ctx, []uint64{1, 3, 4}); err != nil {
				t.Fatal(err)
			}
			s.Close()
			s = mustOpen(t, cfg) // compaction at Open would drop the RBW record
			if err := s.Delete(ctx, 5); err != nil {
				t.Fatal(err)
			}
			if containers() != before {
				t.Fatalf("%d containers, want %d: the one holding the waiting replica went", containers(), before)
			}
			s.Close()
			s = mustOpen(t, cfg)
			defer s.Close()
			checkRecovers(t, s, 2, 7, 512, data[:2500], 2500)
			if containers() != before {
				t.Fatalf("%d containers after recovery, want %d (the dead one removed, a new one)", containers(), before)
			}
		})
	}
}
