package main

import (
	"testing"

	"time"

	"github.com/blockfs/blockfs/lbm"
)

func TestParseFlagsAndEnv(t *testing.T) {
	t.Setenv("BLOCKFS_DN_NAMENODES", "a:1, b:2,c:3")
	t.Setenv("BLOCKFS_DN_HEARTBEAT_INTERVAL", "250ms")
	cfg, lvl, err := parse([]string{"--data-dirs", "/x/1,/x/2", "--encrypt", "--inmem-replay-threshold", "0", "--log-level", "debug", "--auth=simple", "--key-refresh-wait", "300ms", "--fail-on-corrupt-container", "--streaming-replay", "buffered"})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Namenodes) != 3 || cfg.Namenodes[1] != "b:2" || cfg.HeartbeatInterval != 250*time.Millisecond {
		t.Fatalf("env not applied: %+v", cfg)
	}
	if len(cfg.DataDirs) != 2 || !cfg.Store.Encrypt || cfg.Store.InmemReplayThreshold != 0 || lvl != "debug" {
		t.Fatalf("flags not applied: %+v", cfg)
	}
	if cfg.Store.StreamingReplay != lbm.StreamingBuffered {
		t.Fatal("--streaming-replay not applied")
	}
	if _, _, err := parse([]string{"--data-dirs", "/x", "--namenodes", "a:1", "--auth=simple", "--streaming-replay", "fast"}); err == nil {
		t.Error("--streaming-replay fast accepted")
	}
	if !cfg.Store.FailOnCorruptContainer {
		t.Fatal("--fail-on-corrupt-container not applied")
	}
	if cfg.KeyRefreshWait != 300*time.Millisecond {
		t.Fatalf("key refresh wait = %v", cfg.KeyRefreshWait)
	}
	if cfg.Store.KeyFile != "/x/1/server.key" {
		t.Fatalf("key file = %q", cfg.Store.KeyFile)
	}
	// Fail closed: without TLS flags and without --auth=simple a datanode
	// refuses to start instead of serving plaintext.
	for _, bad := range [][]string{{"--namenodes", "a:1"}, {"--data-dirs", "/x"}, {"--data-dirs", "/x", "--namenodes", "a:1"}, {"--data-dirs", "/x", "--namenodes", "a:1", "--auth=none"}} {
		t.Setenv("BLOCKFS_DN_NAMENODES", "")
		if _, _, err := parse(bad); err == nil {
			t.Errorf("parse(%v) succeeded", bad)
		}
	}
}
