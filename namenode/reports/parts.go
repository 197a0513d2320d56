// Package reports assembles the datanodes' multi-part block reports for the
// namenode, within bounds in bytes per datanode and in total, and drops the
// reports a datanode never finishes.
package reports

import (
	"sync"
	"time"
	"unsafe"

	"google.golang.org/protobuf/proto"

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
//
// What the unfinished reports hold is bounded in bytes, per datanode and in
// total (Limits): a part past either is refused with
// ResourceExhausted and drops that datanode's report, so a datanode that
// never finishes one pins at most its share. A report not finished within
// ReportTTL is dropped by reap, which the namenode runs on a timer.

// Bounds of a multi-part report.
const (
	maxReportParts  = 4096
	maxReportBlocks = 100 << 20
)

// replicaBytes is what one blocks.Replica takes in a pending report.
const replicaBytes = int64(unsafe.Sizeof(blocks.Replica{}))

// Limits bounds the unfinished reports: the bytes one datanode's may
// hold, the bytes all of them may hold, and how long one may stay
// unfinished.
type Limits struct {
	PerDatanode, Total int64
	TTL                time.Duration
}

// DefaultLimits returns the namenode's default bounds.
func DefaultLimits() Limits {
	// 256 MiB is about 1.4M replicas (191 B each held): a datanode with
	// more blocks than that is far past HDFS's advice.
	return Limits{PerDatanode: 256 << 20, Total: 1 << 30, TTL: 10 * time.Minute}
}

// Parts holds the unfinished multi-part reports, one per datanode. It is
// not on a hot path: a datanode sends a full report at registration and
// every few hours. The zero value applies DefaultLimits and counts no
// refusal; it is safe for concurrent use.
type Parts struct {
	// lim is the bounds; refused, if set, counts a refusal by limit name.
	lim     Limits
	refused func(limit string)

	mu      sync.Mutex
	pending map[string]*partialReport
	held    int64 // bytes of all pending reports
}

type partialReport struct {
	started     time.Time
	id          uint64
	next, parts uint32
	replicas    []blocks.Replica
	reported    []*api.ReportedBlock
	bytes       int64
}

// NewParts returns a report collector under lim; refused, if not nil, is
// called with the limit's name at each refusal.
func NewParts(lim Limits, refused func(limit string)) *Parts {
	return &Parts{lim: lim, refused: refused}
}

// bounds returns p's limits, the defaults for a zero p.
func (p *Parts) bounds() (perDN, total int64, ttl time.Duration) {
	l := p.lim
	if l.PerDatanode == 0 {
		l = DefaultLimits()
	}
	return l.PerDatanode, l.Total, l.TTL
}

// Add takes one part of datanode dn's report. It returns the whole report
// once its last part has arrived (done true), or done false while parts
// are missing. A part out of order, of another report than the one under
// way (other than a new part 0, which starts over), or past the bounds is
// an error that drops the report: the datanode starts again at part 0.
func (p *Parts) Add(dn string, req *api.BlockReportRequest, rs []blocks.Replica) (all []blocks.Replica, reported []*api.ReportedBlock, done bool, err error) {
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
	perDN, total, ttl := p.bounds()
	size := replicaBytes*int64(len(rs)) + int64(proto.Size(req))
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending == nil {
		p.pending = map[string]*partialReport{}
	}
	now := time.Now()
	p.reapLocked(now, ttl)
	r := p.pending[dn]
	if part == 0 {
		p.dropLocked(dn)
		r = &partialReport{started: now, id: req.GetReportId(), parts: parts}
		p.pending[dn] = r
	}
	if r == nil || r.id != req.GetReportId() || r.parts != parts || r.next != part {
		p.dropLocked(dn)
		return nil, nil, false, errs.Newf(errs.Precondition, op, "", "part %d of report %d from %s is out of order; send the report again from part 0", part, req.GetReportId(), dn)
	}
	if len(r.replicas)+len(rs) > maxReportBlocks {
		p.dropLocked(dn)
		return nil, nil, false, errs.Newf(errs.Invalid, op, "", "report %d from %s names more than %d replicas", r.id, dn, maxReportBlocks)
	}
	if r.bytes+size > perDN {
		p.dropLocked(dn)
		p.refuse("report_bytes_per_datanode")
		return nil, nil, false, errs.Newf(errs.Exhausted, op, "", "report %d from %s would hold more than %d bytes (--report-bytes-per-datanode); send a smaller report", r.id, dn, perDN)
	}
	if p.held+size > total {
		p.dropLocked(dn)
		p.refuse("report_bytes_total")
		return nil, nil, false, errs.Newf(errs.Exhausted, op, "", "unfinished block reports would hold more than %d bytes (--report-bytes-total); retry from part 0 later", total)
	}
	r.replicas = append(r.replicas, rs...)
	r.reported = append(r.reported, req.Blocks...)
	r.bytes += size
	p.held += size
	r.next++
	if r.next < r.parts {
		return nil, nil, false, nil
	}
	p.dropLocked(dn)
	return r.replicas, r.reported, true, nil
}

// Reap drops the reports unfinished for longer than the TTL, as of now: a
// datanode that died between parts never finishes its report.
func (p *Parts) Reap(now time.Time) {
	_, _, ttl := p.bounds()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reapLocked(now, ttl)
}

func (p *Parts) reapLocked(now time.Time, ttl time.Duration) {
	for dn, r := range p.pending {
		if now.Sub(r.started) > ttl {
			p.dropLocked(dn)
		}
	}
}

// dropLocked forgets dn's pending report, if any.
func (p *Parts) dropLocked(dn string) {
	if r := p.pending[dn]; r != nil {
		p.held -= r.bytes
		delete(p.pending, dn)
	}
}

// Held returns the bytes the pending reports hold, and how many
// there are.
func (p *Parts) Held() (int64, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held, len(p.pending)
}

func (p *Parts) refuse(limit string) {
	if p.refused != nil {
		p.refused(limit)
	}
}
