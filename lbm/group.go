package lbm

import (
	"context"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/blockfs/blockfs/errs"
)

// groupCommit stores the small blocks of concurrent Commits together
// (Config.GroupCommitMax). A committer queues its block; when no group is
// being stored it becomes the leader and stores every block queued so far
// with putItems (one data sync and one metadata sync per container used);
// otherwise it waits, and takes the lead when the leader finishes and
// blocks are still queued. So blocks queued while a group syncs go out as
// the next group, and an idle store commits a lone block at once, as
// Commit does. One group at a time: groups spread over the data dirs as
// containers are handed out, and more leaders would only make the groups
// smaller. Nothing runs in the background.
type groupCommit struct {
	s     *Store
	sizes prometheus.Histogram

	mu    sync.Mutex
	cond  *sync.Cond // broadcast when a group is done
	queue []*blockItem
	busy  bool // a group is being stored
}

func newGroupCommit(s *Store, sizes prometheus.Histogram) *groupCommit {
	g := &groupCommit{s: s, sizes: sizes}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// commit stores it (its id reserved) with whatever else is committing,
// and returns when it is stored or has failed (it.err).
func (g *groupCommit) commit(it *blockItem) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.queue = append(g.queue, it)
	for !it.done {
		if len(g.queue) == 0 || g.busy {
			g.cond.Wait()
			continue
		}
		batch := g.queue
		g.queue, g.busy = nil, true
		g.mu.Unlock()
		err := g.store(batch)
		g.mu.Lock()
		g.busy = false
		for _, b := range batch {
			if !b.stored {
				b.err = err
			}
			b.done = true
		}
		g.cond.Broadcast()
	}
}

// store puts one group; the error is for the blocks it did not store.
func (g *groupCommit) store(batch []*blockItem) error {
	const op = "lbm.BlockWriter.Commit"
	g.sizes.Observe(float64(len(batch)))
	if g.s.closed.Load() {
		return errs.New(errs.Unavailable, op, "", "store is closed")
	}
	return g.s.putItems(context.Background(), batch)
}
