package lbm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/blockfs/blockfs/errs"
)

var ctx = context.Background()

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func testConfig(fs FS, dirs []string, enc bool) Config {
	cfg := DefaultConfig()
	cfg.Dirs = dirs
	cfg.FS = fs
	cfg.Encrypt = enc
	cfg.ReplayWorkers = 4
	cfg.Logger = quietLogger()
	// Tests want corruption to fail Open loudly; the set-aside tests
	// turn this off.
	cfg.FailOnCorruptContainer = true
	return cfg
}

func mustOpen(t testing.TB, cfg Config) *Store {
	t.Helper()
	s, err := Open(ctx, cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func blockData(id uint64) []byte {
	r := rand.New(rand.NewSource(int64(id)))
	b := make([]byte, 1+r.Intn(9000))
	r.Read(b)
	return b
}

func metaFiles(t testing.TB, fs FS, dir string) []string {
	t.Helper()
	names, err := fs.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if strings.HasSuffix(n, ".metadata") {
			out = append(out, filepath.Join(dir, n))
		}
	}
	return out
}

func fileSize(t testing.TB, fs FS, p string) int64 {
	t.Helper()
	fi, err := fs.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func checkBlock(t testing.TB, s *Store, id uint64) {
	t.Helper()
	want := blockData(id)
	got, err := s.Read(ctx, id, 0, int64(len(want)))
	if err != nil {
		t.Fatalf("read %d: %v", id, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("block %d differs", id)
	}
}

func TestRecordRoundTrip(t *testing.T) {
	cases := []struct {
		name string
		rec  createRec
	}{
		{"zero", createRec{}},
		{"typical", createRec{ID: 7, Inode: 9, GenStamp: 1001, Offset: 4096, Length: 12345, CRC: 0xdeadbeef, TimestampUS: 1_700_000_000_000_000}},
		{"max", createRec{ID: ^uint64(0), Inode: ^uint64(0), GenStamp: ^uint64(0), Offset: 1 << 62, Length: 1 << 40, CRC: ^uint32(0), TimestampUS: -1}},
	}
	for _, tc := range cases {
		t.Run("create/"+tc.name, func(t *testing.T) {
			fr := appendCreate(nil, &tc.rec)
			if len(fr) != frameLen(createBodyLen) {
				t.Fatalf("frame len %d", len(fr))
			}
			body, next, st := nextFrame(fr, len(fr), 0)
			if st != frameOK || next != len(fr) || body[0] != recCreate {
				t.Fatalf("st=%v next=%d", st, next)
			}
			var got createRec
			decodeCreate(body, &got)
			if got != tc.rec {
				t.Fatalf("got %+v want %+v", got, tc.rec)
			}
		})
	}
	for _, id := range []uint64{0, 1, ^uint64(0)} {
		t.Run(fmt.Sprintf("delete/%d", id), func(t *testing.T) {
			fr := appendDelete(nil, id)
			body, _, st := nextFrame(fr, len(fr), 0)
			if st != frameOK || body[0] != recDelete || decodeDelete(body) != id {
				t.Fatalf("st=%v", st)
			}
		})
	}
	t.Run("noalloc", func(t *testing.T) {
		fr := appendCreate(nil, &cases[1].rec)
		fr = appendDelete(fr, 7)
		st := &replayState{blocks: make(map[uint64]blockEntry, 4), dataSize: 1 << 30, path: "x"}
		allocs := testing.AllocsPerRun(100, func() {
			for p := 0; ; {
				body, next, fs := nextFrame(fr, len(fr), p)
				if fs != frameOK {
					break
				}
				if err := st.apply(body, int64(p)); err != nil {
					t.Fatal(err)
				}
				p = next
			}
		})
		if allocs != 0 {
			t.Fatalf("%v allocs per replay", allocs)
		}
	})
}

func TestFrameRejectsBadCRC(t *testing.T) {
	good := appendDelete(nil, 42)
	cases := []struct {
		name string
		flip int
		want frameStatus
	}{
		{"len", 0, frameBadLenCRC},
		{"lencrc", 5, frameBadLenCRC},
		{"body", 10, frameBadBodyCRC},
		{"bodycrc", len(good) - 1, frameBadBodyCRC},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := append([]byte(nil), good...)
			b[tc.flip] ^= 0x10
			b = appendDelete(b, 43) // not at the tail
			if _, _, st := nextFrame(b, zeroFrom(b), 0); st != tc.want {
				t.Fatalf("got %v want %v", st, tc.want)
			}
		})
	}
	t.Run("huge-len", func(t *testing.T) {
		b := appendFrame(nil, make([]byte, maxFrameBody+1))
		if _, _, st := nextFrame(b, len(b), 0); st != frameBadLen {
			t.Fatalf("got %v", st)
		}
	})
}

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

func TestReadDetectsCorruptBlock(t *testing.T) {
	for _, enc := range []bool{false, true} {
		t.Run(fmt.Sprintf("enc=%v", enc), func(t *testing.T) {
			dir := t.TempDir()
			s := mustOpen(t, testConfig(nil, []string{dir}, enc))
			defer s.Close()
			if err := s.Put(ctx, BlockMeta{ID: 1}, blockData(1)); err != nil {
				t.Fatal(err)
			}
			if err := s.Put(ctx, BlockMeta{ID: 1}, blockData(1)); !errs.Is(err, errs.Exist) {
				t.Fatalf("dup put: %v", err)
			}
			got, err := s.Read(ctx, 1, 3, 10)
			if err != nil || !bytes.Equal(got, blockData(1)[3:13]) {
				t.Fatalf("range read: %v", err)
			}
			if _, err := s.Read(ctx, 1, 0, int64(len(blockData(1))+1)); !errs.Is(err, errs.Invalid) {
				t.Fatalf("out of range: %v", err)
			}
			info, _ := s.Stat(1)
			f, _ := os.OpenFile(info.Container+".data", os.O_RDWR, 0)
			last := int64(len(blockData(1))) - 1
			f.WriteAt([]byte{0x55}, firstBlockOffset+last)
			f.Close()
			if _, err := s.Read(ctx, 1, last, 1); !errs.Is(err, errs.Corrupt) {
				t.Fatalf("want Corrupt, got %v", err)
			}
		})
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

func TestFailedDirs(t *testing.T) {
	for _, fault := range []struct {
		name string
		op   Op
		err  error
	}{{"enospc-write", OpWrite, syscall.ENOSPC}, {"eio-sync", OpSync, syscall.EIO}, {"eio-any", OpAny, syscall.EIO}} {
		t.Run(fault.name, func(t *testing.T) {
			m := NewMemFS()
			dirs := []string{"/d0", "/d1", "/d2"}
			cfg := testConfig(m, dirs, true)
			cfg.KeyFile = "/server.key"
			s := mustOpen(t, cfg)
			defer s.Close()
			for id := uint64(1); id <= 6; id++ {
				if err := s.Put(ctx, BlockMeta{ID: id}, blockData(id)); err != nil {
					t.Fatal(err)
				}
			}
			m.Inject(Fault{Op: fault.op, PathPrefix: "/d1/", Err: fault.err})
			for id := uint64(7); id <= 30; id++ {
				if err := s.Put(ctx, BlockMeta{ID: id}, blockData(id)); err != nil {
					t.Fatalf("put %d: %v", id, err)
				}
			}
			if got := s.FailedDirs(); len(got) != 1 || got[0] != "/d1" {
				t.Fatalf("failed dirs %v", got)
			}
			for id := uint64(1); id <= 30; id++ {
				if i, _ := s.Stat(id); i.Dir == "/d1" && fault.op == OpAny {
					continue // unreadable dir
				}
				checkBlock(t, s, id)
			}
			for id := uint64(7); id <= 30; id++ {
				if i, _ := s.Stat(id); i.Dir == "/d1" && id > 9 {
					t.Fatalf("block %d went to the failed dir", id)
				}
			}
		})
	}
	t.Run("all-failed", func(t *testing.T) {
		m := NewMemFS()
		s := mustOpen(t, testConfig(m, []string{"/a", "/b"}, false))
		defer s.Close()
		m.Inject(Fault{Op: OpWrite, Err: syscall.ENOSPC})
		if err := s.Put(ctx, BlockMeta{ID: 1}, []byte("x")); err == nil {
			t.Fatal("put succeeded with every dir full")
		}
	})
	t.Run("open-eio", func(t *testing.T) {
		m := NewMemFS()
		cfg := testConfig(m, []string{"/a", "/b"}, false)
		s := mustOpen(t, cfg)
		for id := uint64(1); id <= 8; id++ {
			s.Put(ctx, BlockMeta{ID: id}, blockData(id))
		}
		s.Close()
		m.Inject(Fault{Op: OpRead, PathPrefix: "/b/", Err: syscall.EIO})
		s = mustOpen(t, cfg)
		defer s.Close()
		if got := s.FailedDirs(); len(got) != 1 || got[0] != "/b" {
			t.Fatalf("failed %v", got)
		}
		for _, b := range s.Blocks() {
			if b.Dir != "/a" {
				t.Fatalf("block in failed dir listed")
			}
			checkBlock(t, s, b.ID)
		}
	})
}

// crashWorkload runs puts and deletes until the FS dies, recording what
// was acknowledged.
type ledger struct {
	acked   map[uint64]bool // put acknowledged and not (ack-)deleted
	deleted map[uint64]bool // delete acknowledged
	maybe   map[uint64]bool // put or delete failed: either state is fine
}

func crashWorkload(m *MemFS, s *Store, r *rand.Rand, l *ledger, nextID *uint64) {
	for i := 0; i < 400 && !m.Dead(); i++ {
		if r.Intn(3) == 0 && len(l.acked) > 0 {
			var id uint64
			for id = range l.acked {
				break
			}
			if err := s.Delete(ctx, id); err != nil {
				delete(l.acked, id)
				l.maybe[id] = true
				continue
			}
			delete(l.acked, id)
			l.deleted[id] = true
			continue
		}
		n := 1 + r.Intn(4)
		var ms []BlockMeta
		var ds [][]byte
		for range n {
			*nextID++
			ms = append(ms, BlockMeta{ID: *nextID, Inode: 1, GenStamp: 2})
			ds = append(ds, blockData(*nextID))
		}
		err := s.PutBatch(ctx, ms, ds)
		for _, bm := range ms {
			if err == nil {
				l.acked[bm.ID] = true
			} else {
				l.maybe[bm.ID] = true
			}
		}
	}
}

func verifyLedger(t *testing.T, s *Store, l *ledger) {
	t.Helper()
	for id := range l.acked {
		checkBlock(t, s, id)
	}
	for id := range l.deleted {
		if _, ok := s.Stat(id); ok {
			t.Fatalf("deleted block %d came back", id)
		}
	}
	for _, b := range s.Blocks() {
		if !l.acked[b.ID] && !l.maybe[b.ID] {
			t.Fatalf("unknown block %d", b.ID)
		}
		if l.maybe[b.ID] {
			checkBlock(t, s, b.ID) // if it survived, it is intact
		}
	}
}

func TestCrashWritePath(t *testing.T) {
	for seed := int64(1); seed <= 12; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewSource(seed))
			enc := seed%2 == 0
			m := NewMemFS()
			cfg := testConfig(m, []string{"/d0", "/d1"}, enc)
			cfg.MaxBlocksPerContainer = 8
			cfg.InmemReplayThreshold = int64(seed%3) * 4096
			s := mustOpen(t, cfg)
			l := &ledger{acked: map[uint64]bool{}, deleted: map[uint64]bool{}, maybe: map[uint64]bool{}}
			var next uint64
			crashWorkload(m, s, r, l, &next) // warm, no crash
			m.CrashAfter(r.Intn(600))
			crashWorkload(m, s, r, l, &next)
			s.Close()
			for round := int64(0); round < 3; round++ {
				m2 := m.CrashClone(seed*10 + round)
				cfg.FS = m2
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

func TestCrashCompaction(t *testing.T) {
	for seed := int64(1); seed <= 10; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			m := NewMemFS()
			enc := seed%2 == 1
			cfg := testConfig(m, []string{"/d0"}, enc)
			cfg.MaxBlocksPerContainer = 10
			cfg.CompactLiveRatio = 0
			s := mustOpen(t, cfg)
			l := &ledger{acked: map[uint64]bool{}, deleted: map[uint64]bool{}, maybe: map[uint64]bool{}}
			for id := uint64(1); id <= 40; id++ {
				if err := s.Put(ctx, BlockMeta{ID: id}, blockData(id)); err != nil {
					t.Fatal(err)
				}
				l.acked[id] = true
			}
			for id := uint64(1); id <= 40; id++ {
				if id%10 < 7 || id <= 10 { // container 1 dead, others 30% live
					if err := s.Delete(ctx, id); err != nil {
						t.Fatal(err)
					}
					delete(l.acked, id)
					l.deleted[id] = true
				}
			}
			s.Close()
			// Reopen with compaction on; crash somewhere inside it.
			cfg.CompactLiveRatio = 0.5
			m.CrashAfter(int(seed-1) * 2)
			if s, err := Open(ctx, cfg); err == nil {
				s.Close()
			}
			cfg.FS = m.CrashClone(seed)
			s2, err := Open(ctx, cfg)
			if err != nil {
				t.Fatalf("reopen after crash: %v", err)
			}
			verifyLedger(t, s2, l)
			s2.Close()
		})
	}
}

func TestConcurrentPutReadDelete(t *testing.T) {
	root := t.TempDir()
	cfg := testConfig(nil, []string{filepath.Join(root, "a"), filepath.Join(root, "b")}, true)
	cfg.MaxBlocksPerContainer = 50
	s := mustOpen(t, cfg)
	defer s.Close()
	var wg sync.WaitGroup
	errc := make(chan error, 100)
	for w := range 8 {
		wg.Go(func() {
			for i := range 60 {
				id := uint64(w*1000 + i + 1)
				if err := s.Put(ctx, BlockMeta{ID: id}, blockData(id)); err != nil {
					errc <- err
					return
				}
				got, err := s.Read(ctx, id, 0, int64(len(blockData(id))))
				if err != nil || !bytes.Equal(got, blockData(id)) {
					errc <- fmt.Errorf("read %d: %v", id, err)
					return
				}
				if i%2 == 0 {
					if err := s.Delete(ctx, id); err != nil {
						errc <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if n := len(s.Blocks()); n != 8*30 {
		t.Fatalf("%d blocks", n)
	}
	_, used := s.Usage()
	if used <= 0 {
		t.Fatal("usage")
	}
}

func TestServerKeyFile(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, testConfig(nil, []string{dir}, true))
	s.Put(ctx, BlockMeta{ID: 1}, blockData(1))
	s.Close()
	fi, err := os.Stat(filepath.Join(dir, "lbm-server.key"))
	if err != nil || fi.Mode().Perm() != 0o600 || fi.Size() != keyFileLen {
		t.Fatalf("key file: %v %v", fi, err)
	}
	// Encrypted files stay readable with Encrypt off (the key file is found).
	s = mustOpen(t, testConfig(nil, []string{dir}, false))
	checkBlock(t, s, 1)
	s.Close()
	// Plaintext never hits the disk.
	mf := metaFiles(t, OSFS(), dir)[0]
	b, _ := os.ReadFile(mf)
	if bytes.Contains(b, []byte(metaMagic)) {
		t.Fatal("metadata header in the clear")
	}
	// A different key cannot open it.
	os.Remove(filepath.Join(dir, "lbm-server.key"))
	if _, err := Open(ctx, testConfig(nil, []string{dir}, true)); !errs.Is(err, errs.Corrupt) {
		t.Fatalf("wrong key: %v", err)
	}
}

func TestCTRPositional(t *testing.T) {
	k, _ := newKeyring(make([]byte, 32))
	fc, _, err := k.newFileCipher()
	if err != nil {
		t.Fatal(err)
	}
	plain := make([]byte, 1000)
	rand.New(rand.NewSource(1)).Read(plain)
	whole := make([]byte, len(plain))
	fc.xorAt(whole, plain, 128)
	for _, sl := range [][2]int{{0, 1}, {3, 17}, {15, 16}, {16, 32}, {500, 999}, {7, 1000}} {
		part := make([]byte, sl[1]-sl[0])
		fc.xorAt(part, plain[sl[0]:sl[1]], int64(128+sl[0]))
		if !bytes.Equal(part, whole[sl[0]:sl[1]]) {
			t.Fatalf("slice %v differs", sl)
		}
	}
	// Counter carry across the low 64 bits.
	fc.iv = [16]byte{8: 0xff, 9: 0xff, 10: 0xff, 11: 0xff, 12: 0xff, 13: 0xff, 14: 0xff, 15: 0xff}
	a := make([]byte, 64)
	fc.xorAt(a, make([]byte, 64), 0)
	b := make([]byte, 32)
	fc.xorAt(b, make([]byte, 32), 32)
	if !bytes.Equal(a[32:], b) {
		t.Fatal("carry")
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mut  func(*Config)
		ok   bool
	}{
		{"ok", func(*Config) {}, true},
		{"nodirs", func(c *Config) { c.Dirs = nil }, false},
		{"dupdirs", func(c *Config) { c.Dirs = []string{"/a", "/a/"} }, false},
		{"ratio", func(c *Config) { c.CompactLiveRatio = 1 }, false},
		{"workers", func(c *Config) { c.ReplayWorkers = 0 }, false},
		{"threshold", func(c *Config) { c.InmemReplayThreshold = -1 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			c.Dirs = []string{"/a"}
			tc.mut(&c)
			if err := c.Validate(); (err == nil) != tc.ok || (err != nil && !errs.Is(err, errs.Invalid)) {
				t.Fatalf("%v", err)
			}
		})
	}
}

func TestMemFSCrashKeepsSynced(t *testing.T) {
	m := NewMemFS()
	m.MkdirAll("/d", 0o755)
	f, _ := m.Create("/d/f")
	f.WriteAt([]byte("hello"), 0)
	f.Sync()
	m.SyncDir("/d")
	f.WriteAt([]byte(" world"), 5)
	g, _ := m.Create("/d/g") // never dir-synced
	g.WriteAt([]byte("x"), 0)
	g.Sync()
	sawG, sawNoG := false, false
	for seed := int64(0); seed < 50; seed++ {
		c := m.CrashClone(seed)
		h, err := c.OpenFile("/d/f", os.O_RDONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 11)
		n, _ := h.ReadAt(b, 0)
		if n < 5 || string(b[:5]) != "hello" {
			t.Fatalf("synced data lost: %q", b[:n])
		}
		if _, err := c.Stat("/d/g"); err == nil {
			sawG = true
		} else {
			sawNoG = true
		}
	}
	if !sawG || !sawNoG {
		t.Fatal("unsynced dir entry not randomised")
	}
	if !errors.Is(func() error {
		m.Inject(Fault{Op: OpWrite, Err: syscall.ENOSPC})
		_, err := f.WriteAt([]byte("a"), 0)
		return err
	}(), syscall.ENOSPC) {
		t.Fatal("fault not injected")
	}
}
