package client

import (
	"fmt"
	"testing"
	"time"

	"github.com/blockfs/blockfs/api"
)

// TestLocCache: entries expire at the TTL; a put whose generation a drop
// of its path, or a clear, has passed stores nothing (the namenode's
// answer may predate this client's change) while a drop of another path
// leaves it be; a file being written is not cached; a full shard stays at
// its bound; a TTL of 0 is no cache at all.
func TestLocCache(t *testing.T) {
	now := time.Unix(1000, 0)
	c := newLocCache(time.Second)
	c.now = func() time.Time { return now }
	locs := &api.GetBlockLocationsResponse{InodeId: 7, FileLength: 10}

	c.put("/a", locs, c.generation("/a"))
	if c.get("/a") != locs {
		t.Fatal("fresh entry not found")
	}
	now = now.Add(time.Second)
	if c.get("/a") != nil {
		t.Fatal("entry served at its TTL")
	}

	tests := []struct {
		name   string
		change func()
		cached bool
	}{
		{"nothing in between", func() {}, true},
		{"drop of the path", func() { c.drop("/b", nil) }, false},
		{"drop of another path", func() { c.drop("/other", nil) }, true},
		{"clear", c.clear, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.drop("/b", nil)
			gen := c.generation("/b")
			tt.change()
			c.put("/b", locs, gen)
			if got := c.get("/b") != nil; got != tt.cached {
				t.Fatalf("cached %v, want %v", got, tt.cached)
			}
		})
	}

	c.drop("/a", nil)
	c.put("/a", &api.GetBlockLocationsResponse{UnderConstruction: true}, c.generation("/a"))
	if c.get("/a") != nil {
		t.Fatal("a file being written was cached")
	}
	// drop with an entry other than the one held leaves it.
	c.put("/a", locs, c.generation("/a"))
	c.drop("/a", &api.GetBlockLocationsResponse{})
	if c.get("/a") != locs {
		t.Fatal("drop of another entry removed the one held")
	}

	for i := range locShards*locMaxPerShard + 100 {
		p := fmt.Sprint("/many/", i)
		c.put(p, locs, c.generation(p))
	}
	for i := range c.shards {
		if n := len(c.shards[i].m); n > locMaxPerShard {
			t.Fatalf("shard %d holds %d entries, bound %d", i, n, locMaxPerShard)
		}
	}

	var off *locCache = newLocCache(0)
	off.put("/a", locs, off.generation("/a"))
	if off != nil || off.get("/a") != nil {
		t.Fatal("a TTL of 0 cached")
	}
	off.drop("/a", nil)
	off.clear()
}
