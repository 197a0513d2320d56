package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/blockfs/blockfs/bench/internal/results"
)

// TestMain lets the test binary serve as the concurrent-writes writer
// process, as the command does.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(childMain(os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}

// TestSmoke runs every case once on tiny sizes, encrypted at rest (the
// plain cluster runs the same code with one flag off) and under mTLS, and
// checks the JSON has every field in every row.
func TestSmoke(t *testing.T) {
	cfg := QuickConfig()
	cfg.Size, cfg.BlockSize, cfg.WriteBlock, cfg.IOSize = 2<<20, 1<<20, 1<<20, 256<<10
	cfg.Clients, cfg.Reads, cfg.Writers, cfg.Encrypt = 2, 4, 2, []bool{true}
	cfg.Dir = t.TempDir()
	cfg.JSON = filepath.Join(t.TempDir(), "datapath.json")
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	var out, progress bytes.Buffer
	rows, err := Run(context.Background(), cfg, &out, &progress)
	t.Log("\n" + progress.String() + out.String())
	if err != nil {
		t.Fatal(err)
	}
	if err := results.WriteJSON(cfg.JSON, rows); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(cfg.JSON)
	if err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("invalid JSON: %v", err)
	}
	fields := []string{"case", "encrypted", "clients", "mb_per_s", "floor_disk_mb_per_s", "floor_stream_mb_per_s",
		"floor_crypto_mb_per_s", "read_offset", "median_us", "disk_bytes_per_read", "peak_heap_mib"}
	count := map[string]int{}
	for i, row := range got {
		for _, f := range fields {
			if _, ok := row[f]; !ok {
				t.Errorf("row %d (%v) has no %q", i, row["case"], f)
			}
		}
		for _, f := range fields[4:7] {
			if v, _ := row[f].(float64); v <= 0 {
				t.Errorf("row %d (%v): %s = %v", i, row["case"], f, row[f])
			}
		}
		c, _ := row["case"].(string)
		count[c]++
		switch c {
		case "put", "get", "concurrent-writes":
			if v, _ := row["mb_per_s"].(float64); v <= 0 {
				t.Errorf("row %d (%s): mb_per_s = %v", i, c, v)
			}
		case "read4k":
			if v, _ := row["median_us"].(float64); v <= 0 {
				t.Errorf("row %d (read4k): median_us = %v", i, v)
			}
		default:
			t.Errorf("row %d: unknown case %q", i, c)
		}
	}
	// put and get at 1 and 2 clients, read4k at two offsets, one
	// concurrent-writes.
	want := map[string]int{"put": 2, "get": 2, "read4k": 2, "concurrent-writes": 1}
	for c, n := range want {
		if count[c] != n {
			t.Errorf("%d %s rows, want %d", count[c], c, n)
		}
	}
}
