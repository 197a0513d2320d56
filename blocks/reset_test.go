package blocks

import "testing"

// TestResetExpect: told how many blocks are coming, a Reset sizes each
// shard's table once, so the blocks that come make it grow no more; at
// startup the under-replicated queues are sized too, and a Reset over a
// block map already in use keeps them (they hold queued work).
func TestResetExpect(t *testing.T) {
	m, _ := newTestManager(t, 0)
	const n = 20000
	r := m.BeginReset()
	r.Expect(n)
	var sizes [numShards]int
	for si := range m.shards {
		sizes[si] = len(m.shards[si].blocks.slots)
	}
	for id := uint64(1); id <= n; id++ {
		r.Add(ExpectedBlock{ID: id, GenStamp: 1, Inode: 7, Replication: 3, Complete: true})
	}
	if f := r.Finish(); f != 0 {
		t.Fatalf("forgot %d blocks at startup", f)
	}
	for si := range m.shards {
		s := &m.shards[si]
		if got := len(s.blocks.slots); got != sizes[si] {
			t.Fatalf("shard %d: table of %d slots after Expect grew to %d", si, sizes[si], got)
		}
		if len(s.under) == 0 {
			t.Fatalf("shard %d: no under-replicated blocks at startup", si)
		}
	}
	if st := m.Stats(); st.UnderReplicated != n {
		t.Fatalf("%d under-replicated, want %d", st.UnderReplicated, n)
	}

	// In use: a second Reset keeps the queues' contents.
	under := m.shards[0].under
	r = m.BeginReset()
	r.Expect(n)
	if len(m.shards[0].under) != len(under) {
		t.Fatal("Expect on a block map in use replaced its under-replicated queue")
	}
	for id := uint64(1); id <= n; id++ {
		r.Add(ExpectedBlock{ID: id, GenStamp: 1, Inode: 7, Replication: 3, Complete: true})
	}
	r.Finish()
	if st := m.Stats(); st.UnderReplicated != n {
		t.Fatalf("after a second reset: %d under-replicated, want %d", st.UnderReplicated, n)
	}
}
