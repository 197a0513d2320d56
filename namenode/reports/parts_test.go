package reports

import (
	"testing"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/blocks"
	"github.com/blockfs/blockfs/errs"
)

// TestReportParts: a multi-part full report is applied whole, once its
// last part arrives in order; anything else is refused and drops the
// report so the datanode starts again.
func TestReportParts(t *testing.T) {
	part := func(id uint64, i, n uint32, blockIDs ...uint64) (*api.BlockReportRequest, []blocks.Replica) {
		req := &api.BlockReportRequest{DatanodeId: "dn1", ReportId: id, Part: i, Parts: n}
		var rs []blocks.Replica
		for _, b := range blockIDs {
			req.Blocks = append(req.Blocks, &api.ReportedBlock{Block: &api.Block{Id: b, GenStamp: 1}})
			rs = append(rs, blocks.Replica{BlockID: b, GenStamp: 1})
		}
		return req, rs
	}
	type step struct {
		id      uint64
		i, n    uint32
		blocks  []uint64
		kind    errs.Kind // 0: accepted
		done    bool
		wantAll int
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"one request", []step{{0, 0, 0, []uint64{1, 2}, 0, true, 2}}},
		{"one part", []step{{9, 0, 1, []uint64{1}, 0, true, 1}}},
		{"three parts in order", []step{
			{7, 0, 3, []uint64{1, 2}, 0, false, 0},
			{7, 1, 3, []uint64{3}, 0, false, 0},
			{7, 2, 3, []uint64{4, 5}, 0, true, 5},
		}},
		{"a part skipped", []step{
			{7, 0, 3, []uint64{1}, 0, false, 0},
			{7, 2, 3, []uint64{3}, errs.Precondition, false, 0},
			{7, 1, 3, []uint64{2}, errs.Precondition, false, 0}, // dropped: start again
		}},
		{"another report's part", []step{
			{7, 0, 2, []uint64{1}, 0, false, 0},
			{8, 1, 2, []uint64{2}, errs.Precondition, false, 0},
		}},
		{"a new part 0 starts over", []step{
			{7, 0, 2, []uint64{1}, 0, false, 0},
			{8, 0, 2, []uint64{5}, 0, false, 0},
			{8, 1, 2, []uint64{6}, 0, true, 2},
		}},
		{"part past parts", []step{{7, 3, 2, nil, errs.Invalid, false, 0}}},
		{"too many parts", []step{{7, 0, maxReportParts + 1, nil, errs.Invalid, false, 0}}},
		{"a later part of a one-part report", []step{{7, 1, 1, nil, errs.Invalid, false, 0}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var p Parts
			for i, s := range c.steps {
				req, rs := part(s.id, s.i, s.n, s.blocks...)
				all, reported, done, err := p.Add("dn1", req, rs)
				if s.kind != 0 {
					if !errs.Is(err, s.kind) {
						t.Fatalf("step %d: %v, want %v", i, err, s.kind)
					}
					continue
				}
				if err != nil || done != s.done || len(all) != s.wantAll || len(reported) != s.wantAll {
					t.Fatalf("step %d: done %v, %d replicas, %d reported, %v", i, done, len(all), len(reported), err)
				}
			}
		})
	}
}
