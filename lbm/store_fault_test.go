package lbm

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"syscall"
	"testing"

	"github.com/blockfs/blockfs/errs"
)

// TestZeroLengthBlockSurvivesReopen is the regression test of a bug found
// by TestStoreModel: an empty block (the datanode accepts them) gets a
// CREATE at the next aligned offset, but nothing is written there, so the
// data file can end before that offset. Replay rejected such a CREATE as
// "malformed" (offset+length beyond the data file) and Open failed: one
// empty block bricked the datanode's restart.
func TestZeroLengthBlockSurvivesReopen(t *testing.T) {
	for _, enc := range []bool{false, true} {
		for _, mode := range replayModes {
			for _, first := range []int{0, 7, 4096} { // bytes of a block before the empty one
				t.Run(fmt.Sprintf("enc=%v/%s/first=%d", enc, mode.name, first), func(t *testing.T) {
					m := NewMemFS()
					cfg := testConfig(m, []string{"/d"}, enc)
					mode.apply(&cfg)
					s := mustOpen(t, cfg)
					if first > 0 {
						if err := s.Put(ctx, BlockMeta{ID: 1}, bytes.Repeat([]byte{1}, first)); err != nil {
							t.Fatal(err)
						}
					}
					if err := s.Put(ctx, BlockMeta{ID: 2}, nil); err != nil {
						t.Fatal(err)
					}
					s.Close()
					s, err := Open(ctx, cfg)
					if err != nil {
						t.Fatalf("reopen after storing an empty block: %v", err)
					}
					defer s.Close()
					if b, err := s.Read(ctx, 2, 0, 0); err != nil || len(b) != 0 {
						t.Fatalf("empty block: %v", err)
					}
					// The store keeps working after it.
					if err := s.Put(ctx, BlockMeta{ID: 3}, []byte("after")); err != nil {
						t.Fatal(err)
					}
					if b, err := s.Read(ctx, 3, 0, 5); err != nil || string(b) != "after" {
						t.Fatalf("block after the empty one: %q %v", b, err)
					}
				})
			}
		}
	}
}

