package leases

import (
	"sync"
	"time"

	"github.com/blockfs/blockfs/namespace"
)

// Watch is the leader's own measure of how long each lease holder has
// been silent, on its monotonic clock. The lease table's renewal times are
// wall-clock stamps of whichever leader applied each renewal, so a leader
// whose clock is ahead of its predecessor's (or jumps forward) would see
// every holder as silent for that difference and recover every open file
// of live writers at once. The monitor recovers a holder only when both
// agree: the table says it passed the hard limit, and this leader has
// itself watched it stay unrenewed for that long since it began leading
// (HDFS's new active namenode likewise starts every lease afresh). A
// holder's silence starts when this node first sees its current renewal
// stamp; a renewal changes the stamp and restarts it. The zero Watch is
// ready to use.
type Watch struct {
	mu   sync.Mutex
	term uint64 // the leadership the watch belongs to; another term resets it
	seen map[string]watched
}

type watched struct {
	renewedMs int64
	since     time.Time // monotonic: when this renewal stamp was first seen
}

// Silences returns, for each holder (by HolderKey), how long this leader
// has watched it without a renewal, as of mono (a time.Now reading: only its monotonic
// part is used). term is the current leadership's Raft term; holders no
// longer in the table are forgotten.
func (w *Watch) Silences(term uint64, holders []Holder, mono time.Time) map[string]time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.term != term || w.seen == nil {
		w.term, w.seen = term, map[string]watched{}
	}
	next := make(map[string]watched, len(holders))
	out := make(map[string]time.Duration, len(holders))
	for _, h := range holders {
		k := HolderKey(h)
		s, ok := w.seen[k]
		if !ok || s.renewedMs != h.RenewedMs {
			s = watched{renewedMs: h.RenewedMs, since: mono}
		}
		next[k] = s
		out[k] = mono.Sub(s.since)
	}
	w.seen = next
	return out
}

// HolderKey is h's key, as Key gives a writer's.
func HolderKey(h Holder) string {
	return Key(namespace.Writer{Client: h.Client, User: h.User})
}
