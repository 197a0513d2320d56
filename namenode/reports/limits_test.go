package reports

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/blocks"
	"github.com/blockfs/blockfs/errs"
)

// TestReportPartsBounded: an unfinished report past its datanode's byte
// bound, or past the total, is refused with ResourceExhausted, counted,
// and dropped (its bytes released), while another datanode's report goes
// through; reap drops a report past its TTL without any new part.
func TestReportPartsBounded(t *testing.T) {
	part := func(dn string, id uint64, i, n uint32, count int) (*api.BlockReportRequest, []blocks.Replica) {
		req := &api.BlockReportRequest{DatanodeId: dn, ReportId: id, Part: i, Parts: n}
		rs := make([]blocks.Replica, count)
		for j := range rs {
			b := uint64(i)*1000 + uint64(j) + 1
			req.Blocks = append(req.Blocks, &api.ReportedBlock{Block: &api.Block{Id: b, GenStamp: 1}})
			rs[j] = blocks.Replica{BlockID: b, GenStamp: 1}
		}
		return req, rs
	}
	refused := map[string]int{}
	// One 10-replica part fits a datanode's bound, two do not; the total
	// holds three parts.
	req, _ := part("x", 1, 0, 2, 10)
	one := replicaBytes*10 + int64(proto.Size(req))
	p := NewParts(Limits{PerDatanode: one + one/2, Total: 3*one + one/2, TTL: time.Hour},
		func(l string) { refused[l]++ })

	add := func(dn string, id uint64, i, n uint32) error {
		req, rs := part(dn, id, i, n, 10)
		_, _, _, err := p.Add(dn, req, rs)
		return err
	}
	if err := add("dn1", 1, 0, 3); err != nil {
		t.Fatal(err)
	}
	if err := add("dn1", 1, 1, 3); errs.KindOf(err) != errs.Exhausted {
		t.Fatalf("second part past the datanode's bound: %v, want Exhausted", err)
	}
	if refused["report_bytes_per_datanode"] != 1 {
		t.Fatalf("refusals %v", refused)
	}
	if held, n := p.Held(); held != 0 || n != 0 {
		t.Fatalf("after the refusal %d bytes in %d reports are held, want none", held, n)
	}
	// Three datanodes fill the total; a fourth is refused; the others'
	// reports still finish.
	for _, dn := range []string{"dn1", "dn2", "dn3"} {
		if err := add(dn, 2, 0, 2); err != nil {
			t.Fatal(dn, err)
		}
	}
	if err := add("dn4", 2, 0, 2); errs.KindOf(err) != errs.Exhausted || refused["report_bytes_total"] != 1 {
		t.Fatalf("past the total: %v, refusals %v", err, refused)
	}
	req, rs := part("dn2", 2, 1, 2, 1)
	if all, _, done, err := p.Add("dn2", req, rs); err != nil || !done || len(all) != 11 {
		t.Fatalf("dn2's report: done %v, %d replicas, %v", done, len(all), err)
	}
	// Reaping as of an hour later drops the rest, with no part arriving.
	p.Reap(time.Now().Add(2 * time.Hour))
	if held, n := p.Held(); held != 0 || n != 0 {
		t.Fatalf("after reap %d bytes in %d reports are held, want none", held, n)
	}
}
