package blocks

import (
	"time"

	"github.com/blockfs/blockfs/errs"
)

// Config configures a Manager. Start from DefaultConfig.
type Config struct {
	// HeartbeatInterval is how often datanodes heartbeat.
	HeartbeatInterval time.Duration
	// DeadAfterMissed: a datanode is dead once more than
	// DeadAfterMissed*HeartbeatInterval has passed since its last heartbeat
	// (checked by CheckLiveness).
	DeadAfterMissed int
	// StaleAfter: a live datanode whose last heartbeat is older than this is
	// "stale" and is listed last by Locations.
	StaleAfter time.Duration
	// ReplicationTimeout: a scheduled replication that has not completed
	// after this long is forgotten, and the block is scheduled again
	// (HDFS uses 5m; blocks are small here).
	ReplicationTimeout time.Duration
	// UnknownReplicaGrace: a reported replica of a block the namespace does
	// not know is deleted by ComputeWork only after this long. It must
	// exceed the time a newly elected leader needs to apply its log. A
	// PutFile is taken for at most half of it after its file was prepared
	// (the namenode's putDeadline), and a client keeps files prepared
	// ahead for 2 s: under 4 s PutFiles of those would be refused, and
	// the namenode's Config.Validate refuses it.
	UnknownReplicaGrace time.Duration
	// MaxCommandsPerHeartbeat bounds the commands one PendingCommands call
	// returns.
	MaxCommandsPerHeartbeat int
	// MaxReplicationStreams bounds the replications in flight with one
	// datanode as their source (HDFS maxReplicationStreams).
	MaxReplicationStreams int
	// MaxBlocksPerDelete bounds the replicas in one Delete command.
	MaxBlocksPerDelete int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Seed seeds the placement policy's random source; 0 means a random
	// seed. Tests set it for reproducible placement.
	Seed uint64
}

// DefaultConfig returns the defaults: 3s heartbeats, dead after 10 missed,
// 30s replication timeout, 10m unknown-replica grace.
func DefaultConfig() Config {
	return Config{
		HeartbeatInterval:       3 * time.Second,
		DeadAfterMissed:         10,
		StaleAfter:              9 * time.Second,
		ReplicationTimeout:      30 * time.Second,
		UnknownReplicaGrace:     10 * time.Minute,
		MaxCommandsPerHeartbeat: 16,
		MaxReplicationStreams:   4,
		MaxBlocksPerDelete:      1000,
		Now:                     time.Now,
	}
}

// Validate reports an errs.Invalid error if a field is out of range.
func (c *Config) Validate() error {
	bad := func(msg string) error { return errs.New(errs.Invalid, "blocks.Config.Validate", "", msg) }
	switch {
	case c.HeartbeatInterval <= 0:
		return bad("HeartbeatInterval must be > 0")
	case c.DeadAfterMissed < 1:
		return bad("DeadAfterMissed must be >= 1")
	case c.StaleAfter <= 0:
		return bad("StaleAfter must be > 0")
	case c.ReplicationTimeout <= 0:
		return bad("ReplicationTimeout must be > 0")
	case c.UnknownReplicaGrace < 0:
		return bad("UnknownReplicaGrace must be >= 0")
	case c.MaxCommandsPerHeartbeat < 1:
		return bad("MaxCommandsPerHeartbeat must be >= 1")
	case c.MaxReplicationStreams < 1:
		return bad("MaxReplicationStreams must be >= 1")
	case c.MaxBlocksPerDelete < 1:
		return bad("MaxBlocksPerDelete must be >= 1")
	}
	return nil
}

func (c *Config) deadAfter() time.Duration {
	return time.Duration(c.DeadAfterMissed) * c.HeartbeatInterval
}
