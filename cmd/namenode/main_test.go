package main

import (
	"testing"
)

// TestBootstrapID: with --bootstrap-id, the named node bootstraps and
// drops --join, every other node joins and drops --bootstrap, so one set
// of arguments serves every pod of a StatefulSet.
func TestBootstrapID(t *testing.T) {
	common := []string{"--data-dir", "/x", "--auth=simple", "--join", "namenode-0.blockfs-namenode:9000", "--bootstrap", "--bootstrap-id", "namenode-0"}
	for _, tc := range []struct {
		id        string
		bootstrap bool
		join      string
	}{
		{"namenode-0", true, ""},
		{"namenode-1", false, "namenode-0.blockfs-namenode:9000"},
		{"namenode-2", false, "namenode-0.blockfs-namenode:9000"},
	} {
		t.Run(tc.id, func(t *testing.T) {
			cfg, err := parse(append([]string{"--id", tc.id}, common...))
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Raft.Bootstrap != tc.bootstrap || cfg.Raft.Join != tc.join {
				t.Fatalf("bootstrap %v join %q; want %v %q", cfg.Raft.Bootstrap, cfg.Raft.Join, tc.bootstrap, tc.join)
			}
		})
	}
	cfg, err := parse([]string{"--id", "nn1", "--data-dir", "/x", "--auth=simple", "--advertise-raft", "nn1.example:7000"})
	if err != nil || cfg.Raft.Advertise != "nn1.example:7000" {
		t.Fatalf("--advertise-raft: %q, %v", cfg.Raft.Advertise, err)
	}
}
