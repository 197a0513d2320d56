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

type replayMode struct {
	name      string
	threshold int64
	stream    StreamingMode
}

// replayModes are the three replay paths every replay test runs over.
var replayModes = []replayMode{
	{"streaming", 0, StreamingPread},
	{"buffered-streaming", 0, StreamingBuffered},
	{"inmem", 64 << 20, StreamingPread},
}

func (m replayMode) apply(cfg *Config) {
	cfg.InmemReplayThreshold, cfg.StreamingReplay = m.threshold, m.stream
}

// writeFour stores blocks 1..4 in one dir, one Put each, and closes.
func writeFour(t *testing.T, fs FS, dir string, enc bool) {
	s := mustOpen(t, testConfig(fs, []string{dir}, enc))
	for id := uint64(1); id <= 4; id++ {
		if err := s.Put(ctx, BlockMeta{ID: id, Inode: 100 + id, GenStamp: 1}, blockData(id)); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
}

func TestZeroTailTruncated(t *testing.T) {
	for _, enc := range []bool{false, true} {
		for _, mode := range replayModes {
			for _, tail := range []int64{1, 8, 128, 4096} {
				t.Run(fmt.Sprintf("enc=%v/%s/%d", enc, mode.name, tail), func(t *testing.T) {
					dir := t.TempDir()
					fs := OSFS()
					writeFour(t, fs, dir, enc)
					mf := metaFiles(t, fs, dir)[0]
					good := fileSize(t, fs, mf)
					if err := os.Truncate(mf, good+tail); err != nil {
						t.Fatal(err)
					}
					cfg := testConfig(fs, []string{dir}, enc)
					mode.apply(&cfg)
					s := mustOpen(t, cfg)
					defer s.Close()
					for id := uint64(1); id <= 4; id++ {
						checkBlock(t, s, id)
					}
					if got := fileSize(t, fs, mf); got != good {
						t.Fatalf("metadata size %d, want %d", got, good)
					}
					if st := s.OpenStats(); st.TruncatedTails != 1 {
						t.Fatalf("stats %+v", st)
					}
				})
			}
		}
	}
}

func TestCutRecordTruncated(t *testing.T) {
	for _, enc := range []bool{false, true} {
		for _, mode := range replayModes {
			t.Run(fmt.Sprintf("enc=%v/%s", enc, mode.name), func(t *testing.T) {
				dir := t.TempDir()
				fs := OSFS()
				writeFour(t, fs, dir, enc)
				mf := metaFiles(t, fs, dir)[0]
				good := fileSize(t, fs, mf)
				if err := os.Truncate(mf, good-1); err != nil {
					t.Fatal(err)
				}
				cfg := testConfig(fs, []string{dir}, enc)
				mode.apply(&cfg)
				s := mustOpen(t, cfg)
				defer s.Close()
				for id := uint64(1); id <= 3; id++ {
					checkBlock(t, s, id)
				}
				if _, err := s.Read(ctx, 4, 0, 1); !errs.Is(err, errs.NotFound) {
					t.Fatalf("block 4: %v", err)
				}
				if got, want := fileSize(t, fs, mf), good-int64(frameLen(create2BodyLen)); got != want {
					t.Fatalf("metadata size %d, want %d", got, want)
				}
			})
		}
	}
}

func TestFlippedBitIsCorrupt(t *testing.T) {
	for _, enc := range []bool{false, true} {
		for _, mode := range replayModes {
			for _, where := range []struct {
				name string
				at   int64 // byte within the second record
			}{{"len", 1}, {"body", 20}} {
				t.Run(fmt.Sprintf("enc=%v/%s/%s", enc, mode.name, where.name), func(t *testing.T) {
					dir := t.TempDir()
					fs := OSFS()
					writeFour(t, fs, dir, enc)
					mf := metaFiles(t, fs, dir)[0]
					hdr := int64(fileHeaderLen)
					if enc {
						hdr += encHeaderLen
					}
					rec2 := hdr + int64(frameLen(create2BodyLen))
					b, _ := os.ReadFile(mf)
					b[rec2+where.at] ^= 0x04
					os.WriteFile(mf, b, 0o644)
					cfg := testConfig(fs, []string{dir}, enc)
					mode.apply(&cfg)
					_, err := Open(ctx, cfg)
					if !errs.Is(err, errs.Corrupt) {
						t.Fatalf("want Corrupt, got %v", err)
					}
					msg := err.Error()
					if !strings.Contains(msg, mf) || !strings.Contains(msg, fmt.Sprintf("offset %d", rec2)) {
						t.Fatalf("error does not name file and offset %d: %v", rec2, err)
					}
				})
			}
		}
	}
}

// population writes n blocks in batches over dirs and deletes every
// third; it returns the live ids.
func population(t testing.TB, s *Store, n int) map[uint64]bool {
	live := map[uint64]bool{}
	for start := uint64(1); start <= uint64(n); start += 10 {
		var ms []BlockMeta
		var ds [][]byte
		for id := start; id < start+10 && id <= uint64(n); id++ {
			ms = append(ms, BlockMeta{ID: id, Inode: id / 3, GenStamp: id})
			ds = append(ds, blockData(id)[:1+id%50])
			live[id] = true
		}
		if err := s.PutBatch(ctx, ms, ds); err != nil {
			t.Fatal(err)
		}
	}
	for id := uint64(3); id <= uint64(n); id += 3 {
		if err := s.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
		delete(live, id)
	}
	return live
}

func TestReplayPathsIdentical(t *testing.T) {
	for _, enc := range []bool{false, true} {
		t.Run(fmt.Sprintf("enc=%v", enc), func(t *testing.T) {
			root := t.TempDir()
			dirs := []string{filepath.Join(root, "d0"), filepath.Join(root, "d1"), filepath.Join(root, "d2")}
			cfg := testConfig(nil, dirs, enc)
			cfg.MaxBlocksPerContainer = 40
			cfg.CompactLiveRatio = 0
			s := mustOpen(t, cfg)
			live := population(t, s, 600)
			s.Close()
			var ref []BlockInfo
			for _, mode := range replayModes {
				cfs := NewCountingFS(OSFS())
				cfg.FS = cfs
				mode.apply(&cfg)
				s := mustOpen(t, cfg)
				reads, st := cfs.Reads(), s.OpenStats()
				blocks := s.Blocks()
				if len(blocks) != len(live) {
					t.Fatalf("%s: %d blocks, want %d", mode.name, len(blocks), len(live))
				}
				if ref == nil {
					ref = blocks
				} else if fmt.Sprint(ref) != fmt.Sprint(blocks) {
					t.Fatalf("replay paths disagree")
				}
				if mode.threshold > 0 {
					if st.InmemContainers != st.Containers || reads > int64(4*st.Containers) {
						t.Fatalf("inmem: %d reads for %d containers (%+v)", reads, st.Containers, st)
					}
				} else if st.StreamingContainers != st.Containers {
					t.Fatalf("%s: %d of %d containers streamed", mode.name, st.StreamingContainers, st.Containers)
				} else if mode.stream == StreamingPread && reads < st.Records*2 {
					t.Fatalf("streaming: %d reads for %d records (%+v)", reads, st.Records, st)
				} else if mode.stream == StreamingBuffered && reads > int64(4*st.Containers) {
					t.Fatalf("buffered-streaming: %d reads for %d containers (%+v)", reads, st.Containers, st)
				}
				t.Logf("%s: %d containers, %d records, %d reads", mode.name, st.Containers, st.Records, reads)
				for id := range live {
					want := blockData(id)[:1+id%50]
					got, err := s.Read(ctx, id, 0, int64(len(want)))
					if err != nil || !bytes.Equal(got, want) {
						t.Fatalf("block %d: %v", id, err)
					}
				}
				s.Close()
			}
		})
	}
}

func TestReplayBudgetFallsBackToStreaming(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(nil, []string{dir}, true)
	s := mustOpen(t, cfg)
	population(t, s, 100)
	s.Close()
	cfg.ReplayMemoryBudget = 100 // smaller than any metadata file
	s = mustOpen(t, cfg)
	defer s.Close()
	if st := s.OpenStats(); st.StreamingContainers != st.Containers || st.Containers == 0 {
		t.Fatalf("%+v", st)
	}
}
