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
// its job are refused at start with Invalid, naming the setting.
func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name   string
		adjust func(c *namenode.Config)
		msg    string // "" = valid
	}{
		{"defaults", func(*namenode.Config) {}, ""},
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
