// Package raftstore is the namenode's Raft log and stable store: bbolt
// through raft-boltdb, opened with etcd's freelist settings and with a log
// compaction that deletes in chunks (logstore.go), and the writer that
// turns hashicorp/raft's log lines into slog records (logwriter.go).
package raftstore

import (
	"path/filepath"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"
)

// Open opens the store in dir (its file is dir/raft.db) and returns it,
// for raft's StableStore and for closing, with the log store raft should
// use: a cache of the last 1024 entries over the chunked compaction.
func Open(dir string) (*raftboltdb.BoltStore, raft.LogStore, error) {
	store, err := raftboltdb.New(raftboltdb.Options{
		Path: filepath.Join(dir, "raft.db"),
		// As etcd does: don't rewrite the freelist on every commit (it is
		// rebuilt on open), keep it as a hashmap, and map enough up front
		// that the log rarely forces a remap. Every commit still fsyncs.
		BoltOptions: &bbolt.Options{
			Timeout:         time.Second,
			NoFreelistSync:  true,
			FreelistType:    bbolt.FreelistMapType,
			InitialMmapSize: 64 << 20,
		},
	})
	if err != nil {
		return nil, nil, err
	}
	logs, err := raft.NewLogCache(1024, logStore{store})
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	return store, logs, nil
}
