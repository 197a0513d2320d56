package namespace

import (
	"io"
	"sync"
	"testing"
)

// TestConcurrentReads runs every read method from several goroutines at
// once, as the namenode does under its read lock; with -race this proves
// the reads write nothing. A writer then takes the (simulated) write lock.
func TestConcurrentReads(t *testing.T) {
	tr := fixture(t)
	for i := 0; i < 128; i++ { // a big directory
		must(t, tr.Mkdirs(mustPath("/big/d"+itoa3(i)), MkdirsOpts{Perm: 0755, Parents: true}))
	}
	var mu sync.RWMutex
	var wg sync.WaitGroup
	bob := policy.Caller("bob", []string{"staff"}, "c1")
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				mu.RLock()
				fi, blocks, _ := tr.File(mustPath("/a/f"))
				_, _, _ = tr.FileByID(fi.ID)
				_, _ = tr.Stat(mustPath("/big/d" + itoa3(i)))
				_, _, _ = tr.List(mustPath("/big"), "d010", 5)
				_, _ = tr.BlockInode(blocks[0].ID)
				tr.ForEachBlock(func(Block, ID, uint32, bool) {})
				tr.Counts()
				tr.Hash()
				_ = tr.WriteImage(io.Discard)
				_, _, _ = tr.As(bob, "test").File(mustPath("/a/f"))
				_, _ = tr.As(bob, "test").Stat(mustPath("/a/b/c"))
				_, _, _ = tr.As(bob, "test").List(mustPath("/a/b"), "", 0)
				_ = tr.NextBlockID()
				mu.RUnlock()
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 50; i++ {
			mu.Lock()
			if err := tr.Mkdirs(mustPath("/w/d"+itoa3(i)), MkdirsOpts{Perm: 0755, Parents: true}); err != nil {
				t.Error(err)
			}
			mu.Unlock()
		}
	}()
	wg.Wait()
}

func itoa3(i int) string {
	return string([]byte{byte('0' + i/100%10), byte('0' + i/10%10), byte('0' + i%10)})
}
