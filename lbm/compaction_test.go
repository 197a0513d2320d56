package lbm

import (
	"fmt"
	"testing"
)

func TestCompactionAndDeadContainers(t *testing.T) {
	for _, enc := range []bool{false, true} {
		t.Run(fmt.Sprintf("enc=%v", enc), func(t *testing.T) {
			dir := t.TempDir()
			fs := OSFS()
			cfg := testConfig(fs, []string{dir}, enc)
			cfg.MaxBlocksPerContainer = 10
			s := mustOpen(t, cfg)
			var ms []BlockMeta
			var ds [][]byte
			for id := uint64(1); id <= 30; id++ {
				ms = append(ms, BlockMeta{ID: id})
				ds = append(ds, blockData(id))
			}
			if err := s.PutBatch(ctx, ms, ds); err != nil {
				t.Fatal(err)
			}
			if n := len(metaFiles(t, fs, dir)); n != 3 {
				t.Fatalf("%d containers, want 3", n)
			}
			// Container 1 (ids 1-10): delete all -> removed.
			for id := uint64(1); id <= 10; id++ {
				if err := s.Delete(ctx, id); err != nil {
					t.Fatal(err)
				}
			}
			if n := len(metaFiles(t, fs, dir)); n != 2 {
				t.Fatalf("%d containers after dead removal, want 2", n)
			}
			// Container 2 (ids 11-20): delete 6 -> compacted at 0.5.
			info, _ := s.Stat(11)
			mf := info.Container + ".metadata"
			before := fileSize(t, fs, mf)
			for id := uint64(11); id <= 16; id++ {
				if err := s.Delete(ctx, id); err != nil {
					t.Fatal(err)
				}
			}
			after := fileSize(t, fs, mf)
			hdr := int64(fileHeaderLen)
			if enc {
				hdr += encHeaderLen
			}
			// Compacted when live hit 5/10, then one more DELETE appended.
			if want := hdr + 5*int64(frameLen(create2BodyLen)) + int64(frameLen(deleteBodyLen)); after != want || after >= before {
				t.Fatalf("compacted size %d (before %d), want %d", after, before, want)
			}
			for id := uint64(17); id <= 30; id++ {
				checkBlock(t, s, id)
			}
			// Deleting after compaction still works and is durable.
			if err := s.Delete(ctx, 17); err != nil {
				t.Fatal(err)
			}
			s.Close()
			s = mustOpen(t, cfg)
			defer s.Close()
			for id := uint64(1); id <= 17; id++ {
				if _, ok := s.Stat(id); ok {
					t.Fatalf("deleted block %d came back", id)
				}
			}
			for id := uint64(18); id <= 30; id++ {
				checkBlock(t, s, id)
			}
			// The compacted container stays full: new blocks go elsewhere.
			if err := s.Put(ctx, BlockMeta{ID: 99}, blockData(99)); err != nil {
				t.Fatal(err)
			}
			if i, _ := s.Stat(99); i.Container == info.Container {
				t.Fatal("block went to a full container")
			}
		})
	}
}

func TestStartupCompactionAndDeadRemoval(t *testing.T) {
	dir := t.TempDir()
	fs := OSFS()
	cfg := testConfig(fs, []string{dir}, false)
	cfg.MaxBlocksPerContainer = 10
	cfg.CompactLiveRatio = 0 // nothing at runtime
	s := mustOpen(t, cfg)
	for id := uint64(1); id <= 20; id++ {
		if err := s.Put(ctx, BlockMeta{ID: id}, blockData(id)); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 15, 17} {
		if err := s.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	if n := len(metaFiles(t, fs, dir)); n != 1 {
		t.Fatalf("%d containers, want 1 (dead removed at runtime)", n)
	}
	cfg.CompactLiveRatio = 0.5
	s = mustOpen(t, cfg)
	defer s.Close()
	mf := metaFiles(t, fs, dir)[0]
	if got, want := fileSize(t, fs, mf), int64(fileHeaderLen+5*frameLen(create2BodyLen)); got != want {
		t.Fatalf("metadata %d bytes, want %d", got, want)
	}
	for _, id := range []uint64{14, 16, 18, 19, 20} {
		checkBlock(t, s, id)
	}
}
