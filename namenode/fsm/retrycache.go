package fsm

import (
	"encoding/binary"
	"io"

	"google.golang.org/protobuf/proto"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
)

// retryCache remembers the results of the last retryCacheSize commands that
// named their call (Caller.client_id + call_id), in apply order, so a client
// retrying a write whose answer it lost (a timeout, a leader change) gets
// the first answer again instead of applying the write twice or reading
// its own success back as "already exists". It is replicated state: every
// node fills it identically, and snapshots carry it, or a node restored
// from a snapshot would apply a retry its peers skip.
//
// The ring is kept in chunks that snapshots share copy-on-write: taking a
// snapshot's copy (frozen) hands it the chunk pointers and marks every chunk
// shared, and the next put into a shared chunk copies that chunk first. A
// snapshot therefore costs the FSM's write lock a copy of 64 pointers, and
// each chunk at most one 8 KiB copy afterwards.
type retryCache struct {
	results map[callKey]*api.CommandResult
	chunks  [retryCacheSize / retryChunk]*[retryChunk]retryEntry
	shared  [retryCacheSize / retryChunk]bool // chunks[i] is held by a frozen copy
	n       int                               // entries held, at most retryCacheSize
	head    int                               // the oldest entry's slot once full
}

// retryChunk is the entries per chunk of the ring; it divides
// retryCacheSize.
const retryChunk = 256

// retryEntry is one remembered call. Its result is never changed once
// stored (handlers and retries only read it), so a snapshot may hold the
// pointer and marshal it later without a lock.
type retryEntry struct {
	key callKey
	res *api.CommandResult
}

// callKey names one call of one client of one user. The user is part of
// the key: client ids are not authenticated, so without it another user
// who learned someone's (client id, call id) would be handed that call's
// answer (an AddBlock's block, say) without any permission check.
type callKey struct {
	client string // user, a NUL byte, then the client id
	call   uint64
}

// retryCacheSize bounds the cache; at 10k writes/s it covers over a second
// and a half of retries, far more at ordinary rates.
const retryCacheSize = 16384

func newRetryCache() *retryCache {
	return &retryCache{results: map[callKey]*api.CommandResult{}}
}

func keyOf(c *api.Caller) (callKey, bool) {
	if c.GetClientId() == "" || c.GetCallId() == 0 {
		return callKey{}, false
	}
	return callKey{c.GetUser() + "\x00" + c.ClientId, c.CallId}, true
}

func (rc *retryCache) get(k callKey) (*api.CommandResult, bool) {
	r, ok := rc.results[k]
	return r, ok
}

func (rc *retryCache) put(k callKey, r *api.CommandResult) {
	if _, ok := rc.results[k]; ok {
		return
	}
	slot := rc.n
	if rc.n < retryCacheSize {
		rc.n++
	} else {
		slot = rc.head
		delete(rc.results, rc.at(slot).key)
		rc.head = (rc.head + 1) % retryCacheSize
	}
	c := slot / retryChunk
	switch {
	case rc.chunks[c] == nil:
		rc.chunks[c] = new([retryChunk]retryEntry)
	case rc.shared[c]:
		cp := *rc.chunks[c]
		rc.chunks[c], rc.shared[c] = &cp, false
	}
	rc.chunks[c][slot%retryChunk] = retryEntry{k, r}
	rc.results[k] = r
}

// at returns the entry in ring slot i.
func (rc *retryCache) at(i int) retryEntry { return rc.chunks[i/retryChunk][i%retryChunk] }

// frozen returns a copy of the cache as it is now that later puts do not
// change: what a snapshot keeps until Persist marshals it.
func (rc *retryCache) frozen() *retryCache {
	cp := &retryCache{chunks: rc.chunks, n: rc.n, head: rc.head}
	for i := range rc.shared {
		rc.shared[i] = rc.chunks[i] != nil
	}
	return cp
}

// entries visits the entries oldest first. On a live cache it must not
// run beside put; on a frozen copy it may.
func (rc *retryCache) entries(fn func(retryEntry) error) error {
	for i := range rc.n {
		if err := fn(rc.at((rc.head + i) % retryCacheSize)); err != nil {
			return err
		}
	}
	return nil
}

// writeRetryEntries writes the snapshot's retry-cache section: count (u32),
// then per entry, oldest first: key length (u16) and bytes (user, NUL,
// client id), call id (u64), result length (u32) and the CommandResult
// protobuf.
func writeRetryEntries(w io.Writer, rc *retryCache) error {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(rc.n))
	if _, err := w.Write(b[:]); err != nil {
		return err
	}
	var buf []byte
	return rc.entries(func(e retryEntry) error {
		buf = binary.LittleEndian.AppendUint16(buf[:0], uint16(len(e.key.client)))
		buf = append(buf, e.key.client...)
		buf = binary.LittleEndian.AppendUint64(buf, e.key.call)
		at := len(buf)
		buf = append(buf, 0, 0, 0, 0)
		var err error
		if buf, err = (proto.MarshalOptions{Deterministic: true}).MarshalAppend(buf, e.res); err != nil {
			return err
		}
		binary.LittleEndian.PutUint32(buf[at:], uint32(len(buf)-at-4))
		_, err = w.Write(buf)
		return err
	})
}

func readRetryCache(r io.Reader) (*retryCache, error) {
	corrupt := func(msg string) error { return errs.New(errs.Corrupt, "fsm.FSM.Restore", "", msg) }
	var b [8]byte
	if _, err := io.ReadFull(r, b[:4]); err != nil {
		return nil, corrupt("truncated retry cache count")
	}
	n := binary.LittleEndian.Uint32(b[:4])
	if n > retryCacheSize {
		return nil, corrupt("implausible retry cache size")
	}
	rc := newRetryCache()
	for range n {
		if _, err := io.ReadFull(r, b[:2]); err != nil {
			return nil, corrupt("truncated retry cache entry")
		}
		id := make([]byte, binary.LittleEndian.Uint16(b[:2]))
		if _, err := io.ReadFull(r, id); err != nil {
			return nil, corrupt("truncated retry cache entry")
		}
		if _, err := io.ReadFull(r, b[:8]); err != nil {
			return nil, corrupt("truncated retry cache entry")
		}
		call := binary.LittleEndian.Uint64(b[:8])
		if _, err := io.ReadFull(r, b[:4]); err != nil {
			return nil, corrupt("truncated retry cache entry")
		}
		size := binary.LittleEndian.Uint32(b[:4])
		if size > 1<<20 {
			return nil, corrupt("implausible retry cache result")
		}
		res := make([]byte, size)
		if _, err := io.ReadFull(r, res); err != nil {
			return nil, corrupt("truncated retry cache entry")
		}
		cr := &api.CommandResult{}
		if err := proto.Unmarshal(res, cr); err != nil {
			return nil, corrupt("bad retry cache result: " + err.Error())
		}
		rc.put(callKey{string(id), call}, cr)
	}
	return rc, nil
}
