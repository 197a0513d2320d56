package namenode

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
type retryCache struct {
	results map[callKey]*api.CommandResult
	order   []callKey // ring, oldest at head
	head    int
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
	if len(rc.order) < retryCacheSize {
		rc.order = append(rc.order, k)
	} else {
		delete(rc.results, rc.order[rc.head])
		rc.order[rc.head] = k
		rc.head = (rc.head + 1) % retryCacheSize
	}
	rc.results[k] = r
}

// each visits the entries oldest first.
func (rc *retryCache) each(fn func(k callKey, r *api.CommandResult) error) error {
	n := len(rc.order)
	for i := range n {
		k := rc.order[(rc.head+i)%n]
		if err := fn(k, rc.results[k]); err != nil {
			return err
		}
	}
	return nil
}

// writeRetryCache appends the snapshot's retry-cache section: count (u32),
// then oldest first: key length (u16) and bytes (user, NUL, client id), call id (u64),
// result length (u32) and the CommandResult protobuf.
func writeRetryCache(w io.Writer, rc *retryCache) error {
	var b [8]byte
	binary.LittleEndian.PutUint32(b[:4], uint32(len(rc.order)))
	if _, err := w.Write(b[:4]); err != nil {
		return err
	}
	return rc.each(func(k callKey, r *api.CommandResult) error {
		res, err := proto.MarshalOptions{Deterministic: true}.Marshal(r)
		if err != nil {
			return err
		}
		buf := binary.LittleEndian.AppendUint16(nil, uint16(len(k.client)))
		buf = append(buf, k.client...)
		buf = binary.LittleEndian.AppendUint64(buf, k.call)
		buf = binary.LittleEndian.AppendUint32(buf, uint32(len(res)))
		buf = append(buf, res...)
		_, err = w.Write(buf)
		return err
	})
}

func readRetryCache(r io.Reader) (*retryCache, error) {
	corrupt := func(msg string) error { return errs.New(errs.Corrupt, "restore snapshot", "", msg) }
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
