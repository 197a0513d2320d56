package main

import (
	"context"
	"encoding/json"
	"testing"
)

// TestSmoke runs both phases at a small size and checks that every figure
// the issue names is in the JSON, and that the ones that cannot be zero
// are not. It runs twice so that the cluster phase's nodes swap token
// modes once (a restart of both from their own directories).
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a namenode")
	}
	r, err := Run(context.Background(), Config{Files: 3000, ClusterFiles: 1000, PerDir: 1000, Runs: 2, Calls: 100, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{
		"files", "ns_bytes_per_file", "blockmap_bytes_per_block", "total_bytes_per_file",
		"snapshot_ms", "snapshot_peak_heap_over_live_mib", "create_p50_ms", "create_max_during_snapshot_ms",
		"restore_ms", "restart_ready_ms", "gbl_ns_per_block_1000", "gbl_random_cached_us", "gbl_random_per_request_us",
		"gbl_random_cached_over_per_request", "stat_random_cached_over_per_request_node",
		"raft_snapshot_ms", "create_rpc_p50_ms", "create_rpc_max_during_snapshot_ms", "create_rpc_max_outside_snapshot_ms",
	} {
		v, ok := m[k]
		if !ok {
			t.Errorf("JSON lacks %q", k)
			continue
		}
		// The peak-heap sample may miss a 3000-file encode entirely, and
		// since the encode no longer holds the lock throughout, no create
		// need overlap it.
		if f, _ := v.(float64); f <= 0 && k != "snapshot_peak_heap_over_live_mib" && k != "create_max_during_snapshot_ms" && k != "create_rpc_max_during_snapshot_ms" {
			t.Errorf("%s = %v, want > 0", k, v)
		}
	}
	if got := r.RunsCachedNode; len(got) != 2 || got[0] != "B" || got[1] != "A" {
		t.Errorf("runs_cached_node = %q, want [B A]: the nodes swap modes between runs", got)
	}
	for _, k := range []string{"runs_gbl_random_cached_us", "runs_gbl_random_per_request_us",
		"runs_stat_random_cached_node_us", "runs_stat_random_per_request_node_us", "runs_gbl_ns_per_block_1000"} {
		if v, _ := m[k].([]any); len(v) != 2 {
			t.Errorf("%s = %v, want one figure per run", k, m[k])
		}
	}
	if r.ImageBytes == 0 || r.ClusterFiles != 1000 {
		t.Errorf("image %d bytes, cluster %d files", r.ImageBytes, r.ClusterFiles)
	}
}
