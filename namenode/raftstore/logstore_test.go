package raftstore

import (
	"errors"
	"math"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// TestLogStoreDeletesInChunks: the chunked DeleteRange deletes exactly the
// range asked, whatever its length against the chunk, and leaves the rest.
func TestLogStoreDeletesInChunks(t *testing.T) {
	const n = 3*compactChunk + 10
	tests := []struct {
		name     string
		min, max uint64
	}{
		{"one entry", 1, 1},
		{"less than a chunk", 1, compactChunk - 1},
		{"one chunk", 1, compactChunk},
		{"a chunk and one", 1, compactChunk + 1},
		{"three chunks exactly", 1, 3 * compactChunk},
		{"a prefix crossing chunks", 1, 2*compactChunk + 7},
		{"everything", 1, n},
		{"a range inside", 5, 2*compactChunk + 5},
		{"empty range", 10, 9},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bs, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(t.TempDir(), "raft.db")})
			if err != nil {
				t.Fatal(err)
			}
			defer bs.Close()
			s := logStore{bs}
			logs := make([]*raft.Log, n)
			for i := range logs {
				logs[i] = &raft.Log{Index: uint64(i + 1), Term: 1, Type: raft.LogCommand, Data: []byte{byte(i)}}
			}
			if err := s.StoreLogs(logs); err != nil {
				t.Fatal(err)
			}
			if err := s.DeleteRange(tc.min, tc.max); err != nil {
				t.Fatal(err)
			}
			for i := uint64(1); i <= n; i++ {
				var l raft.Log
				err := s.GetLog(i, &l)
				deleted := i >= tc.min && i <= tc.max
				switch {
				case deleted && !errors.Is(err, raft.ErrLogNotFound):
					t.Fatalf("entry %d: %v, want it deleted", i, err)
				case !deleted && (err != nil || l.Index != i):
					t.Fatalf("entry %d: %v (index %d), want it kept", i, err, l.Index)
				}
			}
		})
	}
}

// TestCompactChunks: a range is deleted in transactions of at most
// compactChunk entries, lowest first, covering it exactly; this is what
// bounds a log write's wait behind a compaction.
func TestCompactChunks(t *testing.T) {
	tests := []struct {
		first, last uint64
		want        int // chunks
	}{
		{1, 1, 1},
		{1, compactChunk, 1},
		{1, compactChunk + 1, 2},
		{5, 3*compactChunk + 4, 3},
		{1, 131961, 129},
		{10, 9, 0},
		{math.MaxUint64 - 10, math.MaxUint64, 1},
	}
	for _, tc := range tests {
		got := compactChunks(tc.first, tc.last)
		if len(got) != tc.want {
			t.Fatalf("%d..%d: %d chunks, want %d", tc.first, tc.last, len(got), tc.want)
		}
		next := tc.first
		for _, c := range got {
			if c[0] != next || c[1] < c[0] || c[1]-c[0]+1 > compactChunk {
				t.Fatalf("%d..%d: chunk %v after %d", tc.first, tc.last, c, next-1)
			}
			next = c[1] + 1
		}
		if len(got) > 0 && got[len(got)-1][1] != tc.last {
			t.Fatalf("%d..%d: chunks end at %d", tc.first, tc.last, got[len(got)-1][1])
		}
	}
}
