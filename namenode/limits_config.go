package namenode

import (
	"time"

	"github.com/blockfs/blockfs/internal/node/serve"
	"github.com/blockfs/blockfs/namenode/reports"
)

// LimitsConfig bounds what one caller (a user, a datanode, a connection)
// may hold of the namenode, so that none can exhaust it for the others.
// Each refusal answers ResourceExhausted and is counted in /metrics
// (docs/OPERATIONS.md, "Limits").
type LimitsConfig struct {
	// Serve bounds the gRPC connections (streams, pings) and the HTTP
	// requests (header, idle and progress timeouts).
	Serve serve.Limits
	// ReportBytesPerDatanode and ReportBytesTotal bound the memory the
	// unfinished multi-part block reports hold (package reports), per
	// datanode and over all of them; a part past either drops that
	// datanode's report. ReportTTL drops a report not finished within it,
	// checked every ReportTTL/4 whether or not more parts arrive.
	ReportBytesPerDatanode int64
	ReportBytesTotal       int64
	ReportTTL              time.Duration
	// CompleteWaitsPerUser and CompleteWaitsTotal bound the Complete calls
	// waiting for replica reports (Namespace.MinReplication), per user and
	// in all; one past either is refused (minrepl.go).
	CompleteWaitsPerUser int
	CompleteWaitsTotal   int
}

// DefaultLimitsConfig returns the limits' defaults.
func DefaultLimitsConfig() LimitsConfig {
	rep := reports.DefaultLimits()
	return LimitsConfig{
		Serve:                  serve.DefaultLimits(),
		ReportBytesPerDatanode: rep.PerDatanode,
		ReportBytesTotal:       rep.Total,
		ReportTTL:              rep.TTL,
		CompleteWaitsPerUser:   64,
		CompleteWaitsTotal:     1024,
	}
}

// Validate reports the first problem with the limits section.
func (c *LimitsConfig) Validate() error {
	const op = "namenode.LimitsConfig.Validate"
	if err := c.Serve.Validate(op); err != nil {
		return err
	}
	switch {
	case c.ReportBytesPerDatanode <= 0 || c.ReportBytesTotal < c.ReportBytesPerDatanode:
		return badConfig(op, "report bytes: per datanode %d must be positive and at most the total %d", c.ReportBytesPerDatanode, c.ReportBytesTotal)
	case c.ReportTTL <= 0:
		return badConfig(op, "report ttl must be positive")
	case c.CompleteWaitsPerUser <= 0 || c.CompleteWaitsTotal < c.CompleteWaitsPerUser:
		return badConfig(op, "complete waits: per user %d must be positive and at most the total %d", c.CompleteWaitsPerUser, c.CompleteWaitsTotal)
	}
	return nil
}
