package lbm

import (
	"bytes"
	"context"
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
			// Flip the byte (a constant written over it is no change when
			// the ciphertext already holds it: 1 run in 256 encrypted).
			b := make([]byte, 1)
			if _, err := f.ReadAt(b, firstBlockOffset+last); err != nil {
				t.Fatal(err)
			}
			b[0] ^= 0xff
			if _, err := f.WriteAt(b, firstBlockOffset+last); err != nil {
				t.Fatal(err)
			}
			f.Close()
			if _, err := s.Read(ctx, 1, last, 1); !errs.Is(err, errs.Corrupt) {
				t.Fatalf("want Corrupt, got %v", err)
			}
		})
	}
}

func TestFailedDirs(t *testing.T) {
	for _, fault := range []struct {
		name string
		op   Op
		err  error
	}{{"eio-write", OpWrite, syscall.EIO}, {"eio-sync", OpSync, syscall.EIO}, {"eio-any", OpAny, syscall.EIO}} {
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
	t.Run("all-full", func(t *testing.T) {
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
