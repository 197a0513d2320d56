package lbm

import (
	"slices"
	"syscall"
	"testing"
	"time"
)

// TestFullDirComesBack: a data dir that answers writes with ENOSPC is full,
// not failed. New blocks go to the other dirs while it waits out FullRetry;
// once space is freed (the fault cleared) and the wait has passed it takes
// blocks again, and no block is lost on the way. An I/O error, by
// contrast, takes a dir out until restart (TestFailedDirs).
func TestFullDirComesBack(t *testing.T) {
	m := NewMemFS()
	cfg := testConfig(m, []string{"/d0", "/d1"}, true)
	cfg.KeyFile = "/server.key"
	cfg.FullRetry = time.Second // far longer than the puts below take, even under -race
	s := mustOpen(t, cfg)
	defer s.Close()
	put := func(from, to uint64) (inD1 int) {
		t.Helper()
		for id := from; id <= to; id++ {
			if err := s.Put(ctx, BlockMeta{ID: id}, blockData(id)); err != nil {
				t.Fatalf("put %d: %v", id, err)
			}
			if i, _ := s.Stat(id); i.Dir == "/d1" {
				inD1++
			}
		}
		return inD1
	}
	put(1, 6)
	m.Inject(Fault{Op: OpWrite, PathPrefix: "/d1/", Err: syscall.ENOSPC})
	put(7, 10) // the first write to /d1 meets ENOSPC and goes to /d0
	if got := s.FullDirs(); len(got) != 1 || got[0] != "/d1" {
		t.Fatalf("full dirs %v, want [/d1]", got)
	}
	if got := s.FailedDirs(); len(got) != 0 {
		t.Fatalf("failed dirs %v: a full dir is not failed", got)
	}
	if n := put(11, 20); n != 0 {
		t.Fatalf("%d blocks went to the full dir within its wait", n)
	}
	m.ClearFaults()
	// The containers that met ENOSPC on their data file are whole: their
	// blocks can still be deleted (deletes are what free a full disk).
	var deleted []uint64
	for id := uint64(1); id <= 6; id++ {
		if i, _ := s.Stat(id); i.Dir == "/d1" {
			if err := s.Delete(ctx, id); err != nil {
				t.Fatalf("delete %d in the dir that was full: %v", id, err)
			}
			deleted = append(deleted, id)
		}
	}
	if len(deleted) == 0 {
		t.Fatal("no block of 1..6 in /d1: the test checked no delete")
	}
	time.Sleep(1100 * time.Millisecond)
	if n := put(21, 30); n == 0 {
		t.Fatal("no block went to /d1 after space was freed and the wait passed")
	}
	if got := s.FullDirs(); len(got) != 0 {
		t.Fatalf("full dirs %v after a block was written there", got)
	}
	check := func() {
		t.Helper()
		for id := uint64(1); id <= 30; id++ {
			if slices.Contains(deleted, id) {
				if _, ok := s.Stat(id); ok {
					t.Fatalf("deleted block %d is back", id)
				}
				continue
			}
			checkBlock(t, s, id)
		}
	}
	check()
	s.Close()
	s = mustOpen(t, cfg)
	check()
}
