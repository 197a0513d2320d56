package idrange

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blockfs/blockfs/errs"
)

// TestCursor: many callers at once get every id of each range exactly
// once, one reservation at a time; a range near its expiry is retired;
// a failed reservation is every waiter's error, and the next call tries
// again.
func TestCursor(t *testing.T) {
	var now atomic.Int64
	clock := func() time.Time { return time.Unix(now.Load(), 0) }
	var reserves, inFlight atomic.Int32
	var fail atomic.Bool
	next := uint64(100)
	var mu sync.Mutex
	c := New(func(ctx context.Context) (Range, error) {
		if inFlight.Add(1) > 1 {
			t.Error("two reservations in flight")
		}
		defer inFlight.Add(-1)
		reserves.Add(1)
		if fail.Load() {
			return Range{}, errs.New(errs.Unavailable, "test", "", "no leader")
		}
		mu.Lock()
		defer mu.Unlock()
		r := Range{FirstInode: next, FirstBlock: next + 1000, GenStamp: 7, Count: 10, Expires: clock().Add(time.Minute)}
		next += 10
		return r, nil
	}, clock, 30*time.Second)

	ctx := context.Background()
	seen := sync.Map{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for got := 0; got < 25; {
				ids, err := c.Next(ctx, uint64(min(3, 25-got)))
				if err != nil {
					t.Error(err)
					return
				}
				if ids.Block != ids.Inode+1000 || ids.GenStamp != 7 || ids.Count < 1 || ids.Count > 3 || (ids.Inode-100)/10 != (ids.Inode+ids.Count-101)/10 {
					t.Errorf("ids %+v: want 1..3 of one range", ids)
				}
				for i := range ids.Count {
					if _, dup := seen.LoadOrStore(ids.Inode+i, true); dup {
						t.Errorf("inode %d handed out twice", ids.Inode+i)
					}
				}
				got += int(ids.Count)
			}
		}()
	}
	wg.Wait()
	if got := reserves.Load(); got != 20 {
		t.Fatalf("%d reservations for 200 ids in ranges of 10, want 20", got)
	}
	// Less than the margin left: the rest of the range is skipped.
	now.Add(31)
	ids, err := c.Next(ctx, 1)
	if err != nil || ids.Inode != 300 {
		t.Fatalf("after the range neared its expiry: %+v, %v; want the first id of a new range", ids, err)
	}
	fail.Store(true)
	now.Add(60)
	if _, err := c.Next(ctx, 1); !errs.Is(err, errs.Unavailable) {
		t.Fatalf("with reservations failing: %v", err)
	}
	fail.Store(false)
	if ids, err := c.Next(ctx, 1); err != nil || ids.Inode != 310 {
		t.Fatalf("after the failure: %+v, %v", ids, err)
	}
}
