package lbm

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/blockfs/blockfs/errs"
)

// Config configures a Store. Start from DefaultConfig.
type Config struct {
	// Dirs are the data directories; containers are spread across them.
	Dirs []string
	// FS does all file I/O; nil means the OS file system.
	FS FS
	// MaxContainerSize: a container whose data file reaches this many bytes
	// is full (soft limit, like Kudu's log_container_max_size).
	MaxContainerSize int64
	// MaxBlocksPerContainer: a container that has held this many blocks is
	// full; <= 0 means unlimited.
	MaxBlocksPerContainer int
	// CompactLiveRatio: the metadata of a full container whose live/created
	// ratio is <= this is rewritten with live records only (at startup and
	// after deletes). 0 disables compaction.
	CompactLiveRatio float64
	// RuntimeCompaction also compacts after deletes, not only at Open.
	RuntimeCompaction bool
	// InmemReplayThreshold: a metadata file whose payload is at most this
	// many bytes is replayed from one read into memory; 0 = always stream.
	InmemReplayThreshold int64
	// StreamingReplay selects the reader of a metadata file that does not
	// take the in-memory path (InmemReplayThreshold 0, a file above it, or
	// one that does not fit the budget): StreamingPread (the default,
	// Kudu's path: two ReadAt calls per record) or StreamingBuffered (one
	// sequential reader through a 1 MiB readahead window). Both apply the
	// same frame checks, crash-tail rules and corruption errors.
	StreamingReplay StreamingMode
	// ReplayMemoryBudget bounds the bytes of metadata held in memory by
	// concurrent in-memory replays; a container that does not fit streams.
	ReplayMemoryBudget int64
	// ReplayWorkers bounds the goroutines replaying containers.
	ReplayWorkers int
	// Encrypt enables encryption at rest for new files.
	Encrypt bool
	// KeyFile is the server key file, created (0600) if missing. Empty
	// means <Dirs[0]>/lbm-server.key. Needed when Encrypt is set or any
	// existing file is encrypted.
	KeyFile string
	// GroupCommitMax: a block of at most this many bytes (declared, or
	// written so far by an open-ended writer; not a Replace) is kept in
	// its writer's memory until Commit, which stores it together with the
	// other such blocks committing at that moment: one data sync and one
	// metadata sync for the group, as PutBatch does, instead of two syncs
	// per block. An open-ended writer that grows past it, Syncs or
	// Truncates moves its bytes to a container and goes on as any writer.
	// The blocks' bytes, records and order on disk are what Commit one by
	// one writes. 0 turns it off.
	GroupCommitMax int64
	// Capacity reported by Usage; 0 means the sum of MaxContainerSize over
	// healthy dirs is not assumed and capacity is reported as 0.
	Capacity int64
	// FailOnCorruptContainer makes Open fail when any container's metadata
	// replay finds corruption (the old fail-fast behaviour). When false
	// (the default), such a container is set aside: its files are renamed
	// to <name>.corrupt-<unix seconds> (never deleted), the file and
	// offset are logged, blockfs_lbm_containers_set_aside_total counts it,
	// SetAside lists it, and Open serves every other container. Its blocks
	// are absent from Blocks(), so the full block report omits them and the
	// namenode re-replicates them, as HDFS does for a failed volume.
	FailOnCorruptContainer bool
	// FullRetry is how long a data directory that answered a write with
	// ENOSPC gets no new blocks before one is tried there again. A full
	// disk is not a failed one: it comes back into service when space is
	// freed (HDFS chooses volumes by their available space alike), where
	// an I/O error takes the directory out until restart. 0 means 1 s.
	FullRetry time.Duration
	// Registerer receives the store's metrics; nil = not registered.
	Registerer prometheus.Registerer
	// Logger; nil = slog.Default().
	Logger *slog.Logger
}

// StreamingMode is the reader used by streaming replay.
type StreamingMode uint8

const (
	// StreamingPread reads each record with two ReadAt calls (the 8-byte
	// frame header, then body+crc), decrypting each at its offset.
	StreamingPread StreamingMode = iota
	// StreamingBuffered reads the file front to back in 1 MiB ReadAt
	// calls and serves each record's header and body+crc from that window,
	// decrypting each at its offset; its buffer is not charged to
	// ReplayMemoryBudget.
	StreamingBuffered
)

// String returns the replay path name used in metrics and logs.
func (m StreamingMode) String() string {
	switch m {
	case StreamingPread:
		return "streaming"
	case StreamingBuffered:
		return "buffered-streaming"
	}
	return fmt.Sprintf("StreamingMode(%d)", uint8(m))
}

// DefaultConfig returns a config with Kudu-like defaults and no dirs.
func DefaultConfig() Config {
	return Config{
		MaxContainerSize:      10 << 30,
		MaxBlocksPerContainer: 0,
		CompactLiveRatio:      0.5,
		RuntimeCompaction:     true,
		InmemReplayThreshold:  64 << 20,
		ReplayMemoryBudget:    1 << 30,
		ReplayWorkers:         8,
		GroupCommitMax:        64 << 10,
	}
}

// Validate checks cfg and reports an errs.Invalid error.
func (c *Config) Validate() error {
	bad := func(msg string) error { return errs.New(errs.Invalid, "lbm.Config.Validate", "", msg) }
	switch {
	case len(c.Dirs) == 0:
		return bad("no data dirs")
	case c.MaxContainerSize < 2*fsBlockSize:
		return bad("MaxContainerSize must be at least 8 KiB")
	case c.CompactLiveRatio < 0 || c.CompactLiveRatio >= 1:
		return bad("CompactLiveRatio must be in [0,1)")
	case c.InmemReplayThreshold < 0:
		return bad("InmemReplayThreshold must be >= 0")
	case c.StreamingReplay > StreamingBuffered:
		return bad("unknown StreamingReplay mode")
	case c.ReplayMemoryBudget < 0:
		return bad("ReplayMemoryBudget must be >= 0")
	case c.ReplayWorkers < 1:
		return bad("ReplayWorkers must be >= 1")
	case c.GroupCommitMax < 0 || c.GroupCommitMax > c.MaxContainerSize:
		return bad("GroupCommitMax must be in [0, MaxContainerSize]")
	}
	seen := map[string]bool{}
	for _, d := range c.Dirs {
		d = filepath.Clean(d)
		if seen[d] {
			return bad("duplicate data dir " + d)
		}
		seen[d] = true
	}
	return nil
}

func (c *Config) keyFile() string {
	if c.KeyFile != "" {
		return c.KeyFile
	}
	return filepath.Join(c.Dirs[0], "lbm-server.key")
}
