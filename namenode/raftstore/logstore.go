package raftstore

import (
	"time"

	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// compactChunk is how many log entries one compaction transaction deletes;
// maxCompactPause bounds the pause after each.
const (
	compactChunk    = 1024
	maxCompactPause = 20 * time.Millisecond
)

// logStore is the Raft log on bbolt, compacted in chunks. After every
// snapshot Raft drops the log it covers with one DeleteRange, which in
// bbolt is one write transaction; bbolt has one writer at a time, so the
// leader's StoreLogs (every client write) waited behind the whole of it.
// Deleting compactChunk entries per transaction,
// oldest first, bounds that wait to one chunk. Between chunks it pauses as
// long as the chunk took: bbolt's writer lock is a Go mutex, which lets the
// compaction take it again before a parked StoreLogs wakes, and without the
// pause a Create waited behind several chunks (docs/OPERATIONS.md,
// "Measured figures behind design choices"). A crash between
// chunks leaves a shorter prefix deleted and the log still contiguous; the
// next compaction starts from the log's first index again. Raft also calls
// DeleteRange from a follower's main loop (compacting after an installed
// snapshot, dropping conflicting entries); a range over one chunk then
// blocks that loop about twice as long as one transaction would have, in
// exchange for the log writes that go on meanwhile.
type logStore struct {
	*raftboltdb.BoltStore
}

// DeleteRange deletes the entries first through last inclusive,
// compactChunk per transaction, lowest first.
func (s logStore) DeleteRange(first, last uint64) error {
	chunks := compactChunks(first, last)
	for i, c := range chunks {
		t0 := time.Now()
		if err := s.BoltStore.DeleteRange(c[0], c[1]); err != nil {
			return err
		}
		if i < len(chunks)-1 {
			time.Sleep(min(time.Since(t0), maxCompactPause))
		}
	}
	return nil
}

// compactChunks splits first..last (inclusive) into ranges of at most
// compactChunk entries, lowest first; none when first > last.
func compactChunks(first, last uint64) [][2]uint64 {
	var out [][2]uint64
	for lo := first; lo <= last; lo += compactChunk {
		hi := lo + compactChunk - 1
		if hi > last || hi < lo {
			hi = last
		}
		out = append(out, [2]uint64{lo, hi})
		if hi == last {
			break
		}
	}
	return out
}