// metaImage writes blocks 1..8 (one Put each) and deletes 3 and 6 in one
// container of /d, closes the store, and returns the metadata file's path,
// its on-disk bytes and the offset of every record (8 CREATEs, 2 DELETEs).
func metaImage(t *testing.T, m *MemFS, enc bool) (string, []byte, []int64) {
	t.Helper()
	cfg := testConfig(m, []string{"/d"}, enc)
	cfg.CompactLiveRatio = 0
	s := mustOpen(t, cfg)
	for id := uint64(1); id <= 8; id++ {
		if err := s.Put(ctx, BlockMeta{ID: id, Inode: 9, GenStamp: id}, blockData(id)); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []uint64{3, 6} {
		if err := s.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	mf := metaFiles(t, m, "/d")[0]
	img := readAll(t, m, mf)
	off := int64(fileHeaderLen)
	if enc {
		off += encHeaderLen
	}
	var offs []int64
	for i := range 10 {
		offs = append(offs, off)
		if i < 8 {
			off += int64(frameLen(create2BodyLen))
		} else {
			off += int64(frameLen(deleteBodyLen))
		}
	}
	if off != int64(len(img)) {
		t.Fatalf("metadata is %d bytes, want %d", len(img), off)
	}
	return mf, img, offs
}

func readAll(t *testing.T, fs FS, p string) []byte {
	t.Helper()
	f, err := fs.OpenFile(p, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, fileSize(t, fs, p))
	if n, err := f.ReadAt(b, 0); n != len(b) {
		t.Fatalf("read %s: %v", p, err)
	}
	return b
}

func writeAll(t *testing.T, fs FS, p string, b []byte) {
	t.Helper()
	f, err := fs.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		t.Fatal(err)
	}
	f.Sync()
	f.Close()
}

// TestAnyFlippedBitIsCorrupt flips one random bit in a random synced
// record (any of the 10, first to last, CREATE or DELETE, frame header,
// body or trailer), plain and encrypted, on both replay paths: Open must
// fail with errs.Corrupt naming the file and the record's offset, never
// treat it as a torn tail.
func TestAnyFlippedBitIsCorrupt(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for _, enc := range []bool{false, true} {
		m := NewMemFS()
		mf, img, offs := metaImage(t, m, enc)
		for trial := range 40 {
			i := r.Intn(len(offs))
			end := int64(len(img))
			if i+1 < len(offs) {
				end = offs[i+1]
			}
			at := offs[i] + r.Int63n(end-offs[i])
			bit := byte(1) << r.Intn(8)
			for _, mode := range replayModes {
				t.Run(fmt.Sprintf("enc=%v/%d/%s", enc, trial, mode.name), func(t *testing.T) {
					fs := m.CrashClone(0)
					bad := bytes.Clone(img)
					bad[at] ^= bit
					writeAll(t, fs, mf, bad)
					cfg := testConfig(fs, []string{"/d"}, enc)
					mode.apply(&cfg)
					s, err := Open(ctx, cfg)
					if err == nil {
						s.Close()
						t.Fatalf("bit %#x at byte %d (record %d at %d) flipped: Open succeeded", bit, at, i, offs[i])
					}
					want := fmt.Sprintf("offset %d", offs[i])
					if !errs.Is(err, errs.Corrupt) || !strings.Contains(err.Error(), mf) || !strings.Contains(err.Error(), want) {
						t.Fatalf("bit %#x at byte %d (record %d): want Corrupt naming %s and %q, got %v", bit, at, i, mf, want, err)
					}
				})
			}
		}
	}
}

// TestTornTailIsNeverCorruption cuts the last record at every byte, and
// zeroes its on-disk body (the header reached the disk, the body did
// not), plain and encrypted, on both paths: Open must succeed, truncate
// the file to the end of the previous record, and keep every block.
func TestTornTailIsNeverCorruption(t *testing.T) {
	for _, enc := range []bool{false, true} {
		m := NewMemFS()
		mf, img, offs := metaImage(t, m, enc)
		last := offs[len(offs)-1] // DELETE of block 6
		type tail struct {
			name string
			b    []byte
		}
		var tails []tail
		for cut := last + 1; cut < int64(len(img)); cut++ {
			tails = append(tails, tail{fmt.Sprintf("cut%d", cut-last), img[:cut]})
		}
		zb := bytes.Clone(img)
		clear(zb[last+frameHeaderLen:])
		tails = append(tails, tail{"zero-body", zb})
		zall := bytes.Clone(img)
		clear(zall[last:])
		tails = append(tails, tail{"zero-frame", append(zall, make([]byte, 100)...)})
		for _, tl := range tails {
			for _, mode := range replayModes {
				t.Run(fmt.Sprintf("enc=%v/%s/%s", enc, tl.name, mode.name), func(t *testing.T) {
					fs := m.CrashClone(0)
					writeAll(t, fs, mf, tl.b)
					cfg := testConfig(fs, []string{"/d"}, enc)
					mode.apply(&cfg)
					s, err := Open(ctx, cfg)
					if err != nil {
						t.Fatalf("benign torn tail reported as %v", err)
					}
					defer s.Close()
					if got := fileSize(t, fs, mf); got != last {
						t.Fatalf("metadata truncated to %d, want %d", got, last)
					}
					// The DELETE of 6 is gone with the tail: 6 is back,
					// which is right, since that DELETE was never acknowledged.
					for _, id := range []uint64{1, 2, 4, 5, 6, 7, 8} {
						checkBlock(t, s, id)
					}
					if _, ok := s.Stat(3); ok {
						t.Fatal("block 3 came back")
					}
				})
			}
		}
	}
}

// TestTransientFaultsDoNotPoison injects one EIO or ENOSPC on each kind of
// operation in one of two data dirs, runs a put, a read of every block and
// a delete, clears the fault, and checks that every acknowledged block
// still reads back (after the fault and after a reopen), and that no
// acknowledged delete is undone.
func TestTransientFaultsDoNotPoison(t *testing.T) {
	for _, op := range faultOps {
		for _, e := range []syscall.Errno{syscall.EIO, syscall.ENOSPC} {
			for _, enc := range []bool{false, true} {
				t.Run(fmt.Sprintf("op%d/%v/enc=%v", op, e, enc), func(t *testing.T) {
					m := NewMemFS()
					cfg := testConfig(m, []string{"/d0", "/d1"}, enc)
					cfg.KeyFile = "/key"
					cfg.MaxBlocksPerContainer = 3
					s := mustOpen(t, cfg)
					live := map[uint64]bool{}
					for id := uint64(1); id <= 12; id++ {
						if err := s.Put(ctx, BlockMeta{ID: id}, blockData(id)); err != nil {
							t.Fatal(err)
						}
						live[id] = true
					}
					s.Close()
					s = mustOpen(t, cfg) // data headers not yet loaded
					defer func() { s.Close() }()
					m.Inject(Fault{Op: op, PathPrefix: "/d1/", Err: e, Count: 1})
					maybe := map[uint64]bool{}
					if err := s.Put(ctx, BlockMeta{ID: 100}, blockData(100)); err == nil {
						live[100] = true
					} else {
						maybe[100] = true
					}
					for id := range live {
						if _, err := s.Read(ctx, id, 0, 1); err != nil && !errs.Is(err, errs.IO) {
							t.Fatalf("read %d under fault: %v", id, err)
						}
					}
					deleted := map[uint64]bool{}
					for _, id := range []uint64{2, 5} {
						if err := s.Delete(ctx, id); err == nil {
							deleted[id] = true
						} else {
							maybe[id] = true
						}
						delete(live, id)
					}
					m.ClearFaults()
					check := func(when string) {
						for id := range live {
							if id == 100 {
								continue
							}
							if _, err := s.Read(ctx, id, 0, 1); err != nil {
								t.Fatalf("%s: block %d unreadable after a one-off %v on op %d: %v", when, id, e, op, err)
							}
						}
						for id := range deleted {
							if _, ok := s.Stat(id); ok {
								t.Fatalf("%s: deleted block %d came back", when, id)
							}
						}
					}
					check("after the fault")
					s.Close()
					s = mustOpen(t, cfg)
					check("after reopen")
					if live[100] {
						checkBlock(t, s, 100)
					}
					_ = errors.New
				})
			}
		}
	}
}

// TestCrashDuringDeadContainerRemoval is the regression test of a bug
// found by TestStoreModel: removing a dead container deletes the data
// file, then the metadata file, then fsyncs the directory. A crash after
// the first remove can leave the metadata file (CREATEs and DELETEs of
// every block) without a data file. Replay checked each CREATE against
// the size of the missing data file (0), called the container corrupt and
// Open failed, instead of finishing the removal.
func TestCrashDuringDeadContainerRemoval(t *testing.T) {
	for _, enc := range []bool{false, true} {
		for _, mode := range replayModes {
			t.Run(fmt.Sprintf("enc=%v/%s", enc, mode.name), func(t *testing.T) {
				sawOrphan := false
				for k := 3; k <= 5; k++ {
					m := NewMemFS()
					cfg := testConfig(m, []string{"/d"}, enc)
					cfg.MaxBlocksPerContainer = 2
					mode.apply(&cfg)
					s := mustOpen(t, cfg)
					for id := uint64(1); id <= 3; id++ { // 1,2 fill a container; 3 opens another
						if err := s.Put(ctx, BlockMeta{ID: id}, blockData(id)); err != nil {
							t.Fatal(err)
						}
					}
					if err := s.Delete(ctx, 1); err != nil {
						t.Fatal(err)
					}
					// Last delete: DELETE write, fsync, (metadata fsync,) remove
					// .data, then the power goes after k mutating operations.
					m.CrashAfter(k)
					if err := s.Delete(ctx, 2); err != nil {
						t.Fatalf("delete: %v", err)
					}
					s.Close()
					for seed := int64(0); seed < 20; seed++ {
						fs := m.CrashClone(seed)
						orphan := false
						for _, mf := range metaFiles(t, fs, "/d") {
							if _, err := fs.Stat(strings.TrimSuffix(mf, ".metadata") + ".data"); err != nil {
								orphan = true
							}
						}
						sawOrphan = sawOrphan || orphan
						cfg.FS = fs
						s, err := Open(ctx, cfg)
						if err != nil {
							t.Fatalf("seed %d (orphan metadata %v): reopen: %v", seed, orphan, err)
						}
						for _, id := range []uint64{1, 2} {
							if _, ok := s.Stat(id); ok {
								t.Fatalf("deleted block %d came back", id)
							}
						}
						checkBlock(t, s, 3)
						if n := len(metaFiles(t, fs, "/d")); n != 1 {
							t.Fatalf("%d containers after repair, want 1", n)
						}
						s.Close()
					}
				}
				if !sawOrphan {
					t.Fatal("no clone had the metadata without its data file: the test lost its point")
				}
			})
		}
	}
}

// TestDeadRemovalAfterFailedDeleteSync is the regression test of a bug
// found by TestStoreModel: a DELETE whose fsync fails stays in the page
// cache; a clean restart replays it, finds the container dead and removes
// its data file. If the power then fails before the DELETE reaches the
// disk, the metadata comes back with a live block and no data file, and
// Open failed ("live blocks but no data file"). Removal now fsyncs the
// metadata first.
func TestDeadRemovalAfterFailedDeleteSync(t *testing.T) {
	for _, enc := range []bool{false, true} {
		for k := range 4 { // the power fails after k mutating operations of the restart
			t.Run(fmt.Sprintf("enc=%v/crashAfter=%d", enc, k), func(t *testing.T) {
				m := NewMemFS()
				cfg := testConfig(m, []string{"/d"}, enc)
				cfg.MaxBlocksPerContainer = 1
				s := mustOpen(t, cfg)
				if err := s.Put(ctx, BlockMeta{ID: 1}, blockData(1)); err != nil {
					t.Fatal(err)
				}
				m.Inject(Fault{Op: OpSync, PathPrefix: "/d/", Err: syscall.EIO, Count: 1})
				if err := s.Delete(ctx, 1); err == nil {
					t.Fatal("delete succeeded although its fsync failed")
				}
				m.ClearFaults()
				s.Close()
				// Restart: replay reads the unsynced DELETE, the container
				// is dead and is removed, and the power fails.
				m.CrashAfter(k)
				if s, err := Open(ctx, cfg); err == nil {
					s.Close()
				}
				for seed := int64(0); seed < 20; seed++ {
					cfg.FS = m.CrashClone(seed)
					s, err := Open(ctx, cfg)
					if err != nil {
						t.Fatalf("seed %d: reopen after the crash: %v", seed, err)
					}
					if _, ok := s.Stat(1); ok {
						checkBlock(t, s, 1) // the DELETE was never acknowledged
					}
					s.Close()
				}
			})
		}
	}
}
