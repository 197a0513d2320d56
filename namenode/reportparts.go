package namenode

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
// total (LimitsConfig.ReportBytes*): a part past either is refused with
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

// reportParts holds the unfinished multi-part reports, one per datanode.
// It is not on a hot path: a datanode sends a full report at registration
// and every few hours. The zero value applies DefaultLimitsConfig's bounds
// and counts no refusal.
type reportParts struct {
	// perDN, total and ttl are the bounds (LimitsConfig); refused, if set,
	// counts a refusal by limit name.
	perDN, total int64
	ttl          time.Duration
	refused      func(limit string)

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

// newReportParts returns the report collector under lim.
func newReportParts(lim LimitsConfig, refused func(string)) reportParts {
	return reportParts{perDN: lim.ReportBytesPerDatanode, total: lim.ReportBytesTotal, ttl: lim.ReportTTL, refused: refused}
}

// bounds returns p's limits, the defaults for a zero p.
func (p *reportParts) bounds() (perDN, total int64, ttl time.Duration) {
	if p.perDN == 0 {
		d := DefaultLimitsConfig()
		return d.ReportBytesPerDatanode, d.ReportBytesTotal, d.ReportTTL
	}
	return p.perDN, p.total, p.ttl
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

// reap drops the reports unfinished for longer than the TTL, as of now: a
// datanode that died between parts never finishes its report.
func (p *reportParts) reap(now time.Time) {
	_, _, ttl := p.bounds()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reapLocked(now, ttl)
}

func (p *reportParts) reapLocked(now time.Time, ttl time.Duration) {
	for dn, r := range p.pending {
		if now.Sub(r.started) > ttl {
			p.dropLocked(dn)
		}
	}
}

// dropLocked forgets dn's pending report, if any.
func (p *reportParts) dropLocked(dn string) {
	if r := p.pending[dn]; r != nil {
		p.held -= r.bytes
		delete(p.pending, dn)
	}
}

// heldBytes returns the bytes the pending reports hold, and how many
// there are.
func (p *reportParts) heldBytes() (int64, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held, len(p.pending)
}

// reapReportsLoop drops expired unfinished reports every quarter TTL
// until the namenode stops, whether or not more reports arrive.
func (n *Namenode) reapReportsLoop() {
	defer n.wg.Done()
	t := time.NewTicker(n.cfg.Limits.ReportTTL / 4)
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case now := <-t.C:
			n.reportParts.reap(now)
		}
	}
}

func (p *reportParts) refuse(limit string) {
	if p.refused != nil {
		p.refused(limit)
	}
}
