package namenode

import (
	"sync"
	"time"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/blocks"
	"github.com/blockfs/blockfs/errs"
)

// A datanode whose full block report does not fit one request (the
// namenode's MaxRequestSize: 300k replicas make about 6 MB) sends it in
// parts under one report id. The namenode keeps the parts of at most one
// report per datanode and applies the whole report, as one FullReport,
// when the last part arrives: a report applied part by part would make the
// replicas of the later parts look deleted in between.

// Bounds of a multi-part report.
const (
	maxReportParts  = 4096
	maxReportBlocks = 100 << 20
	// reportPartsTTL bounds how long an unfinished report is kept.
	reportPartsTTL = 10 * time.Minute
)

// reportParts holds the unfinished multi-part reports, one per datanode.
// It is not on a hot path: a datanode sends a full report at registration
// and every few hours.
type reportParts struct {
	mu      sync.Mutex
	pending map[string]*partialReport
}

type partialReport struct {
	started     time.Time
	id          uint64
	next, parts uint32
	replicas    []blocks.Replica
	reported    []*api.ReportedBlock
}

// add takes one part of datanode dn's report. It returns the whole report
// once its last part has arrived (done true), or done false while parts
// are missing. A part out of order, of another report than the one under
// way (other than a new part 0, which starts over), or past the bounds is
// an error that drops the report: the datanode starts again at part 0.
func (p *reportParts) add(dn string, req *api.BlockReportRequest, rs []blocks.Replica) (all []blocks.Replica, reported []*api.ReportedBlock, done bool, err error) {
	const op = "BlockReport"
	parts, part := req.GetParts(), req.GetPart()
	if parts <= 1 {
		if part != 0 {
			return nil, nil, false, errs.Newf(errs.Invalid, op, "", "part %d of a one-part report", part)
		}
		return rs, req.Blocks, true, nil
	}
	if parts > maxReportParts || part >= parts {
		return nil, nil, false, errs.Newf(errs.Invalid, op, "", "part %d of %d: want parts <= %d and part < parts", part, parts, maxReportParts)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending == nil {
		p.pending = map[string]*partialReport{}
	}
	// A datanode that died between parts never finishes its report: drop
	// what any datanode left unfinished for longer than reportPartsTTL.
	now := time.Now()
	for k, r := range p.pending {
		if now.Sub(r.started) > reportPartsTTL {
			delete(p.pending, k)
		}
	}
	r := p.pending[dn]
	if part == 0 {
		r = &partialReport{started: now, id: req.GetReportId(), parts: parts}
		p.pending[dn] = r
	}
	if r == nil || r.id != req.GetReportId() || r.parts != parts || r.next != part {
		delete(p.pending, dn)
		return nil, nil, false, errs.Newf(errs.Precondition, op, "", "part %d of report %d from %s is out of order; send the report again from part 0", part, req.GetReportId(), dn)
	}
	if len(r.replicas)+len(rs) > maxReportBlocks {
		delete(p.pending, dn)
		return nil, nil, false, errs.Newf(errs.Invalid, op, "", "report %d from %s names more than %d replicas", r.id, dn, maxReportBlocks)
	}
	r.replicas = append(r.replicas, rs...)
	r.reported = append(r.reported, req.Blocks...)
	r.next++
	if r.next < r.parts {
		return nil, nil, false, nil
	}
	delete(p.pending, dn)
	return r.replicas, r.reported, true, nil
}
