package client

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blockfs/blockfs/api"
)

// locCache keeps the read locations of files this client wrote (the
// Complete reply's, CompleteRequest.want_locations) or opened whole, for
// Config.LocationCacheTTL, so that reading such a file back costs one
// datanode call and no namenode call. It is off (nil) when the TTL is 0.
//
// What an entry may serve, and why it cannot serve wrong bytes: it names
// one version of the file (inode, block ids, generation stamps, lengths),
// and the datanode serves a replica only of exactly that block id and
// generation stamp, to a read token it verifies, owned by that inode, with
// every chunk's CRC checked by the client. A replica moved or deleted, a
// block an append or a recovery restamped, an expired or revoked token:
// the datanode refuses, and the Reader falls back to the namenode (once,
// and only before it has returned a byte or told its size, so one Reader
// never mixes two versions). This client's own mutations drop entries at
// once: Create, Append and Truncate of a path drop that path; every other
// call that may change existing files (Delete, Rename, permissions,
// snapshots, quotas, lease recovery) empties the cache. What the cache
// cannot see is another client replacing or deleting the file while the
// old version's replicas still exist (until the datanodes delete them, a
// heartbeat or so): within the TTL such a read returns the old version
// whole, as a Reader opened before the change would. Hence opt-in.
//
// Entries live in shards, each under its own lock, picked by a seeded hash
// of the path: concurrent readers of different files rarely meet.
type locCache struct {
	ttl  time.Duration
	now  func() time.Time
	seed maphash.Seed
	// all counts clears and paths[h%len] drops of paths hashing there:
	// put takes the generation its caller read before asking the
	// namenode, and stores nothing if a drop of its path (or a clear) came
	// in between: the answer may predate this client's own change.
	all    atomic.Uint64
	paths  [1024]atomic.Uint64
	shards [locShards]locShard
}

// locGen is a path's generation (locCache.generation).
type locGen struct{ all, path uint64 }

const (
	locShards = 16
	// locMaxPerShard bounds the cache at 16 x 4096 files; a full shard
	// drops an arbitrary entry (map order) to take a new one.
	locMaxPerShard = 4096
)

type locShard struct {
	mu sync.Mutex
	m  map[string]locEntry
	_  [40]byte // keep the next shard's lock off this one's cache line
}

type locEntry struct {
	locs  *api.GetBlockLocationsResponse // expanded (Blocks filled); read only
	until time.Time
}

func newLocCache(ttl time.Duration) *locCache {
	if ttl <= 0 {
		return nil
	}
	c := &locCache{ttl: ttl, now: time.Now, seed: maphash.MakeSeed()}
	for i := range c.shards {
		c.shards[i].m = map[string]locEntry{}
	}
	return c
}

func (c *locCache) shard(p string) (*locShard, *atomic.Uint64) {
	h := maphash.String(c.seed, p)
	return &c.shards[h%locShards], &c.paths[(h/locShards)%uint64(len(c.paths))]
}

// get returns p's entry if one is fresh.
func (c *locCache) get(p string) *api.GetBlockLocationsResponse {
	if c == nil {
		return nil
	}
	sh, _ := c.shard(p)
	sh.mu.Lock()
	e, ok := sh.m[p]
	if ok && !c.now().Before(e.until) {
		delete(sh.m, p)
		ok = false
	}
	sh.mu.Unlock()
	if !ok {
		return nil
	}
	return e.locs
}

// generation returns p's generation, to pass to put.
func (c *locCache) generation(p string) locGen {
	if c == nil {
		return locGen{}
	}
	_, pg := c.shard(p)
	return locGen{c.all.Load(), pg.Load()}
}

// put caches locs (expanded) as p's whole-file locations, unless a drop
// or clear came after generation gen was read. Files being written are
// not cached: their length moves.
func (c *locCache) put(p string, locs *api.GetBlockLocationsResponse, gen locGen) {
	if c == nil || locs == nil || locs.UnderConstruction {
		return
	}
	sh, pg := c.shard(p)
	sh.mu.Lock()
	if c.all.Load() != gen.all || pg.Load() != gen.path { // read under the lock: a drop bumps them before taking it
		sh.mu.Unlock()
		return
	}
	if _, ok := sh.m[p]; !ok && len(sh.m) >= locMaxPerShard {
		for k := range sh.m {
			delete(sh.m, k)
			break
		}
	}
	sh.m[p] = locEntry{locs: locs, until: c.now().Add(c.ttl)}
	sh.mu.Unlock()
}

// drop forgets p, if it is the entry held (old nil: whatever is held).
func (c *locCache) drop(p string, old *api.GetBlockLocationsResponse) {
	if c == nil {
		return
	}
	sh, pg := c.shard(p)
	pg.Add(1)
	sh.mu.Lock()
	if e, ok := sh.m[p]; ok && (old == nil || e.locs == old) {
		delete(sh.m, p)
	}
	sh.mu.Unlock()
}

// clear forgets everything.
func (c *locCache) clear() {
	if c == nil {
		return
	}
	c.all.Add(1)
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		clear(sh.m)
		sh.mu.Unlock()
	}
}

// keepsLocations lists the calls that change no existing file's contents,
// location or access: the cache survives them. Create, Append and
// Truncate drop their own path (their callers do); any call not named here
// empties the cache, so a call added later errs on the safe side.
var keepsLocations = map[string]bool{
	"GetBlockLocations": true, "GetFileInfo": true, "ListStatus": true, "ClusterStatus": true,
	"GetContentSummary": true, "GetQuotaUsage": true, "GetXAttrs": true, "ListXAttrs": true,
	"GetServerDefaults": true, "GetFsStats": true, "GetSnapshottableDirListing": true,
	"ReportBadBlocks": true, "RenewLease": true, "Mkdirs": true, "SetTimes": true,
	"SetXAttr": true, "RemoveXAttr": true,
	// A file being written: Create, Append and Truncate drop its path.
	"Create": true, "Append": true, "Truncate": true, "AddBlock": true, "Complete": true,
	"AbandonBlock": true, "Fsync": true, "UpdateBlockForPipeline": true, "UpdatePipeline": true,
	"PrepareFile": true, "PutFile": true, // PutFile drops its path as Create does
}
