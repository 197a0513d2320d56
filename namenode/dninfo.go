package namenode

import (
	"sync"
	"sync/atomic"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/blocks"
)

// dnInfoCache holds each datanode's api.DatanodeInfo, shared between
// GetBlockLocations replies until the datanode's snapshot changes (a
// heartbeat replaces it), so a reply costs no allocation per datanode.
// Replies are only read after they are built.
//
// Entries are found by the datanode's number (blocks.LocationReader), an
// index into a table that only grows: a lookup is two atomic loads and a
// pointer comparison, with no hashing of the datanode's id and nothing
// written. The table is replaced (copied, under mu) only to grow; an entry
// stored into the old table meanwhile is lost, which costs one rebuild.
type dnInfoCache struct {
	mu  sync.Mutex // serializes growing the table
	tab atomic.Pointer[[]atomic.Pointer[cachedInfo]]
}

type cachedInfo struct {
	d    *blocks.Datanode // the snapshot info was built from
	info *api.DatanodeInfo
}

// get returns the entry of d, datanode number num.
func (c *dnInfoCache) get(num uint32, d *blocks.Datanode) *api.DatanodeInfo {
	if t := c.tab.Load(); t != nil && int(num) < len(*t) {
		if e := (*t)[num].Load(); e != nil && e.d == d {
			return e.info
		}
	}
	info := toDatanodeInfo(*d)
	c.slot(num).Store(&cachedInfo{d: d, info: info})
	return info
}

// slot returns the table entry of number num, growing the table to hold it.
func (c *dnInfoCache) slot(num uint32) *atomic.Pointer[cachedInfo] {
	if t := c.tab.Load(); t != nil && int(num) < len(*t) {
		return &(*t)[num]
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.tab.Load()
	if t == nil || int(num) >= len(*t) {
		var old []atomic.Pointer[cachedInfo]
		if t != nil {
			old = *t
		}
		grown := make([]atomic.Pointer[cachedInfo], max(int(num)+1, 2*len(old)))
		for i := range old {
			grown[i].Store(old[i].Load())
		}
		t = &grown
		c.tab.Store(t)
	}
	return &(*t)[num]
}
