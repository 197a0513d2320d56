package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSoakSmoke runs a 5-second soak.
func TestSoakSmoke(t *testing.T) {
	var out bytes.Buffer
	rep, err := Run(context.Background(), Config{Duration: 5 * time.Second, Seed: 1, Workers: 2, JSON: filepath.Join(t.TempDir(), "soak.json")}, &out)
	t.Log(out.String())
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "anomalies: ") {
		t.Errorf("last line %q", last)
	}
	if rep.Ops == 0 || rep.HistoriesChecked == 0 {
		t.Errorf("ops %d, histories %d", rep.Ops, rep.HistoriesChecked)
	}
	if len(rep.Anomalies) > 0 || len(rep.LostWrites) > 0 {
		t.Errorf("anomalies %v, lost %v", rep.Anomalies, rep.LostWrites)
	}
}
