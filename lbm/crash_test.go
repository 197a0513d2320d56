package lbm

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"syscall"
	"testing"
)

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
