package netfault

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blockfs/blockfs/client"
)

// fileWriters write whole files whose bytes derive from their names. An
// acknowledged file is kept until read back byte-identical: once more
// than keepFiles are waiting, the oldest is read back and, if whole,
// deleted (so a long run's disks stay bounded); the rest are read at the
// end. A read that fails leaves the file for the end; a read that returns
// other bytes is a loss.
type fileWriters struct {
	fc    *client.Client
	dir   string
	acked *ackCounter

	attempted, failed, verified atomic.Int64
	mu                          sync.Mutex
	waiting                     []string // acknowledged, not yet read back
	lost                        []string
}

const keepFiles = 200

func (fw *fileWriters) run(ctx context.Context, id int) {
	for n := 0; ctx.Err() == nil; n++ {
		p := fmt.Sprintf("%s/w%d-%d", fw.dir, id, n)
		fw.attempted.Add(1)
		octx, cancel := context.WithTimeout(ctx, 20*time.Second)
		err := fw.fc.WriteFile(octx, p, content(p), client.CreateOptions{Perm: 0o644, Replication: 3, BlockSize: 64 << 10})
		cancel()
		if err != nil {
			fw.failed.Add(1)
			continue
		}
		fw.acked.Add(1)
		fw.mu.Lock()
		fw.waiting = append(fw.waiting, p)
		var oldest string
		if len(fw.waiting) > keepFiles {
			oldest, fw.waiting = fw.waiting[0], fw.waiting[1:]
		}
		fw.mu.Unlock()
		if oldest != "" && !fw.verify(ctx, oldest, true) {
			fw.mu.Lock()
			fw.waiting = append(fw.waiting, oldest) // for the end
			fw.mu.Unlock()
		}
	}
}

// verify reads p back: true when it is settled (whole, or lost and
// recorded), false when the read failed and should be tried again.
func (fw *fileWriters) verify(ctx context.Context, p string, del bool) bool {
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	got, err := fw.fc.ReadFile(rctx, p)
	if err != nil {
		return false
	}
	if !bytes.Equal(got, content(p)) {
		fw.mu.Lock()
		fw.lost = append(fw.lost, fmt.Sprintf("acknowledged file %s read back %d bytes that differ from the %d written", p, len(got), len(content(p))))
		fw.mu.Unlock()
		return true
	}
	fw.verified.Add(1)
	if del {
		_ = fw.fc.Delete(rctx, p, false)
	}
	return true
}

// finish reads back every file still waiting, with retries: one that
// never reads is lost.
func (fw *fileWriters) finish(ctx context.Context) (acknowledged int64, lost []string) {
	fw.mu.Lock()
	rest := fw.waiting
	fw.waiting = nil
	fw.mu.Unlock()
	for _, p := range rest {
		ok := false
		for try := 0; try < 3 && !ok; try++ {
			ok = fw.verify(ctx, p, false)
		}
		if !ok {
			fw.mu.Lock()
			fw.lost = append(fw.lost, fmt.Sprintf("acknowledged file %s could not be read back", p))
			fw.mu.Unlock()
		}
	}
	fw.mu.Lock()
	defer fw.mu.Unlock()
	return fw.verified.Load() + int64(len(fw.lost)), fw.lost
}
