package namespace

import (
	"sync"
	"sync/atomic"
	"testing"
)

// TestPreTable: every inode added is found with its own pre-image, across
// shard rebuilds, and inodes never added are not; a reader running beside
// the writer (under -race) finds each entry added before the writer said
// so, and never a wrong one.
func TestPreTable(t *testing.T) {
	for _, n := range []int{1, 7, 8, 100, 5000} {
		var p preTable
		nodes := make([]*inode, 2*n)
		for i := range nodes {
			nodes[i] = &inode{id: ID(i + 1)}
		}
		var added atomic.Int64 // how many of nodes the reader may expect
		var done atomic.Bool
		started := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			close(started)
			for !done.Load() {
				k := int(added.Load())
				for i := range k {
					pre := p.get(nodes[i])
					if pre == nil || pre.id != ID(i+1) {
						t.Errorf("n=%d: entry %d of %d added: got %v", n, i, k, pre)
						return
					}
				}
			}
		}()
		<-started
		for i := range n {
			p.add(nodes[i])
			nodes[i].id += 1 << 40 // changed after its pre-image was kept
			added.Store(int64(i + 1))
		}
		done.Store(true)
		wg.Wait()
		for i, x := range nodes {
			pre := p.get(x)
			switch {
			case i < n && (pre == nil || pre.id != ID(i+1)):
				t.Fatalf("n=%d: inode %d: pre-image %v, want id %d", n, i, pre, i+1)
			case i >= n && pre != nil:
				t.Fatalf("n=%d: inode %d never added has a pre-image", n, i)
			}
		}
		p.reset()
		if p.get(nodes[0]) != nil {
			t.Fatalf("n=%d: a pre-image survived reset", n)
		}
	}
}
