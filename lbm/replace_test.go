package lbm

import (
	"bytes"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/blockfs/blockfs/errs"
)

// dataPathOf is the data file of the container holding a block.
func dataPathOf(info BlockInfo) string { return info.Container + ".data" }

// checkVersion checks that block id is live with genstamp gen and bytes want.
func checkVersion(t testing.TB, s *Store, id, gen uint64, want []byte) BlockInfo {
	t.Helper()
	info, ok := s.Stat(id)
	if !ok || info.GenStamp != gen || info.Length != int64(len(want)) || info.CRC != crc32c(want) {
		t.Fatalf("block %d: stat %+v (ok %v), want gen %d length %d", id, info, ok, gen, len(want))
	}
	got, err := s.Read(ctx, id, 0, int64(len(want)))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("block %d gen %d: read: %v", id, gen, err)
	}
	cr, err := s.ReadChunks(ctx, id, 0, 0, nil)
	if err != nil || !bytes.Equal(cr.Data, want) {
		t.Fatalf("block %d gen %d: read chunks: %v", id, gen, err)
	}
	return info
}

// checkUsage checks Usage against the extents of the live blocks.
func checkUsage(t testing.TB, s *Store) {
	t.Helper()
	var want int64
	for _, b := range s.Blocks() {
		want += alignUp(b.Length + tableLen(b.Length, uint32(b.BytesPerChecksum)))
	}
	if _, used := s.Usage(); used != want {
		t.Fatalf("used %d, live extents %d", used, want)
	}
}

// TestReplace: a Replace write leaves the old version readable until
// Commit, which switches to the new one and releases the old one's space,
// in the same container (no DELETE: replay lets the higher genstamp win)
// or in another (a DELETE there); after a reopen only the new version is
// live.
func TestReplace(t *testing.T) {
	for _, enc := range []bool{false, true} {
		for _, cross := range []bool{false, true} {
			for _, mode := range replayModes {
				t.Run(fmt.Sprintf("enc=%v/cross=%v/%s", enc, cross, mode.name), func(t *testing.T) {
					m := NewMemFS()
					cfg := testConfig(m, []string{"/d"}, enc)
					cfg.KeyFile = "/key"
					mode.apply(&cfg)
					s := mustOpen(t, cfg)
					const id = 1
					oldData, newData := streamData(1, 5000), streamData(2, 7000)
					if err := s.Put(ctx, BlockMeta{ID: id, Inode: 7, GenStamp: 5}, oldData); err != nil {
						t.Fatal(err)
					}
					old := checkVersion(t, s, id, 5, oldData)
					oldOff := func() int64 { e, _ := s.index.get(id); return e.off }()
					var holder *BlockWriter
					if cross {
						// Hold the old block's container with another writer.
						holder = holdContainer(t, s)
					}
					for _, gs := range []uint64{4, 5} {
						_, err := s.CreateWith(ctx, BlockMeta{ID: id, GenStamp: gs}, CreateOptions{BytesPerChecksum: 512, OpenEnded: true, Replace: true})
						if !errs.Is(err, errs.Exist) {
							t.Fatalf("replace with genstamp %d: %v", gs, err)
						}
					}
					if _, err := s.CreateWith(ctx, BlockMeta{ID: id, GenStamp: 9, Length: 10}, CreateOptions{BytesPerChecksum: 512}); !errs.Is(err, errs.Exist) {
						t.Fatalf("create of a live id without Replace: %v", err)
					}
					w, err := s.CreateWith(ctx, BlockMeta{ID: id, Inode: 7, GenStamp: 6},
						CreateOptions{BytesPerChecksum: 512, OpenEnded: true, Replace: true})
					if err != nil {
						t.Fatal(err)
					}
					if same := w.c == func() *container { e, _ := s.index.get(id); return e.c }(); same == cross {
						t.Fatalf("replacement in the old block's container: %v", same)
					}
					if _, err := s.CreateWith(ctx, BlockMeta{ID: id, GenStamp: 8}, CreateOptions{BytesPerChecksum: 512, OpenEnded: true, Replace: true}); !errs.Is(err, errs.Exist) {
						t.Fatalf("second replace in flight: %v", err)
					}
					if err := s.Put(ctx, BlockMeta{ID: id, GenStamp: 9}, newData); !errs.Is(err, errs.Exist) {
						t.Fatalf("put during a replace: %v", err)
					}
					for _, p := range []int{1000, 3000, 7000} {
						hflushTo(t, w, newData, p)
						checkVersion(t, s, id, 5, oldData) // the old version is served meanwhile
						checkWriterRead(t, w, newData[:p])
					}
					if bs := s.Blocks(); len(bs) != 1 || bs[0].GenStamp != 5 {
						t.Fatalf("blocks during the write: %+v", bs)
					}
					oldMeta := old.Container + ".metadata"
					metaBefore := fileSize(t, m, oldMeta)
					info, err := w.Commit(ctx)
					if err != nil || info.GenStamp != 6 || info.Length != 7000 || info.CRC != crc32c(newData) {
						t.Fatalf("commit %+v: %v", info, err)
					}
					checkVersion(t, s, id, 6, newData)
					if bs := s.Blocks(); len(bs) != 1 || bs[0].GenStamp != 6 {
						t.Fatalf("blocks after commit: %+v", bs)
					}
					checkUsage(t, s)
					// A DELETE in the old container only when it is another one.
					grew := fileSize(t, m, oldMeta) - metaBefore
					want := int64(frameLen(create2BodyLen))
					if cross {
						want = int64(frameLen(deleteBodyLen))
					}
					if grew != want {
						t.Fatalf("old container's metadata grew %d bytes, want %d", grew, want)
					}
					// The old version's bytes are punched.
					raw := readAll(t, m, dataPathOf(old))
					if zeroFrom(raw[oldOff:oldOff+int64(len(oldData))]) != 0 {
						t.Fatal("old version not punched")
					}
					if holder != nil {
						holder.Abort()
					}
					s.Close()
					for range 2 {
						s = mustOpen(t, cfg)
						checkVersion(t, s, id, 6, newData)
						if bs := s.Blocks(); len(bs) != 1 {
							t.Fatalf("blocks after reopen: %+v", bs)
						}
						checkUsage(t, s)
						s.Close()
					}
				})
			}
		}
	}
}

