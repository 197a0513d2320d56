package lbm

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/blockfs/blockfs/errs"
)

// sixBlocks writes blocks 1..6 two per container (three containers) and
// returns the container holding each block.
func sixBlocks(t *testing.T, cfg Config) map[uint64]string {
	t.Helper()
	s := mustOpen(t, cfg)
	defer s.Close()
	where := map[uint64]string{}
	for id := uint64(1); id <= 6; id++ {
		if err := s.Put(ctx, BlockMeta{ID: id, Inode: 9, GenStamp: id}, blockData(id)); err != nil {
			t.Fatal(err)
		}
		info, _ := s.Stat(id)
		where[id] = info.Container
	}
	return where
}

// flipMeta flips a bit in the body of the second record of container base.
func flipMeta(t *testing.T, m *MemFS, base string, enc bool) {
	at := int64(fileHeaderLen) + int64(frameLen(create2BodyLen)) + 20
	if enc {
		at += encHeaderLen
	}
	img := readAll(t, m, base+".metadata")
	img[at] ^= 0x08
	writeAll(t, m, base+".metadata", img)
}

func TestCorruptContainerSetAside(t *testing.T) {
	for _, enc := range []bool{false, true} {
		for _, mode := range replayModes {
			t.Run(fmt.Sprintf("enc=%v/%s", enc, mode.name), func(t *testing.T) {
				m := NewMemFS()
				cfg := testConfig(m, []string{"/d"}, enc)
				cfg.KeyFile = "/key"
				cfg.MaxBlocksPerContainer = 2
				mode.apply(&cfg)
				where := sixBlocks(t, cfg)
				bad := where[3]
				flipMeta(t, m, bad, enc)

				// Fail-fast keeps today's behaviour and renames nothing.
				if _, err := Open(ctx, cfg); !errs.Is(err, errs.Corrupt) || !strings.Contains(err.Error(), bad+".metadata") {
					t.Fatalf("fail-fast: %v", err)
				}
				if _, err := m.Stat(bad + ".metadata"); err != nil {
					t.Fatal("fail-fast renamed the container")
				}

				cfg.FailOnCorruptContainer = false
				reg := prometheus.NewRegistry()
				cfg.Registerer = reg
				s := mustOpen(t, cfg)
				aside := s.SetAside()
				re := regexp.MustCompile(`^` + regexp.QuoteMeta(bad) + `\.(data|metadata)\.corrupt-\d+$`)
				if len(aside) != 2 || !re.MatchString(aside[0]) || !re.MatchString(aside[1]) {
					t.Fatalf("set aside %q", aside)
				}
				for _, p := range aside {
					if _, err := m.Stat(p); err != nil {
						t.Fatalf("set-aside file %s: %v", p, err)
					}
				}
				for _, p := range []string{bad + ".data", bad + ".metadata"} {
					if _, err := m.Stat(p); err == nil {
						t.Fatalf("%s still in place", p)
					}
				}
				var mm dto.Metric
				if err := s.metrics.setAside.Write(&mm); err != nil || mm.GetCounter().GetValue() != 1 {
					got := mm.GetCounter().GetValue()
					t.Fatalf("set-aside metric %v", got)
				}
				for id, c := range where {
					if _, ok := s.Stat(id); ok == (c == bad) {
						t.Fatalf("block %d (container %s, bad %v): in index %v", id, c, c == bad, ok)
					}
					if c != bad {
						checkBlock(t, s, id)
					}
				}
				if len(s.Blocks()) != 4 {
					t.Fatalf("%d blocks reported", len(s.Blocks()))
				}
				// The store keeps writing; a restart does not set aside again.
				if err := s.Put(ctx, BlockMeta{ID: 7}, blockData(7)); err != nil {
					t.Fatal(err)
				}
				s.Close()
				cfg.Registerer = nil
				s = mustOpen(t, cfg)
				defer s.Close()
				if len(s.SetAside()) != 0 || len(s.Blocks()) != 5 {
					t.Fatalf("reopen: set aside %q, %d blocks", s.SetAside(), len(s.Blocks()))
				}
			})
		}
	}
}

func TestSetAsideEdgeCases(t *testing.T) {
	t.Run("every container corrupt fails Open", func(t *testing.T) {
		m := NewMemFS()
		cfg := testConfig(m, []string{"/d"}, false)
		cfg.MaxBlocksPerContainer = 2
		cfg.FailOnCorruptContainer = false
		where := sixBlocks(t, cfg)
		for _, id := range []uint64{1, 3, 5} {
			flipMeta(t, m, where[id], false)
		}
		if _, err := Open(ctx, cfg); !errs.Is(err, errs.Corrupt) || !strings.Contains(err.Error(), "all 3 containers") {
			t.Fatalf("want Corrupt for all containers, got %v", err)
		}
		if _, err := m.Stat(where[1] + ".metadata"); err != nil {
			t.Fatal("renamed although Open failed")
		}
	})
	t.Run("data file without metadata", func(t *testing.T) {
		m := NewMemFS()
		cfg := testConfig(m, []string{"/d"}, false)
		cfg.MaxBlocksPerContainer = 2
		cfg.FailOnCorruptContainer = false
		where := sixBlocks(t, cfg)
		if err := m.Remove(where[1] + ".metadata"); err != nil {
			t.Fatal(err)
		}
		s := mustOpen(t, cfg)
		defer s.Close()
		if a := s.SetAside(); len(a) != 1 || !strings.HasPrefix(a[0], where[1]+".data.corrupt-") {
			t.Fatalf("set aside %q", a)
		}
		if len(s.Blocks()) != 4 {
			t.Fatalf("%d blocks", len(s.Blocks()))
		}
	})
}
