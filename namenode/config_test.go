package namenode_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/namenode"
)

// TestConfigValidate: settings that would leave a namenode unable to do
// its job are refused at start with Invalid, naming the setting: a
// bytes-per-checksum that is not a power of two in [64, 1 MiB], block
// size limits that allow nothing, an unknown-replica grace PutFile cannot
// live with, and the rest.
func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name   string
		adjust func(c *namenode.Config)
		msg    string // "" = valid
	}{
		{"defaults", func(*namenode.Config) {}, ""},
		{"bpc not a power of two", func(c *namenode.Config) { c.Namespace.BytesPerChecksum = 500 }, "bytes per checksum 500"},
		{"bpc too small", func(c *namenode.Config) { c.Namespace.BytesPerChecksum = 32 }, "bytes per checksum 32"},
		{"bpc too large", func(c *namenode.Config) { c.Namespace.BytesPerChecksum = 2 << 20 }, "bytes per checksum 2097152"},
		{"min above max", func(c *namenode.Config) { c.Namespace.MinBlockSize, c.Namespace.MaxBlockSize = 2<<20, 1<<20 }, "want 0 < min <= max"},
		{"default above max", func(c *namenode.Config) { c.Namespace.DefaultBlockSize = 2 << 30 }, "above the maximum"},
		{"grace at its least", func(c *namenode.Config) { c.Blocks.UnknownReplicaGrace = 4 * time.Second }, ""},
		{"grace below PutFile's need", func(c *namenode.Config) { c.Blocks.UnknownReplicaGrace = 3 * time.Second }, "unknown replica grace 3s"},
		{"no grace", func(c *namenode.Config) { c.Blocks.UnknownReplicaGrace = 0 }, "unknown replica grace 0s"},
		{"checkpoint above trash interval", func(c *namenode.Config) { c.TrashInterval, c.TrashCheckpoint = time.Minute, time.Hour }, "--trash-checkpoint-interval"},
		{"insecure raft under mtls", func(c *namenode.Config) { c.Raft.Insecure, c.Auth.Mode = true, namenode.AuthMTLS }, "insecure raft"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := namenode.DefaultConfig()
			cfg.ID, cfg.DataDir, cfg.Auth.Mode = "nn", t.TempDir(), namenode.AuthSimple
			c.adjust(&cfg)
			err := cfg.Validate()
			if c.msg == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if errs.KindOf(err) != errs.Invalid || !strings.Contains(fmt.Sprint(err), c.msg) {
				t.Fatalf("got %v, want Invalid mentioning %q", err, c.msg)
			}
		})
	}
}
