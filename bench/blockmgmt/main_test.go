package main

import (
	"context"
	"testing"
)

// TestPlacementRows: four cluster sizes, the first the ratios' base.
func TestPlacementRows(t *testing.T) {
	rows, err := runPlacement(2, 500)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 || rows[0].Datanodes != 10 || rows[3].Datanodes != 10000 || rows[0].Ratio != 1 {
		t.Fatalf("rows %+v", rows)
	}
	for _, r := range rows {
		if r.NsPerOp <= 0 || len(r.Runs) != 2 {
			t.Fatalf("row %+v", r)
		}
	}
}

// TestDecommissionSmoke: one small run measures put, get and a
// decommission that finishes.
func TestDecommissionSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	r, err := runDecommission(context.Background(), 1, 8<<20)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.DecomMBPS) != 1 || r.DecomMBPS[0] <= 0 || r.NodeBytes[0] <= 0 || r.Ratio <= 0 {
		t.Fatalf("row %+v", r)
	}
}

func TestVerdict(t *testing.T) {
	for _, c := range []struct {
		ratio, floor float64
		atMost       bool
		want         string
	}{{1.5, 2, true, "ok"}, {2.5, 2, true, "MISSED"}, {0.6, 0.5, false, "ok"}, {0.4, 0.5, false, "MISSED"}} {
		if got := verdict(c.ratio, c.floor, c.atMost); got != c.want {
			t.Errorf("verdict(%v, %v, %v) = %s", c.ratio, c.floor, c.atMost, got)
		}
	}
}
