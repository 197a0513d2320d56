package namenode

import (
	"path"
	"time"

	"github.com/blockfs/blockfs/internal/base/ratelimit"
	"github.com/blockfs/blockfs/security"

	"github.com/blockfs/blockfs/internal/node/serve"
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
	// unfinished multi-part block reports hold (reportparts.go), per
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
	// WriteRatePerUser (calls/s; 0 = off) and WriteBurstPerUser are each
	// user's token bucket for the namespace-mutating RPCs (security.Rule
	// Write), tracked for at most WriteRateUsers users at once.
	WriteRatePerUser, WriteBurstPerUser, WriteRateUsers int
}

// DefaultLimitsConfig returns the limits' defaults.
func DefaultLimitsConfig() LimitsConfig {
	return LimitsConfig{
		Serve: serve.DefaultLimits(),
		// 256 MiB is about 1.4M replicas (191 B each held): a datanode
		// with more blocks than that is far past HDFS's advice.
		ReportBytesPerDatanode: 256 << 20,
		ReportBytesTotal:       1 << 30,
		ReportTTL:              10 * time.Minute,
		CompleteWaitsPerUser:   64,
		CompleteWaitsTotal:     1024,
		WriteRatePerUser:       1000,
		WriteBurstPerUser:      2000,
		WriteRateUsers:         100000,
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
	case c.WriteRatePerUser < 0 || c.WriteRatePerUser > 0 && (c.WriteBurstPerUser <= 0 || c.WriteRateUsers <= 0):
		return badConfig(op, "write rate %d/s must be >= 0, and when on its burst %d and users %d positive", c.WriteRatePerUser, c.WriteBurstPerUser, c.WriteRateUsers)
	}
	return nil
}

// admitWrite returns the authorizer's check of a user's write call: the
// per-user token bucket, its refusals counted by RPC.
func (n *Namenode) admitWrite(c LimitsConfig) func(security.Identity, string) error {
	l := ratelimit.New(ratelimit.Config{Rate: float64(c.WriteRatePerUser), Burst: c.WriteBurstPerUser, MaxKeys: c.WriteRateUsers})
	return func(id security.Identity, method string) error {
		err := l.Admit(id.Name, method)
		if err != nil {
			n.met.rateLimited.WithLabelValues(path.Base(method)).Inc()
		}
		return err
	}
}
