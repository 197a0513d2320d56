package leases

import (
	"cmp"
	"slices"

	"github.com/blockfs/blockfs/namespace"
)

// Table is the lease table. The zero value is not usable; use New.
type Table struct {
	holders    map[string]*holder
	files      map[namespace.ID]string // file under construction -> holder
	recoveries map[namespace.ID]Recovery
}

type holder struct {
	user      string
	renewedMs int64
	files     map[namespace.ID]struct{}
}

// Recovery is a block recovery in progress of one file.
type Recovery struct {
	ID        uint64 // the recovery's generation stamp
	Block     namespace.Block
	Primary   string   // the datanode that runs it
	Replicas  []string // datanodes asked for their replica
	StartedMs int64
	// Truncate marks a truncate's recovery (HDFS's truncate inside a
	// block): the replicas are cut to exactly Block.Length, not to a
	// length they agree on.
	Truncate bool
	// CopyFrom, in a truncate's recovery inside a block a snapshot holds
	// (copy-on-truncate), is that block: Block is a new block, made on
	// each of Replicas from CopyFrom's first Block.Length bytes, and
	// CopyFrom's replicas stay as they are. Zero otherwise.
	CopyFrom namespace.Block
}

// Holder is one holder's lease, as Holders lists them.
type Holder struct {
	Client, User string
	RenewedMs    int64
	Files        []namespace.ID // sorted
}

// New returns an empty table.
func New() *Table {
	return &Table{holders: map[string]*holder{}, files: map[namespace.ID]string{}, recoveries: map[namespace.ID]Recovery{}}
}

// Key is the holder key of a writer: its client id, or its user when it
// sent none.
func Key(w namespace.Writer) string {
	if w.Client != "" {
		return w.Client
	}
	return "user:" + w.User
}

// Add records that w holds file id, renewed at nowMs (a create or append).
// A file held by another holder moves to w.
func (t *Table) Add(id namespace.ID, w namespace.Writer, nowMs int64) {
	t.Remove(id)
	k := Key(w)
	h := t.holders[k]
	if h == nil {
		h = &holder{user: w.User, files: map[namespace.ID]struct{}{}}
		t.holders[k] = h
	}
	h.files[id] = struct{}{}
	h.renewedMs = max(h.renewedMs, nowMs)
	t.files[id] = k
}

// Remove drops file id (closed, deleted or recovered) and its recovery; a
// holder left with no file is dropped too.
func (t *Table) Remove(id namespace.ID) {
	delete(t.recoveries, id)
	k, ok := t.files[id]
	if !ok {
		return
	}
	delete(t.files, id)
	if h := t.holders[k]; h != nil {
		delete(h.files, id)
		if len(h.files) == 0 {
			delete(t.holders, k)
		}
	}
}

// Renew renews the lease of holder w at nowMs and returns how many files
// it holds; 0 (and nothing changes) when it holds none.
func (t *Table) Renew(w namespace.Writer, nowMs int64) int {
	h := t.holders[Key(w)]
	if h == nil || h.user != w.User {
		return 0
	}
	h.renewedMs = max(h.renewedMs, nowMs)
	return len(h.files)
}

// Expired reports whether the lease on file id was last renewed more than
// limitMs before nowMs. A file with no lease is expired.
func (t *Table) Expired(id namespace.ID, nowMs, limitMs int64) bool {
	h := t.holders[t.files[id]]
	return h == nil || nowMs-h.renewedMs > limitMs
}

// RenewedMs is when the holder of file id last renewed (0: no lease).
func (t *Table) RenewedMs(id namespace.ID) int64 {
	if h := t.holders[t.files[id]]; h != nil {
		return h.renewedMs
	}
	return 0
}

// StartRecovery records recovery r of file id, replacing any earlier one.
func (t *Table) StartRecovery(id namespace.ID, r Recovery) {
	r.Replicas = slices.Clone(r.Replicas)
	t.recoveries[id] = r
}

// Recovering returns the recovery in progress of file id.
func (t *Table) Recovering(id namespace.ID) (Recovery, bool) {
	r, ok := t.recoveries[id]
	return r, ok
}

// Recoveries returns every recovery in progress, by file id (nil for
// none: the leader asks on every heartbeat).
func (t *Table) Recoveries() map[namespace.ID]Recovery {
	if len(t.recoveries) == 0 {
		return nil
	}
	out := make(map[namespace.ID]Recovery, len(t.recoveries))
	for id, r := range t.recoveries {
		out[id] = r
	}
	return out
}

// Holders lists every holder, sorted by client.
func (t *Table) Holders() []Holder {
	out := make([]Holder, 0, len(t.holders))
	for k, h := range t.holders {
		hd := Holder{Client: k, User: h.user, RenewedMs: h.renewedMs, Files: make([]namespace.ID, 0, len(h.files))}
		for id := range h.files {
			hd.Files = append(hd.Files, id)
		}
		slices.Sort(hd.Files)
		out = append(out, hd)
	}
	slices.SortFunc(out, func(a, b Holder) int { return cmp.Compare(a.Client, b.Client) })
	return out
}

// Counts returns the number of holders, files under lease and recoveries
// in progress.
func (t *Table) Counts() (holders, files, recoveries int) {
	return len(t.holders), len(t.files), len(t.recoveries)
}

// Prune drops every file for which keep returns false (a file deleted or
// closed by a command that does not know about leases).
func (t *Table) Prune(keep func(id namespace.ID, holder string) bool) {
	for id, k := range t.files {
		if !keep(id, k) {
			t.Remove(id)
		}
	}
}