// TestReplaceEdges: Replace of an absent id creates it; an aborted
// replacement leaves the old version; the old version deleted during the
// write; a replacement then compacted keeps only the live version.
func TestReplaceEdges(t *testing.T) {
	for _, enc := range []bool{false, true} {
		t.Run(fmt.Sprintf("enc=%v/absent", enc), func(t *testing.T) {
			dir := t.TempDir()
			cfg := testConfig(nil, []string{dir}, enc)
			s := mustOpen(t, cfg)
			data := streamData(3, 3000)
			w, err := s.CreateWith(ctx, BlockMeta{ID: 3, Inode: 103, GenStamp: 203, Length: 3000},
				CreateOptions{BytesPerChecksum: 512, Replace: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Write(data, chunkCRCs(data, 512)); err != nil {
				t.Fatal(err)
			}
			if _, err := w.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			s.Close()
			s = mustOpen(t, cfg)
			defer s.Close()
			checkStreamed(t, s, 3, data, 512)
		})
		t.Run(fmt.Sprintf("enc=%v/abort", enc), func(t *testing.T) {
			s := mustOpen(t, testConfig(nil, []string{t.TempDir()}, enc))
			defer s.Close()
			oldData := streamData(1, 2000)
			if err := s.Put(ctx, BlockMeta{ID: 1, GenStamp: 1}, oldData); err != nil {
				t.Fatal(err)
			}
			w, err := s.CreateWith(ctx, BlockMeta{ID: 1, GenStamp: 2}, CreateOptions{BytesPerChecksum: 512, OpenEnded: true, Replace: true})
			if err != nil {
				t.Fatal(err)
			}
			hflushTo(t, w, streamData(2, 3000), 3000)
			w.Abort()
			checkVersion(t, s, 1, 1, oldData)
			checkUsage(t, s)
			if err := s.Delete(ctx, 1); err != nil {
				t.Fatal(err)
			}
		})
		t.Run(fmt.Sprintf("enc=%v/old deleted during the write", enc), func(t *testing.T) {
			dir := t.TempDir()
			cfg := testConfig(nil, []string{dir}, enc)
			s := mustOpen(t, cfg)
			if err := s.Put(ctx, BlockMeta{ID: 1, GenStamp: 1}, streamData(1, 2000)); err != nil {
				t.Fatal(err)
			}
			w, err := s.CreateWith(ctx, BlockMeta{ID: 1, GenStamp: 2}, CreateOptions{BytesPerChecksum: 512, OpenEnded: true, Replace: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Delete(ctx, 1); err != nil {
				t.Fatal(err)
			}
			newData := streamData(2, 3000)
			hflushTo(t, w, newData, 3000)
			if _, err := w.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			checkVersion(t, s, 1, 2, newData)
			checkUsage(t, s)
			s.Close()
			s = mustOpen(t, cfg)
			defer s.Close()
			checkVersion(t, s, 1, 2, newData)
		})
		t.Run(fmt.Sprintf("enc=%v/compaction keeps the live version", enc), func(t *testing.T) {
			dir := t.TempDir()
			cfg := testConfig(nil, []string{dir}, enc)
			cfg.MaxBlocksPerContainer = 3
			s := mustOpen(t, cfg)
			if err := s.Put(ctx, BlockMeta{ID: 1, GenStamp: 1}, streamData(1, 2000)); err != nil {
				t.Fatal(err)
			}
			newData := streamData(2, 3000)
			w, err := s.CreateWith(ctx, BlockMeta{ID: 1, GenStamp: 2}, CreateOptions{BytesPerChecksum: 512, OpenEnded: true, Replace: true})
			if err != nil {
				t.Fatal(err)
			}
			hflushTo(t, w, newData, 3000)
			if _, err := w.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if err := s.Put(ctx, BlockMeta{ID: 2, GenStamp: 1}, streamData(3, 100)); err != nil {
				t.Fatal(err)
			}
			if len(metaFiles(t, s.fs, dir)) != 1 {
				t.Fatal("want one container")
			}
			if err := s.Delete(ctx, 2); err != nil { // live 1 of 3 created: compacts
				t.Fatal(err)
			}
			mf := metaFiles(t, s.fs, dir)[0]
			hdr := int64(fileHeaderLen)
			if enc {
				hdr += encHeaderLen
			}
			if got := fileSize(t, s.fs, mf); got != hdr+int64(frameLen(create2BodyLen)) {
				t.Fatalf("compacted metadata is %d bytes, want one CREATE2", got)
			}
			s.Close()
			s = mustOpen(t, cfg)
			defer s.Close()
			checkVersion(t, s, 1, 2, newData)
			checkUsage(t, s)
		})
	}
}

// holdContainer opens a writer that holds a container (synced, so not
// kept in memory for a group commit).
func holdContainer(t *testing.T, s *Store) *BlockWriter {
	t.Helper()
	w, err := s.CreateWith(ctx, BlockMeta{ID: 99, Length: 10}, CreateOptions{BytesPerChecksum: 512, OpenEnded: true})
	if err == nil {
		err = w.Sync()
	}
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// replaceSetup stores block 1 (gen 5, oldData) in one container of /d,
// then starts a Replace of it (gen 6) and writes newData: in another
// container (the first is held by an open writer), or with same, in the
// same one. It returns the store, the replacement writer and the old
// version's info.
func replaceSetup(t *testing.T, cfg Config, oldData, newData []byte, same ...bool) (*Store, *BlockWriter, BlockInfo) {
	t.Helper()
	s := mustOpen(t, cfg)
	if err := s.Put(ctx, BlockMeta{ID: 1, Inode: 7, GenStamp: 5}, oldData); err != nil {
		t.Fatal(err)
	}
	old, _ := s.Stat(1)
	if len(same) == 0 || !same[0] {
		holdContainer(t, s)
	}
	w, err := s.CreateWith(ctx, BlockMeta{ID: 1, Inode: 7, GenStamp: 6}, CreateOptions{BytesPerChecksum: 512, OpenEnded: true, Replace: true})
	if err != nil {
		t.Fatal(err)
	}
	hflushTo(t, w, newData, 1500)
	hflushTo(t, w, newData, len(newData))
	return s, w, old
}

// TestReplaceCrashBeforeOldDelete: the new version's CREATE2 is durable in
// one container and the old version's DELETE never reached the other (its
// write failed, or the log was cut after it): Open finds the id live in
// two containers, keeps the higher genstamp, and appends the DELETE to
// the old one's container, once.
func TestReplaceCrashBeforeOldDelete(t *testing.T) {
	for _, enc := range []bool{false, true} {
		for _, how := range []string{"delete write fails", "log cut"} {
			for _, mode := range replayModes {
				t.Run(fmt.Sprintf("enc=%v/%s/%s", enc, how, mode.name), func(t *testing.T) {
					m := NewMemFS()
					cfg := testConfig(m, []string{"/d"}, enc)
					cfg.KeyFile = "/key"
					mode.apply(&cfg)
					oldData, newData := streamData(1, 5000), streamData(2, 7000)
					s, w, old := replaceSetup(t, cfg, oldData, newData)
					oldMeta := old.Container + ".metadata"
					before := fileSize(t, m, oldMeta)
					if how == "delete write fails" {
						m.Inject(Fault{Op: OpWrite, PathPrefix: oldMeta, Err: syscall.EIO})
					}
					if _, err := w.Commit(ctx); err != nil {
						t.Fatal(err)
					}
					checkVersion(t, s, 1, 6, newData)
					s.Close()
					m.ClearFaults()
					if how == "log cut" {
						img := readAll(t, m, oldMeta)
						if int64(len(img)) != before+int64(frameLen(deleteBodyLen)) {
							t.Fatalf("old container's metadata %d bytes, want %d + a DELETE", len(img), before)
						}
						writeAll(t, m, oldMeta, img[:before])
					} else if got := fileSize(t, m, oldMeta); got != before {
						t.Fatalf("the DELETE was written: %d -> %d", before, got)
					}
					s = mustOpen(t, cfg)
					checkVersion(t, s, 1, 6, newData)
					if bs := s.Blocks(); len(bs) != 1 {
						t.Fatalf("blocks %+v", bs)
					}
					checkUsage(t, s)
					if got := fileSize(t, m, oldMeta); got != before+int64(frameLen(deleteBodyLen)) {
						t.Fatalf("Open did not append the DELETE: %d -> %d", before, got)
					}
					e, _ := s.index.get(1)
					if e.c.name() == old.Container {
						t.Fatal("the old container holds the live version")
					}
					s.Close()
					raw := readAll(t, m, dataPathOf(old))
					oldOff := int64(firstBlockOffset)
					if zeroFrom(raw[oldOff:oldOff+int64(len(oldData))]) != 0 {
						t.Fatal("old version not punched at Open")
					}
					s = mustOpen(t, cfg)
					defer s.Close()
					checkVersion(t, s, 1, 6, newData)
					if got := fileSize(t, m, oldMeta); got != before+int64(frameLen(deleteBodyLen)) {
						t.Fatalf("second Open changed the old container: %d", got)
					}
				})
			}
		}
	}
}

// TestReplaceCrashSweep cuts power at every point of a cross-container
// Replace commit: after replay exactly one version is live, whole (the
// new one if Commit returned nil), and a second Open changes nothing.
func TestReplaceCrashSweep(t *testing.T) {
	for _, c := range []struct {
		enc, same bool
	}{{false, false}, {true, false}, {false, true}, {true, true}} {
		enc := c.enc
		resolved := 0
		for n := 0; n < 12; n++ {
			for seed := int64(0); seed < 3; seed++ {
				t.Run(fmt.Sprintf("enc=%v/same=%v/crash after %d/seed %d", enc, c.same, n, seed), func(t *testing.T) {
					m := NewMemFS()
					cfg := testConfig(m, []string{"/d"}, enc)
					cfg.KeyFile = "/key"
					oldData, newData := streamData(1, 5000), streamData(2, 7000)
					_, w, old := replaceSetup(t, cfg, oldData, newData, c.same)
					oldMeta := old.Container + ".metadata"
					m.CrashAfter(n)
					_, cerr := w.Commit(ctx)
					disk := m.CrashClone(seed)
					before := fileSize(t, disk, oldMeta)
					cfg.FS = disk
					s := mustOpen(t, cfg)
					info, ok := s.Stat(1)
					switch {
					case !ok:
						t.Fatal("no version live")
					case info.GenStamp == 6:
						checkVersion(t, s, 1, 6, newData)
					case cerr == nil:
						t.Fatalf("commit returned nil, gen %d live", info.GenStamp)
					default:
						checkVersion(t, s, 1, 5, oldData)
					}
					if len(s.Blocks()) != 1 {
						t.Fatalf("blocks %+v", s.Blocks())
					}
					checkUsage(t, s)
					if fileSize(t, disk, oldMeta) > before {
						resolved++
					}
					s.Close()
					after := fileSize(t, disk, oldMeta)
					s = mustOpen(t, cfg)
					defer s.Close()
					if got, _ := s.Stat(1); got.GenStamp != info.GenStamp || fileSize(t, disk, oldMeta) != after {
						t.Fatalf("second Open: gen %d, metadata %d -> %d", got.GenStamp, after, fileSize(t, disk, oldMeta))
					}
				})
			}
		}
		if resolved == 0 && !c.same {
			t.Fatalf("enc=%v: no crash point left both versions live", enc)
		}
		if resolved != 0 && c.same {
			t.Fatalf("enc=%v: Open wrote to the metadata of a same-container replace", enc)
		}
	}
}

// TestSameIDInTwoDirs: two stores written apart, then opened as one: the
// higher genstamp wins and the other copy is deleted; equal genstamps
// are corruption (the later container is set aside).
func TestSameIDInTwoDirs(t *testing.T) {
	for _, enc := range []bool{false, true} {
		for _, gens := range [][2]uint64{{5, 7}, {7, 5}, {5, 5}} {
			t.Run(fmt.Sprintf("enc=%v/gens=%v", enc, gens), func(t *testing.T) {
				m := NewMemFS()
				datas := [2][]byte{streamData(1, 3000), streamData(2, 4000)}
				for i, dir := range []string{"/a", "/b"} {
					cfg := testConfig(m, []string{dir}, enc)
					cfg.KeyFile = "/key"
					s := mustOpen(t, cfg)
					if err := s.Put(ctx, BlockMeta{ID: 1, GenStamp: gens[i]}, datas[i]); err != nil {
						t.Fatal(err)
					}
					if err := s.Put(ctx, BlockMeta{ID: uint64(10 + i), GenStamp: 1}, datas[i]); err != nil {
						t.Fatal(err)
					}
					s.Close()
				}
				cfg := testConfig(m, []string{"/a", "/b"}, enc)
				cfg.KeyFile = "/key"
				if gens[0] == gens[1] {
					if _, err := Open(ctx, cfg); !errs.Is(err, errs.Corrupt) || !strings.Contains(err.Error(), "live in two containers") {
						t.Fatalf("equal genstamps: %v", err)
					}
					cfg.FailOnCorruptContainer = false
					s := mustOpen(t, cfg)
					defer s.Close()
					if len(s.SetAside()) != 2 || len(s.Blocks()) != 2 {
						t.Fatalf("set aside %v, blocks %+v", s.SetAside(), s.Blocks())
					}
					checkUsage(t, s)
					return
				}
				win := 0
				if gens[1] > gens[0] {
					win = 1
				}
				for range 2 {
					s := mustOpen(t, cfg)
					checkVersion(t, s, 1, gens[win], datas[win])
					if len(s.Blocks()) != 3 {
						t.Fatalf("blocks %+v", s.Blocks())
					}
					checkUsage(t, s)
					s.Close()
				}
				loser := testConfig(m, []string{[]string{"/a", "/b"}[1-win]}, enc)
				loser.KeyFile = "/key"
				s := mustOpen(t, loser)
				defer s.Close()
				if _, ok := s.Stat(1); ok || len(s.Blocks()) != 1 {
					t.Fatalf("the losing dir still has the block: %+v", s.Blocks())
				}
			})
		}
	}
}
